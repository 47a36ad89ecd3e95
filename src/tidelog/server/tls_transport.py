"""TLS for one server connection, over a plain asyncio transport (Kafka's ``SslTransportLayer``).

asyncio's and uvloop's own TLS transports close the socket at once when the handshake fails: the alert
OpenSSL prepared (``certificate_required``, ``unknown_ca`` ...) stays in the outgoing buffer, the
client sees a bare EOF, and the application never hears of the connection. This layer does the
handshake itself with an :class:`ssl.SSLObject` over memory buffers, so that a refused handshake

- sends the alert, then half-closes (the client reads the alert, not a reset),
- is reported once to ``on_refused(peer, reason)`` (the socket server logs it, rate-limited, and counts
  it as a failed authentication),

and, once the handshake succeeds, hands :class:`TlsTransport` to the application protocol, which uses
it as any transport (``peercert`` in ``get_extra_info`` as asyncio's).

Loop-only, not thread-safe.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable

#: What one ``SSLObject.read`` returns at most (a TLS record carries up to 16 KiB).
_READ_SIZE = 64 * 1024  # below malloc's mmap threshold: a 256 KiB buffer per read was an mmap + munmap
#: How long a refused client has to read the alert and close before the socket is closed.
_LINGER_S = 5.0


def handshake_failure_reason(e: ssl.SSLError) -> str:
    """``e`` in a few words: OpenSSL's reason and, for a certificate, why it was not trusted."""
    reason = getattr(e, "reason", None) or type(e).__name__
    verify = getattr(e, "verify_message", None)
    return f"{reason}: {verify}" if verify else str(reason)


class TlsServerProtocol(asyncio.Protocol):
    """The protocol of the plain transport: TLS handshake, then decrypting into ``app`` and encrypting
    what ``app`` writes to its :class:`TlsTransport`."""

    def __init__(self, context: ssl.SSLContext, app: asyncio.Protocol, on_refused: Callable[[str, str], None],
                 handshake_timeout: float = 10.0) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self.sslobj = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self.context = context
        self.app = app
        self._on_refused = on_refused
        self._handshake_timeout = handshake_timeout
        self._timer: asyncio.TimerHandle | None = None
        self.raw: asyncio.Transport | None = None
        self.app_transport: TlsTransport | None = None
        self.refused = False  # the handshake failed: what the client sends now is discarded
        self.closing = False

    # ------------------------------------------------------------------ the plain transport's protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.raw = transport  # type: ignore[assignment]
        self._timer = asyncio.get_running_loop().call_later(self._handshake_timeout, self._handshake_timed_out)

    def data_received(self, data: bytes) -> None:
        if self.refused or self.closing:
            return
        self._incoming.write(data)
        if self.app_transport is None and not self._handshake():
            return
        self._read_app_data()

    def eof_received(self) -> bool | None:
        self._incoming.write_eof()
        return None  # the plain transport closes itself; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.closing = True
        if self.app_transport is not None:
            self.app.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.app_transport is not None:
            self.app.pause_writing()

    def resume_writing(self) -> None:
        if self.app_transport is not None:
            self.app.resume_writing()

    # ------------------------------------------------------------------------------------- TLS

    def _handshake(self) -> bool:
        """Advance the handshake; True once it has completed (the application is connected)."""
        try:
            self.sslobj.do_handshake()
        except ssl.SSLWantReadError:
            self._flush()
            return False
        except ssl.SSLError as e:
            self._refuse(handshake_failure_reason(e))
            return False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._flush()  # the server's last flight, TLS 1.3 session tickets
        self.app_transport = TlsTransport(self)
        self.app.connection_made(self.app_transport)
        return True

    def _refuse(self, reason: str) -> None:
        """Send the alert OpenSSL prepared, half-close, report once; the socket closes when the client
        closes its side (or after a grace period)."""
        self.refused = True
        if self._timer is not None:
            self._timer.cancel()
        self._flush()
        raw = self.raw
        assert raw is not None
        if raw.can_write_eof():
            raw.write_eof()  # after the buffered alert has left
            self._timer = asyncio.get_running_loop().call_later(_LINGER_S, raw.abort)
        else:
            raw.close()
        peer = raw.get_extra_info("peername")
        self._on_refused(peer[0] if peer else "?", reason)

    def _handshake_timed_out(self) -> None:
        self._timer = None
        if self.app_transport is None and self.raw is not None and not self.refused:
            self.raw.abort()

    def _read_app_data(self) -> None:
        chunks: list[bytes] = []
        eof = False
        try:
            while True:
                chunk = self.sslobj.read(_READ_SIZE)
                if not chunk:
                    eof = True
                    break
                chunks.append(chunk)
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:  # close_notify
            eof = True
        except ssl.SSLError:  # a corrupt record: the connection cannot go on
            eof = True
            self.closing = True
            self._flush()
            if self.raw is not None:
                self.raw.close()
        self._flush()  # key updates, alerts
        if chunks and not self.closing:  # one call for what this read decrypted (as asyncio's TLS does)
            self.app.data_received(chunks[0] if len(chunks) == 1 else b"".join(chunks))
        if eof and not self.closing:
            self.close()

    def _flush(self) -> None:
        data = self._outgoing.read()
        if data and self.raw is not None and not self.raw.is_closing():
            self.raw.write(data)

    # --------------------------------------------------------------------- the TLS transport's side

    def write(self, data) -> None:
        if self.closing:
            return
        self.sslobj.write(data)
        self._flush()

    def close(self) -> None:
        if self.closing:
            return
        self.closing = True
        try:
            self.sslobj.unwrap()  # queues close_notify
        except ssl.SSLError:
            pass
        self._flush()
        if self.raw is not None:
            self.raw.close()


class TlsTransport(asyncio.Transport):
    """What the application protocol writes to once the handshake has completed."""

    def __init__(self, layer: TlsServerProtocol) -> None:
        super().__init__()
        self._layer = layer

    def get_extra_info(self, name: str, default=None):
        layer = self._layer
        if name == "peercert":
            return layer.sslobj.getpeercert()
        if name == "ssl_object":
            return layer.sslobj
        if name == "sslcontext":
            return layer.context
        if name == "cipher":
            return layer.sslobj.cipher()
        if name == "compression":
            return layer.sslobj.compression()
        return layer.raw.get_extra_info(name, default) if layer.raw is not None else default

    def write(self, data) -> None:
        self._layer.write(data)

    def writelines(self, list_of_data) -> None:
        self._layer.write(b"".join(list_of_data))

    def is_closing(self) -> bool:
        return self._layer.closing

    def close(self) -> None:
        self._layer.close()

    def abort(self) -> None:
        self._layer.closing = True
        if self._layer.raw is not None:
            self._layer.raw.abort()

    def pause_reading(self) -> None:
        if self._layer.raw is not None:
            self._layer.raw.pause_reading()

    def resume_reading(self) -> None:
        if self._layer.raw is not None:
            self._layer.raw.resume_reading()

    def is_reading(self) -> bool:
        return self._layer.raw is not None and self._layer.raw.is_reading()

    def get_write_buffer_size(self) -> int:
        return self._layer.raw.get_write_buffer_size() if self._layer.raw is not None else 0

    def set_write_buffer_limits(self, high=None, low=None) -> None:
        if self._layer.raw is not None:
            self._layer.raw.set_write_buffer_limits(high, low)

    def get_write_buffer_limits(self):
        return self._layer.raw.get_write_buffer_limits() if self._layer.raw is not None else (0, 0)

    def can_write_eof(self) -> bool:
        return False


__all__ = ["TlsServerProtocol", "TlsTransport", "handshake_failure_reason"]
