"""Controllable TCP proxies between the processes of a local cluster: the fault tests' network.

Every proxy forwards one listening port on loopback to one upstream address. It knows the node it
leads to (its ``destination``, e.g. ``"zk"`` or ``"b2"``) and, for each connection, the node the
connection comes from (its ``peer``): fixed when a proxy serves one client (broker 1's way to
ZooKeeper), or read from the first Kafka request's header (a follower's fetcher names itself
``tidelog-replica-fetcher-<id>``) when a proxy serves several (a leader's inter-broker listener).

A :class:`ProxyNetwork` owns the proxies and one event-loop thread running all of them, and holds
the current cuts: ``cut(a, b, mode)`` stops traffic between nodes ``a`` and ``b`` (both ways),
``isolate(node)`` cuts a node from every other, ``heal()`` removes every cut. Two modes:

* ``"drop"``: connections between the two are closed at once and new ones are closed on accept
  (what a firewall's REJECT looks like: the processes notice at once);
* ``"blackhole"``: connections stay open but nothing passes, new ones are accepted and never
  forwarded (what a lost route looks like: the processes notice by timing out). Healing closes
  the connections that were blackholed (their bytes were lost; TCP would have reset them).

Connections whose peer is unknown (clients, the test's own ZooKeeper client) are never cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

MODES = ("drop", "blackhole")
_REPLICA_CLIENT = re.compile(rb"^tidelog-replica-fetcher-(\d+)$")
_HEADER = struct.Struct(">ihhih")  # size, api key, api version, correlation id, client id length

#: The first bytes a connection sent -> the peer node's name, "" if it cannot tell yet, None if unknown.
Identify = Callable[[bytes], "str | None"]


def replica_fetcher_peer(head: bytes) -> str | None:
    """The broker (``"b<id>"``) a Kafka connection comes from, by the client id of its first request
    (a Tidelog follower's fetcher); "" while the header is incomplete; None for any other client."""
    if len(head) < _HEADER.size:
        return ""
    *_, length = _HEADER.unpack_from(head)
    if length < 0:
        return None
    if len(head) < _HEADER.size + length:
        return ""
    m = _REPLICA_CLIENT.match(head[_HEADER.size:_HEADER.size + length])
    return f"b{int(m.group(1))}" if m else None


@dataclass(eq=False)
class _Connection:
    peer: str | None
    writers: list[asyncio.StreamWriter] = field(default_factory=list)
    blackholed: bool = False

    def close(self) -> None:
        for writer in self.writers:
            with contextlib.suppress(Exception):
                writer.transport.abort()


class TcpProxy:
    """One listening port forwarding to ``upstream``; built by :meth:`ProxyNetwork.proxy`."""

    def __init__(self, network: ProxyNetwork, destination: str, upstream: tuple[str, int], *,
                 peer: str | None = None, identify: Identify | None = None, port: int = 0) -> None:
        self.network = network
        self.destination = destination
        self.upstream = upstream
        self.peer = peer
        self.identify = identify
        self.port = port
        self.connections: set[_Connection] = set()
        self._server: asyncio.AbstractServer | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for conn in list(self.connections):
                conn.close()
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Connection(self.peer, [writer])
        self.connections.add(conn)
        try:
            head = b""
            if self.identify is not None:
                while (peer := self.identify(head)) == "":
                    chunk = await reader.read(65536)
                    if not chunk:
                        return
                    head += chunk
                conn.peer = peer
            mode = self.network.mode(conn.peer, self.destination)
            if mode == "drop":
                return
            if mode == "blackhole":
                conn.blackholed = True
                while await reader.read(65536):  # hold it; nothing passes
                    pass
                return
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            conn.writers.append(up_writer)
            if conn.blackholed:  # cut while connecting
                return
            if head:
                up_writer.write(head)
            await asyncio.gather(self._pipe(conn, reader, up_writer), self._pipe(conn, up_reader, writer))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.connections.discard(conn)
            conn.close()

    @staticmethod
    async def _pipe(conn: _Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if conn.blackholed:
                    continue
                writer.write(data)
                await writer.drain()
        finally:
            if not conn.blackholed:
                conn.close()


class ProxyNetwork:
    """Every proxy of a cluster, served by one event-loop thread, and the cuts between nodes."""

    def __init__(self) -> None:
        self.proxies: list[TcpProxy] = []
        self._cuts: dict[frozenset[str], str] = {}
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxies", daemon=True)
        self._thread.start()

    def _call(self, coro_fn: Callable[[], object], timeout: float = 10.0):
        async def run():
            return await coro_fn()  # type: ignore[misc]

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def proxy(self, destination: str, upstream: tuple[str, int], *, peer: str | None = None,
              identify: Identify | None = None, port: int = 0) -> TcpProxy:
        """A started proxy to ``upstream`` (the node ``destination``); connections come from ``peer``
        or from whom ``identify`` says."""
        proxy = TcpProxy(self, destination, upstream, peer=peer, identify=identify, port=port)
        self._call(proxy._start)
        self.proxies.append(proxy)
        return proxy

    def mode(self, a: str | None, b: str | None) -> str | None:
        """How traffic between ``a`` and ``b`` is cut now (None: it passes)."""
        if a is None or b is None:
            return None
        with self._lock:
            return self._cuts.get(frozenset((a, b)))

    def cuts(self) -> dict[frozenset[str], str]:
        with self._lock:
            return dict(self._cuts)

    def cut(self, a: str, b: str, mode: str = "drop") -> None:
        self.cut_many([(a, b)], mode)

    def cut_many(self, pairs: Iterable[tuple[str, str]], mode: str = "drop") -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        with self._lock:
            for a, b in pairs:
                if a != b:
                    self._cuts[frozenset((a, b))] = mode
        self._call(self._apply)

    def isolate(self, node: str, others: Iterable[str], mode: str = "drop") -> None:
        """Cut ``node`` off from every node in ``others``."""
        self.cut_many([(node, other) for other in others], mode)

    def heal(self) -> None:
        """Remove every cut; blackholed connections are closed (their bytes are gone)."""
        with self._lock:
            self._cuts.clear()
        self._call(self._apply)

    async def _apply(self) -> None:
        for proxy in self.proxies:
            for conn in list(proxy.connections):
                mode = self.mode(conn.peer, proxy.destination)
                if mode == "drop" or (conn.blackholed and mode is None):
                    conn.close()
                elif mode == "blackhole":
                    conn.blackholed = True

    def close(self) -> None:
        for proxy in self.proxies:
            with contextlib.suppress(Exception):
                self._call(proxy._stop)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


__all__ = ["MODES", "ProxyNetwork", "TcpProxy", "replica_fetcher_peer"]
