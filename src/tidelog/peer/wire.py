"""The client side of Kafka's wire conversation, sans-IO: what every Tidelog client shares.

* :class:`Conversation`: request frames with the next correlation id (or one given), the requests
  awaiting an answer, and each response frame matched to its request (a frame whose correlation id
  no request has is :class:`UnexpectedResponse`: the connection is out of step);
* :func:`sasl_exchange`: SaslHandshake then SaslAuthenticate rounds (PLAIN, SCRAM) as a generator of
  requests that is sent each response; a refusal is :class:`SaslRefused` with what the broker said;
* :class:`Security`: the transport of a connection (protocol, TLS context, SASL mechanism and
  credentials; the password never in ``repr``).

The transports (asyncio in :mod:`tidelog.peer.connection`, blocking sockets in the CLI and the tests'
wire client) only move the bytes. Pure: no I/O.
"""

from __future__ import annotations

import itertools
import ssl
import struct
from collections.abc import Generator
from dataclasses import dataclass, field

from tidelog.errors import ErrorCode
from tidelog.protocol import decode_response, encode_request
from tidelog.protocol.message import Message
from tidelog.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from tidelog.security.sasl_client import sasl_client
from tidelog.security.scram import AuthenticationError

SIZE = struct.Struct(">i")
#: The largest response frame a client accepts (a size beyond it means the stream is out of step).
MAX_RESPONSE_BYTES = 256 * 1024 * 1024


class UnexpectedResponse(ConnectionError):
    """A response whose correlation id matches no request in flight."""


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


@dataclass(frozen=True, slots=True)
class Security:
    """How a connection is secured: ``protocol`` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), the TLS
    context (SSL protocols), the SASL mechanism and credentials (SASL protocols). ``listener``: the
    listener connected to, for messages (brokers' connections to each other)."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    listener: str | None = None

    def describe(self) -> str:
        """For the log (no secrets)."""
        text = f"inter-broker listener {self.listener} ({self.protocol}" if self.listener else f"{self.protocol}"
        if self.mechanism:
            text += f", SASL {self.mechanism} as {self.username}"
        return text + ")" if self.listener else text


PLAINTEXT = Security()


class Conversation:
    """Requests out, responses matched to them, for one connection. Not thread-safe."""

    def __init__(self, client_id: str | None) -> None:
        self.client_id = client_id
        self._ids = itertools.count(1)
        #: correlation id -> (api key, version) of each request awaiting its response
        self.in_flight: dict[int, tuple[int, int]] = {}

    def request(self, body: Message, version: int, correlation_id: int | None = None) -> tuple[int, bytes]:
        """(correlation id, the size-prefixed frame to send) of ``body`` at ``version``."""
        assert body.API_KEY is not None
        corr = next(self._ids) if correlation_id is None else correlation_id
        payload = encode_request(body, version, corr, self.client_id)
        self.in_flight[corr] = (body.API_KEY, version)
        return corr, SIZE.pack(len(payload)) + payload

    @staticmethod
    def frame_size(prefix: bytes) -> int:
        """The size of the frame a 4-byte prefix announces; ConnectionError when it cannot be one."""
        (size,) = SIZE.unpack(prefix)
        if not 4 <= size <= MAX_RESPONSE_BYTES:
            raise ConnectionError(f"a response frame of {size} bytes")
        return size

    def answered(self, frame: bytes) -> tuple[int, int, int]:
        """(correlation id, api key, version) of the request a response frame (without its size)
        answers; the request is no longer in flight. UnexpectedResponse when none is."""
        if len(frame) < 4:
            raise UnexpectedResponse(f"a response frame of {len(frame)} bytes")
        (corr,) = SIZE.unpack_from(frame, 0)
        expected = self.in_flight.pop(corr, None)
        if expected is None:
            raise UnexpectedResponse(f"a response to correlation id {corr}, which no request in flight has")
        return corr, *expected

    def response(self, frame: bytes) -> tuple[int, Message]:
        """(correlation id, decoded body) of a response frame (without its size)."""
        _, api_key, version = self.answered(frame)
        return decode_response(frame, api_key, version)


class SaslRefused(Exception):
    """The broker refused the SASL exchange: at the ``handshake`` (with the mechanisms it enables) or
    at ``authenticate`` (with its error code and message), or the client refused the broker's answer
    (``client``: a SCRAM server signature that does not verify)."""

    def __init__(self, stage: str, mechanism: str, username: str, error_code: int = 0, message: str | None = None,
                 enabled: tuple[str, ...] = ()) -> None:
        self.stage, self.mechanism, self.username = stage, mechanism, username
        self.error_code, self.message, self.enabled = error_code, message, enabled
        super().__init__(f"SASL {mechanism} {stage} as {username}: {error_name(error_code)}: {message}")

    def explain(self, where: str = "") -> str:
        """The refusal as an operator reads it, the same from every client (the CLI's connection, the
        broker-to-broker client); never a secret. ``where`` follows the mechanism or the user in it
        (" at 127.0.0.1:9092", " on listener INTERNAL")."""
        if self.stage == "handshake":
            return (f"SaslHandshake for {self.mechanism}{where} answered {error_name(self.error_code)} "
                    f"(enabled there: {', '.join(self.enabled) or 'none'})")
        failed = f"SASL {self.mechanism} authentication as {self.username}{where} failed"
        if self.stage == "authenticate":
            return f"{failed}: {error_name(self.error_code)}" + (f": {self.message}" if self.message else "")
        return f"{failed}: {self.message}"


def sasl_exchange(mechanism: str, username: str, password: str,
                  tokenauth: bool = False) -> Generator[Message, Message, None]:
    """The SASL conversation of a client: yields SaslHandshake, then SaslAuthenticate requests; send
    each and pass its decoded response back (``generator.send``). Raises :class:`SaslRefused`.
    ``tokenauth``: SCRAM with a delegation token (user: the token id, password: its HMAC in base64)."""
    handshake = yield SaslHandshakeRequest(mechanism=mechanism)
    if handshake.error_code:
        raise SaslRefused("handshake", mechanism, username, handshake.error_code,
                          enabled=tuple(handshake.mechanisms or ()))
    client = sasl_client(mechanism, username, password, tokenauth)
    reply = b""
    try:
        while (token := client.step(reply)) is not None:
            response = yield SaslAuthenticateRequest(auth_bytes=token)
            if response.error_code:
                raise SaslRefused("authenticate", mechanism, username, response.error_code, response.error_message)
            reply = response.auth_bytes
    except AuthenticationError as e:
        raise SaslRefused("client", mechanism, username, message=str(e)) from None


__all__ = ["MAX_RESPONSE_BYTES", "PLAINTEXT", "SIZE", "Conversation", "SaslRefused", "Security", "UnexpectedResponse",
           "error_name", "sasl_exchange"]
