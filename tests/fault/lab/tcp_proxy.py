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

A proxy built with ``frames=True`` (the proxies on the clients' path) reads the Kafka requests it
forwards frame by frame, so that ``delay(api_keys, seconds, ...)`` can hold back the next requests
of given API keys (Produce, EndTxn ...) on their way to a broker: the request and every one after
it on that connection wait (TCP keeps order), other connections go on. Bufstream's analysis tore
Kafka transactions with delays like these.
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

#: Where a proxy forwards to: an address, or a function giving it at each connection.
Upstream = "tuple[str, int] | Callable[[], tuple[str, int]]"

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
class Delay:
    """Hold back requests of ``api_keys`` for ``seconds`` (on connections from ``peer`` to
    ``destination``; None: any), the next ``count`` of them (None: every one until cleared)."""

    api_keys: frozenset[int]
    seconds: float
    destination: str | None = None
    peer: str | None = None
    count: int | None = None
    #: (api key, correlation id) of the requests held back so far
    delayed: list[tuple[int, int]] = field(default_factory=list)


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

    def __init__(self, network: ProxyNetwork, destination: str, upstream: Upstream, *,
                 peer: str | None = None, identify: Identify | None = None, port: int = 0,
                 frames: bool = False) -> None:
        self.network = network
        self.frames = frames
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
            upstream = self.upstream() if callable(self.upstream) else self.upstream
            up_reader, up_writer = await asyncio.open_connection(*upstream)
            conn.writers.append(up_writer)
            if conn.blackholed:  # cut while connecting
                return
            if head:
                up_writer.write(head)
            upstream = self._pipe_requests(conn, reader, up_writer) if self.frames else self._pipe(conn, reader, up_writer)
            await asyncio.gather(upstream, self._pipe(conn, up_reader, writer))
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


    async def _pipe_requests(self, conn: _Connection, reader: asyncio.StreamReader,
                             writer: asyncio.StreamWriter) -> None:
        """Forward whole request frames, holding back those a :class:`Delay` names."""
        buf = bytearray()
        try:
            while data := await reader.read(65536):
                if conn.blackholed:
                    continue
                buf += data
                while len(buf) >= 8:
                    size = int.from_bytes(buf[:4], "big", signed=True)
                    if len(buf) < 4 + size:
                        break
                    frame = bytes(buf[:4 + size])
                    del buf[:4 + size]
                    api_key = int.from_bytes(frame[4:6], "big", signed=True)
                    seconds = self.network.take_delay(conn.peer, self.destination, api_key,
                                                      int.from_bytes(frame[8:12], "big", signed=True))
                    if seconds:
                        await asyncio.sleep(seconds)
                    if conn.blackholed:
                        break
                    writer.write(frame)
                    await writer.drain()
        finally:
            if not conn.blackholed:
                conn.close()


class ProxyNetwork:
    """Every proxy of a cluster, served by one event-loop thread, and the cuts between nodes."""

    def __init__(self) -> None:
        self.proxies: list[TcpProxy] = []
        self._cuts: dict[frozenset[str], str] = {}
        self._delays: list[Delay] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxies", daemon=True)
        self._thread.start()

    def _call(self, coro_fn: Callable[[], object], timeout: float = 10.0):
        async def run():
            return await coro_fn()  # type: ignore[misc]

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def proxy(self, destination: str, upstream: Upstream, *, peer: str | None = None,
              identify: Identify | None = None, port: int = 0, frames: bool = False) -> TcpProxy:
        """A started proxy to ``upstream`` (the node ``destination``); connections come from ``peer``
        or from whom ``identify`` says; ``frames``: it can delay requests (see :meth:`delay`)."""
        proxy = TcpProxy(self, destination, upstream, peer=peer, identify=identify, port=port, frames=frames)
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

    def delay(self, api_keys: Iterable[int], seconds: float, *, destination: str | None = None,
              peer: str | None = None, count: int | None = None) -> Delay:
        """Hold back the next requests of ``api_keys`` through the ``frames`` proxies (see :class:`Delay`)."""
        rule = Delay(frozenset(api_keys), seconds, destination, peer, count)
        with self._lock:
            self._delays.append(rule)
        return rule

    def take_delay(self, peer: str | None, destination: str, api_key: int, correlation_id: int) -> float:
        """The seconds to hold back this request (0: none); counts it against its rule."""
        with self._lock:
            for rule in self._delays:
                if (api_key in rule.api_keys and rule.destination in (None, destination)
                        and rule.peer in (None, peer) and (rule.count is None or rule.count > 0)):
                    if rule.count is not None:
                        rule.count -= 1
                    rule.delayed.append((api_key, correlation_id))
                    return rule.seconds
        return 0.0

    def clear_delays(self) -> None:
        with self._lock:
            self._delays.clear()

    def heal(self) -> None:
        """Remove every cut and delay; blackholed connections are closed (their bytes are gone)."""
        with self._lock:
            self._cuts.clear()
            self._delays.clear()
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


__all__ = ["MODES", "Delay", "ProxyNetwork", "TcpProxy", "replica_fetcher_peer"]
