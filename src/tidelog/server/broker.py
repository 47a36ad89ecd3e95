"""The composition root: builds the broker's components, starts and stops them in order.

Start, in Kafka's order of safety: bind every listener (not serving yet: a taken port is reported
before any data is read), check and lock every log dir (a second broker on the same data directory
stops here, having read nothing), open (and if needed recover) every log off the event loop and log
what recovery did, load the embedded metadata store, make sure every partition of every topic has a
log, start housekeeping, then start serving.
Stop (SIGINT/SIGTERM): stop accepting, close connections, release waiting fetches, flush and
checkpoint every log and write the clean-shutdown marker (so the next start skips recovery).

Loop-only, except the storage work it hands to the default executor.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

from tidelog import __version__
from tidelog.clock import Clock, SystemClock
from tidelog.cluster.controller import Controller
from tidelog.cluster.metadata import BrokerInfo
from tidelog.cluster.store import EmbeddedStore
from tidelog.config import NON_ROUTABLE_HOSTS, BrokerConfig, Listener
from tidelog.coordinator.group import OFFSETS_TOPIC, GroupConfig, GroupCoordinator
from tidelog.coordinator.runtime import LogWriter
from tidelog.coordinator.txn.producer_ids import ProducerIdManager
from tidelog.errors import ErrorCode, KafkaError
from tidelog.server import handlers  # noqa: F401 - registers every handler
from tidelog.server.fetch_session import FetchSessionCache
from tidelog.server.network import ClientProtocol
from tidelog.server.purgatory import Purgatory
from tidelog.storage.log import PartitionLog
from tidelog.storage.log_manager import LogManager

log = logging.getLogger(__name__)


class ListenerError(Exception):
    """A listener could not be bound (the port is taken, the address is not this machine's ...)."""


def advertised_endpoint(listener: Listener, advertised: tuple[Listener, ...], bound_port: int) -> tuple[str, int]:
    """Where clients are told to connect for ``listener``: its advertised.listeners entry if any,
    else its own address; an empty or 0.0.0.0 host becomes this machine's host name, as in Kafka."""
    chosen = next((a for a in advertised if a.name == listener.name), None)
    host, port = (chosen.host, chosen.port) if chosen else (listener.host, bound_port)
    if host in ("", *NON_ROUTABLE_HOSTS):
        host = socket.getfqdn()
    return host, port or bound_port


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock | None = None, *, use_sendfile: bool | None = None) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.broker_id: int = config["broker.id"]
        self.listeners: tuple[Listener, ...] = config["listeners"]
        protocols = config["listener.security.protocol.map"]
        for listener in self.listeners:
            if protocols[listener.name] != "PLAINTEXT":
                raise ValueError(f"listener {listener.name} uses security protocol {protocols[listener.name]}, "
                                 "which Tidelog does not serve yet (only PLAINTEXT)")
        self.host, self.port = self.listeners[0].host, self.listeners[0].port
        self.bound: dict[str, tuple[str, int]] = {}  # listener name -> (host, bound port)
        self.log_dirs = [Path(d) for d in config["log.dirs"]]
        self.connections: set[ClientProtocol] = set()
        self._use_sendfile = use_sendfile
        self.use_sendfile = False
        self._servers: list[asyncio.base_events.Server] = []
        self._tasks: list[asyncio.Task] = []
        self._flushing: set[PartitionLog] = set()
        self.stopped = asyncio.Event()

    # ---------------------------------------------------------------------------------- start

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # os.sendfile needs the standard selector loop; uvloop transports fall back to pread + write.
        self.use_sendfile = self._use_sendfile if self._use_sendfile is not None else "uvloop" not in type(loop).__module__
        for key in self.config.unknown:
            log.warning("%s", self.config.describe_unknown(key))
        self.logs = LogManager(
            self.log_dirs,
            self.clock,
            topic_config=lambda topic: self.controller.topic_config(topic)
            if hasattr(self, "controller")
            else self.config.topic_defaults,
            producer_id_expiration_ms=self.config["producer.id.expiration.ms"],
        )
        await self._bind(loop)
        try:
            await self._load(loop)
        except BaseException:
            for server in self._servers:
                server.close()
            self.logs.release_dirs()
            raise
        for server in self._servers:
            await server.start_serving()
        log.info(
            "tidelog %s broker %d (cluster %s) listening on %s, data in %s",
            __version__, self.broker_id, self.store.image.cluster_id,
            ", ".join(f"{name}://{host or '0.0.0.0'}:{port}" for name, (host, port) in self.bound.items()),
            ", ".join(str(d) for d in self.log_dirs),
        )
        if self.logs.pending_removal:
            loop.run_in_executor(None, self.logs.purge_deleted_logs)

    async def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Bind every listener without accepting connections yet (they are accepted once loaded)."""
        for listener in self.listeners:
            try:
                server = await loop.create_server(
                    lambda name=listener.name: ClientProtocol(self, name), listener.host or None, listener.port,
                    reuse_address=True, start_serving=False)
            except OSError as e:
                for other in self._servers:
                    other.close()
                raise ListenerError(f"cannot listen on {listener}: {e.strerror or e}") from None
            self._servers.append(server)
            self.bound[listener.name] = (listener.host, server.sockets[0].getsockname()[1])
        self.port = self.bound[self.listeners[0].name][1]

    async def _load(self, loop: asyncio.AbstractEventLoop) -> None:
        self.logs.lock_dirs()
        reports = await loop.run_in_executor(None, self.logs.startup)
        for report in reports:
            for line in report.describe():
                (log.warning if report.truncated else log.info)("%s", line)
        advertised = self.config["advertised.listeners"]
        endpoints = tuple(
            (listener.name, *advertised_endpoint(listener, advertised, self.bound[listener.name][1]))
            for listener in self.listeners
        )
        _, adv_host, adv_port = endpoints[0]
        self.store = EmbeddedStore(self.log_dirs[0], BrokerInfo(self.broker_id, adv_host, adv_port,
                                                               endpoints=endpoints))
        self.controller = Controller(self.store, self.logs, self.broker_id, self.config.topic_defaults)
        for topic in self.store.image.topics.values():
            config = self.controller.topic_config(topic.name)
            for p in topic.partitions:
                self.logs.get_or_create_log(topic.name, p.partition, config).update_config(config)
        self.producer_ids = ProducerIdManager(self.store.image.next_producer_id_block, self._reserve_producer_ids)
        self.purgatory = Purgatory(self.clock, lambda delay_ms, fn: loop.call_later(delay_ms / 1000, fn))
        self.fetch_sessions = FetchSessionCache(self.config["max.incremental.fetch.session.cache.slots"], self.clock)
        self._start_group_coordinator(loop)
        self._tasks = [
            asyncio.ensure_future(self._every(1000, self._flush_by_time)),
            asyncio.ensure_future(self._every(self.config["log.flush.offset.checkpoint.interval.ms"], self._checkpoint)),
            asyncio.ensure_future(self._every(self.config["log.retention.check.interval.ms"], self._retention)),
            asyncio.ensure_future(self._every(min(10_000, self.config["connections.max.idle.ms"]), self._reap_idle)),
        ]
        if self.config["log.cleaner.enable"]:
            self._tasks.append(asyncio.ensure_future(self._every(self.config["log.cleaner.backoff.ms"], self._compact)))

    # ------------------------------------------------------------------------- group coordinator

    def _start_group_coordinator(self, loop: asyncio.AbstractEventLoop) -> None:
        """Build the group coordinator and replay __consumer_offsets (if it exists yet) into it."""
        topic = self.store.image.topics.get(OFFSETS_TOPIC)
        num_partitions = len(topic.partitions) if topic else self.config["offsets.topic.num.partitions"]
        writer = LogWriter(self._offsets_log, lambda plog, p: self.after_append(plog, OFFSETS_TOPIC, p))
        self.group_coordinator = GroupCoordinator(
            GroupConfig.from_broker_config(self.config), self.clock, writer,
            lambda delay_ms, fn: loop.call_later(delay_ms / 1000, fn), num_partitions=num_partitions)
        self.group_coordinator.topic_exists = lambda name: name in self.store.image.topics
        self.group_coordinator.load(range(num_partitions) if topic else ())

    def ensure_offsets_topic(self) -> None:
        """Create __consumer_offsets on first use (Kafka creates it on the first FindCoordinator)."""
        if OFFSETS_TOPIC in self.store.image.topics:
            return
        rf = min(self.config["offsets.topic.replication.factor"], len(self.store.image.brokers))
        self.controller.create_topic(
            OFFSETS_TOPIC, self.group_coordinator.num_partitions, rf,
            {"cleanup.policy": "compact", "compression.type": "producer",
             "segment.bytes": str(self.config["offsets.topic.segment.bytes"])},
            internal=True)

    def _offsets_log(self, partition: int) -> PartitionLog:
        self.ensure_offsets_topic()
        plog = self.logs.get_log(OFFSETS_TOPIC, partition)
        if plog is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no log for {OFFSETS_TOPIC}-{partition}")
        return plog

    def _reserve_producer_ids(self, next_block: int) -> None:
        from dataclasses import replace

        self.store.publish(replace(self.store.image, next_producer_id_block=next_block))

    # ---------------------------------------------------------------------------- housekeeping

    async def _every(self, interval_ms: int, job) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job()
            except Exception:
                log.exception("housekeeping job %s failed", getattr(job, "__name__", job))

    def delete_topics(self, names: list[str]) -> None:
        """Delete topics and what hangs on them: waiting fetches answer now, committed offsets go,
        and the log files are removed off the event loop."""
        deleted = self.controller.delete_topics(names)
        for topic in deleted:
            for p in topic.partitions:
                self.purgatory.check((topic.name, p.partition))
        self.group_coordinator.cleanup_group_metadata()
        asyncio.get_running_loop().run_in_executor(None, self.logs.purge_deleted_logs)

    def after_append(self, plog: PartitionLog, topic: str, partition: int) -> None:
        """Wake fetches waiting on the partition; fsync in the background if the flush policy says so."""
        self.purgatory.check((topic, partition))
        if plog.unflushed_messages >= plog.config.flush_messages and plog not in self._flushing:
            self._flush_in_background(plog)

    def _flush_in_background(self, plog: PartitionLog) -> None:
        self._flushing.add(plog)
        fut = asyncio.get_running_loop().run_in_executor(None, plog.flush)
        fut.add_done_callback(lambda _: self._flushing.discard(plog))

    async def _flush_by_time(self) -> None:
        for plog in self.logs.logs_due_for_flush():
            if plog not in self._flushing:
                self._flush_in_background(plog)

    async def _checkpoint(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.logs.checkpoint)

    async def _retention(self) -> None:
        self.logs.apply_retention()
        self.logs.remove_deleted_segments()
        for _, plog in self.logs.logs():
            plog.producer_state.remove_expired(self.clock.wall_ms())

    async def _compact(self) -> None:
        """One compaction pass: plan on the loop, rewrite segments in the executor, commit on the loop."""
        plan = self.logs.grab_filthiest_compacted_log()
        if plan is None:
            return
        try:
            result = await asyncio.get_running_loop().run_in_executor(None, self.logs.cleaner.clean, plan)
        except Exception as e:
            log.exception("compaction of %s-%d failed", plan.topic, plan.partition)
            self.logs.abort_clean(plan, e)
            return
        self.logs.complete_clean(result)

    async def _reap_idle(self) -> None:
        limit = self.config["connections.max.idle.ms"]
        now = self.clock.monotonic_ms()
        for conn in list(self.connections):
            if now - conn.last_active_ms > limit and conn.conn.in_flight == 0:
                conn.close(f"idle for more than {limit} ms (connections.max.idle.ms)")

    # ----------------------------------------------------------------------------------- stop

    async def stop(self) -> None:
        log.info("shutting down")
        for task in self._tasks:
            task.cancel()
        if hasattr(self, "group_coordinator"):
            self.group_coordinator.close()
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()
        if hasattr(self, "purgatory"):
            self.purgatory.complete_all()
        for server in self._servers:
            await server.wait_closed()
        await asyncio.get_running_loop().run_in_executor(None, self.logs.shutdown)
        log.info("shut down cleanly")
        self.stopped.set()


__all__ = ["Broker", "ListenerError", "advertised_endpoint"]
