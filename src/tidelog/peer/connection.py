"""One asyncio connection to one Kafka broker: TLS and SASL at opening, then pipelined requests.

:meth:`PeerConnection.open` connects, does the TLS handshake (SSL protocols) and the SASL exchange
(SaslHandshake v1, SaslAuthenticate v2) and raises :class:`PeerRefusedError` with the reason when the
broker refuses (a certificate that does not verify, a mechanism it does not enable, bad credentials;
never a secret in the message). :meth:`PeerConnection.request` then writes a request at once, however
many are in flight (the broker answers in order), and returns its decoded response: a reader task
matches each response to its request by correlation id (:class:`~tidelog.peer.wire.Conversation`).
A request that is not answered within its timeout raises TimeoutError and closes the connection (as
Kafka's ``NetworkClient`` does: the stream is no longer known to be in step); a lost connection fails
every request in flight with ConnectionError. The timeouts (opening, each request) are counted on the
injected :class:`~tidelog.clock.Clock`, so a test's ManualClock makes them pass at once. Loop-only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from typing import Any

from tidelog.clock import Clock, SystemClock, within
from tidelog.peer.wire import PLAINTEXT, Conversation, SaslRefused, Security, sasl_exchange
from tidelog.protocol import ApiKey, decode_response
from tidelog.protocol.message import Message

log = logging.getLogger(__name__)

_HANDSHAKE_VERSION = 1
_AUTHENTICATE_VERSION = 2


class PeerRefusedError(ConnectionError):
    """The other broker refused this one (TLS or SASL authentication failed): the message says why."""


class PeerConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str,
                 address: str, clock: Clock | None = None) -> None:
        self.address = address
        self._clock = clock or SystemClock()
        self._reader, self._writer = reader, writer
        self._conversation = Conversation(client_id)
        self._waiting: dict[int, asyncio.Future] = {}
        self._task: asyncio.Task | None = None
        self.closed: BaseException | None = None  # why, once closed

    @classmethod
    async def open(cls, host: str, port: int, client_id: str, security: Security = PLAINTEXT,
                   timeout_s: float = 30.0, clock: Clock | None = None) -> PeerConnection:
        """Connect, secure and authenticate within ``timeout_s`` of ``clock`` (TimeoutError);
        PeerRefusedError, OSError."""
        clock = clock or SystemClock()
        return await within(clock, timeout_s * 1000, cls._open(host, port, client_id, security, clock))

    @classmethod
    async def _open(cls, host: str, port: int, client_id: str, security: Security, clock: Clock) -> PeerConnection:
        where = f"{host}:{port}" + (f" (listener {security.listener})" if security.listener else "")
        try:
            reader, writer = await asyncio.open_connection(
                host, port, ssl=security.ssl_context, server_hostname=host if security.ssl_context else None)
        except ssl.SSLError as e:
            raise PeerRefusedError(f"TLS handshake with {where} failed: {e.reason or e}") from None
        connection = cls(reader, writer, client_id, f"{host}:{port}", clock)
        try:
            if security.mechanism is not None:
                await connection._authenticate(security)
            connection._task = asyncio.ensure_future(connection._read_responses())
        except BaseException:
            connection.close()
            raise
        return connection

    async def _authenticate(self, security: Security) -> None:
        assert security.mechanism is not None and security.username is not None and security.password is not None
        exchange = sasl_exchange(security.mechanism, security.username, security.password)
        try:
            request = next(exchange)
            while True:
                version = _HANDSHAKE_VERSION if request.API_KEY == ApiKey.SASL_HANDSHAKE else _AUTHENTICATE_VERSION
                _, data = self._conversation.request(request, version)
                self._writer.write(data)
                await self._writer.drain()
                request = exchange.send(await self._read_one())
        except StopIteration:
            return
        except SaslRefused as e:
            raise PeerRefusedError(e.explain(f" on listener {security.listener}" if security.listener else "")) from None

    async def _read_one(self) -> Message:
        size = self._conversation.frame_size(await self._reader.readexactly(4))
        return self._conversation.response(await self._reader.readexactly(size))[1]

    async def _read_responses(self) -> None:
        try:
            while True:
                size = self._conversation.frame_size(await self._reader.readexactly(4))
                frame = await self._reader.readexactly(size)
                corr, api_key, version = self._conversation.answered(frame)
                waiter = self._waiting.pop(corr, None)
                if waiter is not None and not waiter.done():
                    try:
                        waiter.set_result(decode_response(frame, api_key, version)[1])
                    except Exception as e:  # a response this codec cannot read fails its request only
                        waiter.set_exception(ConnectionError(f"cannot decode the response from {self.address}: {e!r}"))
        except asyncio.CancelledError:
            raise
        except asyncio.IncompleteReadError:
            self._fail(ConnectionError(f"{self.address} closed the connection"))
        except (OSError, ConnectionError) as e:
            self._fail(e if isinstance(e, ConnectionError) else ConnectionError(f"{self.address}: {e!r}"))

    async def request(self, body: Any, version: int, timeout_s: float) -> Any:
        """Send ``body`` at ``version`` and return the decoded response (see the module)."""
        if self.closed is not None:
            raise ConnectionError(f"the connection to {self.address} is closed ({self.closed})")
        corr, data = self._conversation.request(body, version)
        waiter: asyncio.Future = asyncio.get_running_loop().create_future()
        self._waiting[corr] = waiter

        async def exchange() -> Any:
            self._writer.write(data)
            await self._writer.drain()
            return await waiter

        try:
            return await within(self._clock, timeout_s * 1000, exchange())
        except TimeoutError:
            self._fail(TimeoutError(f"request {corr} to {self.address} timed out"))
            raise TimeoutError(f"{self.address} did not answer within {timeout_s:g} s") from None
        except (OSError, ConnectionError) as e:
            self._fail(e)
            raise
        finally:
            self._waiting.pop(corr, None)

    @property
    def in_flight(self) -> int:
        return len(self._waiting)

    def _fail(self, reason: BaseException) -> None:
        if self.closed is None:
            self.closed = reason
        for waiter in self._waiting.values():
            if not waiter.done():
                waiter.set_exception(ConnectionError(f"the connection to {self.address} was lost: {reason}"))
        self._waiting.clear()
        with contextlib.suppress(Exception):
            self._writer.close()

    def close(self) -> None:
        self._fail(ConnectionError("closed"))
        if self._task is not None and not self._task.done():
            self._task.cancel()


__all__ = ["PeerConnection", "PeerRefusedError"]
