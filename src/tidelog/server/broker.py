"""The composition root: builds the broker's components, starts and stops them in order.

Start: open (and if needed recover) every log off the event loop, bind the listener, load the
embedded metadata store, make sure every partition of every topic has a log, start housekeeping.
Stop (SIGINT/SIGTERM): stop accepting, close connections, release waiting fetches, flush and
checkpoint every log and write the clean-shutdown marker (so the next start skips recovery).

Loop-only, except the storage work it hands to the default executor.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from urllib.parse import urlsplit

from tidelog import __version__
from tidelog.clock import Clock, SystemClock
from tidelog.cluster.controller import Controller
from tidelog.cluster.metadata import BrokerInfo
from tidelog.cluster.store import EmbeddedStore
from tidelog.config import BrokerConfig
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


def parse_listener(listener: str) -> tuple[str, int]:
    """``PLAINTEXT://host:port`` (or ``host:port``) -> (host, port); an empty host means all interfaces."""
    if "://" not in listener:
        listener = "PLAINTEXT://" + listener
    parts = urlsplit(listener)
    if parts.scheme.upper() != "PLAINTEXT":
        raise ValueError(f"unsupported listener security protocol {parts.scheme!r} (only PLAINTEXT)")
    host = parts.hostname or ""
    if parts.port is None:
        raise ValueError(f"listener {listener!r} has no port")
    return host, parts.port


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock | None = None, *, use_sendfile: bool | None = None) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.broker_id: int = config["broker.id"]
        self.host, self.port = parse_listener(config["listeners"][0])
        self.log_dirs = [Path(d) for d in config["log.dirs"]]
        self.connections: set[ClientProtocol] = set()
        self._use_sendfile = use_sendfile
        self.use_sendfile = False
        self._server: asyncio.base_events.Server | None = None
        self._tasks: list[asyncio.Task] = []
        self._flushing: set[PartitionLog] = set()
        self.stopped = asyncio.Event()

    # ---------------------------------------------------------------------------------- start

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # os.sendfile needs the standard selector loop; uvloop transports fall back to pread + write.
        self.use_sendfile = self._use_sendfile if self._use_sendfile is not None else "uvloop" not in type(loop).__module__
        for key in self.config.unknown:
            log.warning("unknown configuration %r is ignored", key)
        self.logs = LogManager(
            self.log_dirs,
            self.clock,
            topic_config=lambda topic: self.controller.topic_config(topic)
            if hasattr(self, "controller")
            else self.config.topic_defaults,
            producer_id_expiration_ms=self.config["producer.id.expiration.ms"],
        )
        await loop.run_in_executor(None, self.logs.startup)
        self._server = await loop.create_server(
            lambda: ClientProtocol(self), self.host or None, self.port, reuse_address=True
        )
        sock = self._server.sockets[0].getsockname()
        self.port = sock[1]
        advertised = self.config["advertised.listeners"]
        adv_host, adv_port = parse_listener(advertised[0]) if advertised else (self.host, self.port)
        adv_host = adv_host or "localhost"
        self.store = EmbeddedStore(self.log_dirs[0], BrokerInfo(self.broker_id, adv_host, adv_port or self.port))
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
        log.info(
            "tidelog %s broker %d (cluster %s) listening on %s:%d, data in %s",
            __version__, self.broker_id, self.store.image.cluster_id, self.host or "0.0.0.0", self.port,
            ", ".join(str(d) for d in self.log_dirs),
        )

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
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            if conn.transport is not None:
                conn.transport.close()
        if hasattr(self, "purgatory"):
            self.purgatory.complete_all()
        if self._server is not None:
            await self._server.wait_closed()
        await asyncio.get_running_loop().run_in_executor(None, self.logs.shutdown)
        log.info("shut down cleanly")
        self.stopped.set()


__all__ = ["Broker", "parse_listener"]
