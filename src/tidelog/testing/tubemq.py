"""A small blocking TubeMQ client on Tidelog's TubeMQ codec, for tests and benchmarks.

It speaks TubeMQ's RPC as the real clients do (framing, the three delimited protobufs, serial
numbers), one request at a time or pipelined, and can send raw bytes (hostile frames)::

    master, broker = tubemq_endpoints(broker_process)
    with TubeWireClient.connect(master) as client:
        response = client.request(Service.MASTER, Method.PRODUCER_REGISTER_P2M, RegisterRequestP2M(...))

:func:`tubemq_endpoints` finds the TubeMQ listeners of a :class:`~tidelog.testing.BrokerProcess`
started with ``tubemq.master.listener`` / ``tubemq.broker.listener`` (port 0 picks free ports) in
the lines its log prints. Blocking sockets with a timeout; not thread-safe.
"""

from __future__ import annotations

import itertools
import re
import socket
import time
from collections.abc import Iterable
from typing import Any

from google.protobuf.message import Message

from tidelog.protocol.tubemq.frame import FrameDecoder
from tidelog.protocol.tubemq.rpc import (
    METHODS,
    RpcResponse,
    Status,
    decode_response,
    encode_request,
    parse_message,
)
from tidelog.testing.broker import BrokerProcess

_LISTENING = re.compile(r"TubeMQ (master|broker) service listening on (\S+):(\d+)")
#: Overrides that turn a test broker's TubeMQ listeners on, on free ports.
TUBEMQ_OVERRIDES = {"tubemq.master.listener": "127.0.0.1:0", "tubemq.broker.listener": "127.0.0.1:0"}


class ConnectionClosed(Exception):
    """The broker closed the connection."""


class TubeRpcError(Exception):
    """The broker answered with an exception body."""

    def __init__(self, response: RpcResponse) -> None:
        super().__init__(f"{response.exception_name}: {response.stack_trace}")
        self.response = response


def tubemq_endpoints(broker: BrokerProcess, timeout: float = 10.0) -> tuple[str, str]:
    """``("host:port" of the master service, "host:port" of the broker service)`` of a running broker."""
    deadline = time.monotonic() + timeout
    while True:
        found = {m.group(1): f"{m.group(2)}:{m.group(3)}" for m in _LISTENING.finditer(broker.stderr_text())}
        if len(found) == 2:
            return found["master"], found["broker"]
        if time.monotonic() > deadline:
            raise RuntimeError("the broker logged no TubeMQ listeners (start it with TUBEMQ_OVERRIDES)")
        time.sleep(0.02)


class TubeWireClient:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.decoder = FrameDecoder()
        self._serials = itertools.count(1)
        self._ready: dict[int, RpcResponse] = {}

    @classmethod
    def connect(cls, address: str, *, timeout: float = 10.0) -> TubeWireClient:
        host, _, port = address.rpartition(":")
        sock = socket.create_connection((host, int(port)), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> TubeWireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------------------- requests

    def send(self, service: int, method: int, request: Message | bytes, *, protocol_version: int = 3) -> int:
        """Send one request; returns its serial number."""
        serial = next(self._serials)
        self.sock.sendall(encode_request(serial, service, method, request, protocol_version=protocol_version))
        return serial

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self, serial: int) -> RpcResponse:
        """The response to request ``serial`` (others that arrive first are kept)."""
        while serial not in self._ready:
            data = self.sock.recv(1 << 16)
            if not data:
                raise ConnectionClosed("the broker closed the connection")
            for frame in self.decoder.feed(data):
                self._ready[frame.serial_no] = decode_response(frame)
        return self._ready.pop(serial)

    def call(self, service: int, method: int, request: Message | bytes, **options: Any) -> RpcResponse:
        return self.receive(self.send(service, method, request, **options))

    def request(self, service: int, method: int, request: Message | bytes, **options: Any) -> Any:
        """The decoded inner response; TubeRpcError for an exception body."""
        response = self.call(service, method, request, **options)
        if response.status != Status.SUCCESS:
            raise TubeRpcError(response)
        return parse_message(METHODS[method].response, response.data or b"")

    def pipeline(self, service: int, method: int, requests: Iterable[Message | bytes]) -> list[Any]:
        """Send every request before reading any answer; the decoded responses in request order."""
        serials = [self.send(service, method, r) for r in requests]
        out = []
        for serial in serials:
            response = self.receive(serial)
            if response.status != Status.SUCCESS:
                raise TubeRpcError(response)
            out.append(parse_message(METHODS[method].response, response.data or b""))
        return out

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """Whether the broker closes the connection within ``timeout`` (reading and dropping what comes)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                if not self.sock.recv(1 << 16):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False


__all__ = ["TUBEMQ_OVERRIDES", "ConnectionClosed", "TubeRpcError", "TubeWireClient", "tubemq_endpoints"]
