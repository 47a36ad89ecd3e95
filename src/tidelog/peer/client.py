"""The broker-to-broker client (Kafka's ``NetworkClient`` as its ``InterBrokerSendThread`` senders use it).

``await client.send(broker_id, request, version)`` returns the decoded response of the broker
``broker_id``. The client keeps one connection per destination broker, opened on first use to the
address :class:`PeerSettings` resolves from the cluster metadata (the broker's inter-broker listener),
secured as that listener needs (TLS, SASL: :class:`~tidelog.peer.wire.Security`); requests to the same
broker are pipelined on it (:class:`~tidelog.peer.connection.PeerConnection`), each with its timeout,
counted on the settings' clock as the reconnect backoff is.
When the broker's address changes (it re-registered elsewhere) the old connection is closed.

Failures raise, and the caller decides what to retry (Kafka's senders do the same):

* :class:`PeerUnavailable`: no address for the broker (:class:`PeerUnknown`), it cannot be reached,
  or the client is backing off after a failed connection (:class:`PeerBackingOff`): after each failure the next attempt to that broker waits
  ``reconnect.backoff.ms`` (50 ms), doubling up to ``reconnect.backoff.max.ms`` (1 s), on the
  injected clock; a connection that opens resets it;
* :class:`~tidelog.peer.connection.PeerRefusedError`: TLS or SASL refused (backed off as well);
* TimeoutError: no answer within the request's timeout (the connection is closed);
* ConnectionError: the connection was lost with the request in flight.

Several clients may share one :class:`PeerSettings`; each has its own connections (Kafka gives the
replica fetchers, the transaction markers and the partition verification their own network clients,
so a leader's long-polled Fetch never delays a marker). Loop-only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tidelog.clock import Clock, SystemClock
from tidelog.peer.connection import PeerConnection, PeerRefusedError
from tidelog.peer.wire import PLAINTEXT, Security

log = logging.getLogger(__name__)

#: Kafka's reconnect.backoff.ms and reconnect.backoff.max.ms defaults
RECONNECT_BACKOFF_MS = 50
RECONNECT_BACKOFF_MAX_MS = 1000

#: broker id -> (host, port) of its inter-broker listener, or None when it is not registered
Address = Callable[[int], tuple[str, int] | None]


class PeerUnavailable(ConnectionError):
    """The broker cannot be sent to now (no address, unreachable, or in reconnect backoff)."""


class PeerUnknown(PeerUnavailable):
    """The broker has no address (it is not registered)."""


class PeerBackingOff(PeerUnavailable):
    """The last connection to the broker failed; the next attempt waits out the reconnect backoff."""


class PeerSettings:
    """Where brokers are and how to connect to them, shared by the broker's peer clients.

    ``security`` builds the transport settings (it may read files and raise ConfigError); it is called
    once, by :meth:`prepare` at start-up or at the first connection."""

    def __init__(self, address: Address, security: Callable[[], Security] | None = None, *,
                 request_timeout_ms: int = 30_000, reconnect_backoff_ms: int = RECONNECT_BACKOFF_MS,
                 reconnect_backoff_max_ms: int = RECONNECT_BACKOFF_MAX_MS, clock: Clock | None = None) -> None:
        self.address = address
        self._build_security = security
        self._security: Security | None = None if security is not None else PLAINTEXT
        self.request_timeout_ms = request_timeout_ms
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.reconnect_backoff_max_ms = max(reconnect_backoff_ms, reconnect_backoff_max_ms)
        self.clock = clock or SystemClock()

    def prepare(self) -> Security:
        if self._security is None:
            assert self._build_security is not None
            self._security = self._build_security()
        return self._security

    @property
    def security(self) -> Security:
        return self.prepare()


@dataclass(slots=True)
class _Node:
    """A destination broker: its connection (or the one opening), and its reconnect backoff."""

    address: tuple[str, int] | None = None
    connection: PeerConnection | None = None
    opening: asyncio.Future | None = None
    failures: int = 0
    retry_at_ms: int = 0


class PeerClient:
    def __init__(self, settings: PeerSettings, client_id: str) -> None:
        self.settings = settings
        self.client_id = client_id
        self._nodes: dict[int, _Node] = {}
        self.closed = False

    async def send(self, broker_id: int, body: Any, version: int, *, timeout_ms: int | None = None) -> Any:
        """The decoded response of ``broker_id`` to ``body`` at ``version`` (see the module for failures)."""
        timeout_s = (self.settings.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        connection = await self._connection(broker_id, timeout_s)
        try:
            return await connection.request(body, version, timeout_s)
        except (TimeoutError, ConnectionError, OSError):
            self._drop(broker_id, connection)
            raise

    def connection(self, broker_id: int) -> PeerConnection | None:
        """The open connection to ``broker_id``, if any."""
        node = self._nodes.get(broker_id)
        return None if node is None or node.connection is None or node.connection.closed else node.connection

    def ready(self, broker_id: int) -> bool:
        """Whether a request to ``broker_id`` goes out at once (connected, or not backing off)."""
        node = self._nodes.get(broker_id)
        return node is None or node.connection is not None or self.settings.clock.monotonic_ms() >= node.retry_at_ms

    def backoff_ms(self, broker_id: int) -> int:
        """How long until the next connection attempt to ``broker_id`` (0: now)."""
        node = self._nodes.get(broker_id)
        return 0 if node is None else max(0, node.retry_at_ms - self.settings.clock.monotonic_ms())

    async def _connection(self, broker_id: int, timeout_s: float) -> PeerConnection:
        if self.closed:
            raise PeerUnavailable("the peer client is closed")
        node = self._nodes.setdefault(broker_id, _Node())
        address = self.settings.address(broker_id)
        if address is None:
            raise PeerUnknown(f"broker {broker_id} has no address (not registered)")
        if node.address != address:
            self._disconnect(node)
            node.address = address
        if node.connection is not None and node.connection.closed is None:
            return node.connection
        if node.opening is None:
            wait = node.retry_at_ms - self.settings.clock.monotonic_ms()
            if 0 < wait <= self.settings.reconnect_backoff_max_ms:  # (longer: the clock went back)
                raise PeerBackingOff(f"broker {broker_id} at {address[0]}:{address[1]}: reconnecting in {wait} ms")
            node.opening = asyncio.ensure_future(self._open(broker_id, node, address, timeout_s))
            node.opening.add_done_callback(_retrieved)  # its failure is raised to the waiters, if any are left
        return await asyncio.shield(node.opening)

    async def _open(self, broker_id: int, node: _Node, address: tuple[str, int], timeout_s: float) -> PeerConnection:
        try:
            connection = await PeerConnection.open(address[0], address[1], self.client_id, self.settings.security,
                                                   timeout_s, self.settings.clock)
        except PeerRefusedError:
            self._backoff(node)
            raise
        except (TimeoutError, OSError, ConnectionError, asyncio.IncompleteReadError) as e:
            self._backoff(node)
            raise PeerUnavailable(f"broker {broker_id} at {address[0]}:{address[1]}: {e!r}") from None
        finally:
            node.opening = None
        if self.closed or node.address != address:
            connection.close()
            raise PeerUnavailable(f"broker {broker_id}: the client closed or the broker moved while connecting")
        node.connection, node.failures = connection, 0
        return connection

    def _backoff(self, node: _Node) -> None:
        s = self.settings
        delay = min(s.reconnect_backoff_ms * (2 ** min(node.failures, 30)), s.reconnect_backoff_max_ms)
        node.failures += 1
        node.retry_at_ms = s.clock.monotonic_ms() + delay

    def _drop(self, broker_id: int, connection: PeerConnection) -> None:
        node = self._nodes.get(broker_id)
        if node is not None and node.connection is connection:
            node.connection = None
            self._backoff(node)
        connection.close()

    @staticmethod
    def _disconnect(node: _Node) -> None:
        if node.connection is not None:
            node.connection.close()
            node.connection = None

    def disconnect(self, broker_id: int) -> None:
        """Close the connection to ``broker_id`` (the next request opens a new one)."""
        node = self._nodes.pop(broker_id, None)
        if node is not None:
            self._disconnect(node)
            if node.opening is not None:
                node.opening.cancel()

    def close(self) -> None:
        self.closed = True
        for broker_id in list(self._nodes):
            self.disconnect(broker_id)


def _retrieved(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()


__all__ = ["RECONNECT_BACKOFF_MAX_MS", "RECONNECT_BACKOFF_MS", "PeerBackingOff", "PeerClient", "PeerSettings",
           "PeerUnavailable", "PeerUnknown"]
