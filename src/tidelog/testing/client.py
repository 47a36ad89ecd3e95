"""A small blocking Kafka wire client on Tidelog's own codec, for tests that need exact versions.

Real clients choose their own request versions; this one sends the body you build, in the version
you name, and decodes the answer with :func:`tidelog.protocol.decode_response` (framing and correlation
ids are :class:`tidelog.peer.wire.Conversation`'s, as in every Tidelog client)::

    with WireClient.connect(broker.bootstrap) as client:
        response = client.request(ApiVersionsRequest(), 0)

:meth:`WireClient.authenticate` runs SaslHandshake and SaslAuthenticate (v1) on a SASL listener. It can also send raw bytes (malformed frames) and tell whether the broker closed the connection.
Blocking sockets with a timeout; one thread at a time (not thread-safe).
"""

from __future__ import annotations

import socket
import struct

from tidelog.peer.wire import SIZE as _SIZE
from tidelog.peer.wire import Conversation, UnexpectedResponse, sasl_exchange
from tidelog.protocol import decode_response
from tidelog.protocol.message import Message


class ConnectionClosed(Exception):
    """The broker closed the connection (EOF or reset)."""


class WireClient:
    def __init__(self, sock: socket.socket, client_id: str | None = "tidelog-test") -> None:
        self.sock = sock
        self.client_id = client_id
        self._conversation = Conversation(client_id)

    @classmethod
    def connect(cls, bootstrap: str, *, timeout: float = 10.0, client_id: str | None = "tidelog-test",
                source_host: str | None = None) -> WireClient:
        """``source_host``: the local address to connect from (e.g. another loopback address, 127.0.0.2,
        so that the broker sees another client host)."""
        host, _, port = bootstrap.rpartition(":")
        sock = socket.create_connection((host, int(port)), timeout=timeout,
                                        source_address=(source_host, 0) if source_host else None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock, client_id)

    # ---------------------------------------------------------------------------------- sending

    def send(self, body: Message, version: int, *, correlation_id: int | None = None) -> int:
        """Send one request; returns its correlation id (the response is read with :meth:`receive`)."""
        corr, data = self._conversation.request(body, version, correlation_id)
        self.send_raw(data)
        return corr

    def send_raw(self, data: bytes) -> None:
        """Send bytes as they are (a frame you built, or garbage)."""
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as e:
            raise ConnectionClosed(str(e)) from None

    # -------------------------------------------------------------------------------- receiving

    def _read_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            try:
                chunk = self.sock.recv(min(n, 1 << 20))
            except ConnectionResetError as e:
                raise ConnectionClosed(str(e)) from None
            if not chunk:
                raise ConnectionClosed("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def receive_frame(self) -> bytes:
        """The next response frame, without its size prefix."""
        (size,) = _SIZE.unpack(self._read_exactly(4))
        return self._read_exactly(size)

    def receive(self, api_key: int | None = None, version: int | None = None) -> tuple[int, Message]:
        """(correlation id, body) of the next response. The API and version are those of the request
        with that correlation id unless given (the broker answers in order, so they can be)."""
        frame = self.receive_frame()
        (corr,) = struct.unpack_from(">i", frame, 0)
        try:
            _, expected_key, expected_version = self._conversation.answered(frame)
        except UnexpectedResponse:
            if api_key is None or version is None:
                raise AssertionError(f"response with unexpected correlation id {corr}") from None
        else:
            if api_key is None or version is None:
                api_key, version = expected_key, expected_version
        return decode_response(frame, api_key, version)

    def request(self, body: Message, version: int) -> Message:
        """Send and wait for the answer; checks the correlation id."""
        corr = self.send(body, version)
        got, response = self.receive()
        if got != corr:
            raise AssertionError(f"expected the response to correlation id {corr}, got {got}")
        return response

    def authenticate(self, mechanism: str, username: str, password: str, *, tokenauth: bool = False) -> None:
        """SASL authentication (SaslHandshake v1, SaslAuthenticate v1); raises
        :class:`~tidelog.peer.wire.SaslRefused` when the broker refuses. ``tokenauth``: SCRAM with a delegation
        token (``username``: the token id, ``password``: its HMAC in base64)."""
        exchange = sasl_exchange(mechanism, username, password, tokenauth=tokenauth)
        try:
            request = next(exchange)
            while True:
                request = exchange.send(self.request(request, 1))
        except StopIteration:
            return

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """Whether the broker closes the connection within ``timeout`` seconds (data read is dropped)."""
        previous = self.sock.gettimeout()
        self.sock.settimeout(timeout)
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
        finally:
            self.sock.settimeout(previous)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ConnectionClosed", "WireClient"]
