"""Replication in a cluster: this broker as leader of some partitions and follower of others.

Driven by the metadata (:meth:`Replication.apply`, after the replica manager has created the logs):

1. **Becoming leader** (the partition state names this broker, in an epoch it has not led yet):
   stop fetching the partition, record in the leader-epoch cache that the new epoch begins at the
   log end, and start tracking the followers (:class:`~tidelog.replica.isr.LeaderPartitionState`).
   The high watermark from then on moves only by the ISR (:mod:`tidelog.replica.isr` rule 2).
2. **Becoming follower** (another broker leads it): stop leading (waiting acks=all produces answer
   NOT_LEADER_OR_FOLLOWER) and fetch from the leader (:mod:`tidelog.replica.fetcher`); a leader of -1
   (offline) means no fetching.
3. **Follower fetches** arriving at a leader (:meth:`read_for_follower`): the divergence check first
   (:func:`~tidelog.replica.divergence.diverging_epoch`); otherwise read up to the log end, record
   the follower's progress, move the high watermark, and maybe add the follower to the ISR.
4. **Follower responses** (:meth:`handle_response`): a diverging epoch truncates the log
   (:func:`~tidelog.replica.divergence.truncation_offset`), records are appended as the leader wrote
   them, the follower's high watermark is the smaller of the leader's and its own log end, and the
   leader's log start offset is followed.
5. **ISR changes** are made by the leader, as Kafka's ZooKeeper-era leaders did: every half
   ``replica.lag.time.max.ms`` it drops lagging followers, and a follower that caught up is added
   on its fetch; the new state (same leader and leader epoch) is written through ``alter_isr``,
   conditionally at the partition epoch read (a conflicting write — the controller's — wins, and the
   leader tries again from the new state). The change takes effect when the metadata brings it back.
6. **acks=all** (:meth:`wait_for_acks`): a produce waits in the purgatory until the high watermark
   reaches its end (every ISR member has it), then answers NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND
   if the ISR has meanwhile shrunk below ``min.insync.replicas``; REQUEST_TIMED_OUT at its timeout;
   NOT_LEADER_OR_FOLLOWER if leadership moved.

Time, its waits included (the ISR check, the ISR-write retry, the fetchers' backoff, acks=all
timeouts), is the injected clock's. Loop-only, not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage, PartitionMetadata
from tidelog.errors import ErrorCode, KafkaError
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.protocol.messages import FetchRequest, FetchResponse
from tidelog.replica.divergence import diverging_epoch, truncation_offset
from tidelog.replica.events import LogEvents
from tidelog.replica.fetch import PartitionFetch, PartitionRead
from tidelog.replica.fetcher import ReplicaFetcher
from tidelog.replica.isr import LeaderPartitionState
from tidelog.replica.purgatory import DelayedOperation, Purgatory
from tidelog.storage.log import PartitionLog
from tidelog.storage.log_manager import LogManager

#: pause before an ISR change that could not be written is proposed again
ISR_RETRY_BACKOFF_MS = 1000

log = logging.getLogger(__name__)

Key = tuple[str, int]
#: (topic, partition, the new state (its partition_epoch is the version it replaces), on_done(written))
AlterIsr = Callable[[str, int, PartitionMetadata, Callable[[bool], None]], None]


@dataclass(frozen=True, slots=True)
class ReplicationSettings:
    listener_name: str | None = None  # the leader's listener followers connect to (None: its first)
    replica_lag_time_max_ms: int = 30_000
    fetch_wait_max_ms: int = 500
    fetch_max_bytes: int = 1_048_576
    fetch_response_max_bytes: int = 10_485_760
    fetch_backoff_ms: int = 1000
    socket_timeout_ms: int = 30_000
    #: where leaders are and how followers connect to them (the inter-broker listener's TLS/SASL; None:
    #: plain TCP to ``listener_name`` of the metadata's brokers)
    peers: PeerSettings | None = None


class Replication:
    def __init__(self, broker_id: int, logs: LogManager, image: Callable[[], MetadataImage], events: LogEvents,
                 purgatory: Purgatory, clock: Clock, settings: ReplicationSettings, alter_isr: AlterIsr) -> None:
        self.broker_id = broker_id
        self.logs = logs
        self._image = image
        self.events = events
        self.purgatory = purgatory
        self.clock = clock
        self.settings = settings
        self.alter_isr = alter_isr
        self.leaders: dict[Key, LeaderPartitionState] = {}
        self.following: dict[Key, tuple[int, int]] = {}  # key -> (leader id, leader epoch)
        self.fetchers: dict[int, ReplicaFetcher] = {}
        #: the followers' connections to their leaders (one per leader broker)
        self.peers = PeerClient(settings.peers or PeerSettings(self._address, clock=clock),
                                f"tidelog-replica-fetcher-{broker_id}")
        self._isr_task: asyncio.Task | None = None
        self._background: set[asyncio.Future] = set()  # ISR writes and fetcher stops in flight
        self._closed = False
        events.on_appended(self._on_appended)

    # ------------------------------------------------------------------------------ roles (1-2)

    def apply(self, image: MetadataImage) -> None:
        hosted: set[Key] = set()
        now = self.clock.monotonic_ms()
        for topic in image.topics.values():
            for p in topic.partitions:
                if self.broker_id not in p.replicas:
                    continue
                key = (topic.name, p.partition)
                plog = self.logs.get_log(*key)
                if plog is None:
                    continue
                hosted.add(key)
                plog.high_watermark_follows_end = False
                if p.leader == self.broker_id:
                    self._lead(key, plog, p, now)
                else:
                    self._follow(key, p)
        for key in [k for k in self.leaders if k not in hosted]:
            self._stop_leading(key)
        for key in [k for k in self.following if k not in hosted]:
            del self.following[key]
        self._sync_fetchers()
        if self.leaders and self._isr_task is None and not self._closed:
            self._isr_task = asyncio.ensure_future(self._maintain_isr())

    def _lead(self, key: Key, plog: PartitionLog, p: PartitionMetadata, now: int) -> None:
        self.following.pop(key, None)
        state = self.leaders.get(key)
        if state is None or state.leader_epoch != p.leader_epoch:
            if p.leader_epoch > plog.leader_epochs.latest_epoch:
                plog.leader_epochs.assign(p.leader_epoch, plog.log_end_offset)
            self.leaders[key] = LeaderPartitionState.become_leader(
                self.broker_id, p.leader_epoch, p.replicas, p.isr, p.partition_epoch,
                plog.leader_epochs.start_offset_of_latest(), now)
            log.info("broker %d leads %s-%d in leader epoch %d (ISR %s, log end %d)", self.broker_id, *key,
                     p.leader_epoch, list(p.isr), plog.log_end_offset)
        else:
            state.update_metadata(p.replicas, p.isr, p.partition_epoch, now)
        self._advance_high_watermark(key, plog)
        self.purgatory.check(key)  # an ISR change may decide waiting produces

    def _follow(self, key: Key, p: PartitionMetadata) -> None:
        if key in self.leaders:
            self._stop_leading(key)
        if p.leader < 0:
            self.following.pop(key, None)
            return
        if self.following.get(key) != (p.leader, p.leader_epoch):
            log.info("broker %d follows %s-%d from leader %d (leader epoch %d)", self.broker_id, *key, p.leader,
                     p.leader_epoch)
        self.following[key] = (p.leader, p.leader_epoch)

    def _stop_leading(self, key: Key) -> None:
        del self.leaders[key]
        self.purgatory.check(key)  # waiting produces answer NOT_LEADER_OR_FOLLOWER

    def _sync_fetchers(self) -> None:
        wanted = {leader for leader, _ in self.following.values()}
        for leader_id in list(self.fetchers):
            if leader_id not in wanted:
                self._spawn(self.fetchers.pop(leader_id).stop())
        if self._closed:
            return
        for leader_id in wanted:
            fetcher = self.fetchers.get(leader_id)
            if fetcher is None:
                s = self.settings
                fetcher = self.fetchers[leader_id] = ReplicaFetcher(
                    self.broker_id, leader_id, self.peers, self.build_request, self.handle_response, self.clock,
                    backoff_ms=s.fetch_backoff_ms, timeout_ms=s.socket_timeout_ms + s.fetch_wait_max_ms)
                fetcher.start()
            fetcher.wake()

    def _address(self, broker_id: int) -> tuple[str, int] | None:
        broker = self._image().brokers.get(broker_id)
        return None if broker is None else broker.endpoint(self.settings.listener_name)

    async def close(self) -> None:
        self._closed = True
        if self._isr_task is not None:
            self._isr_task.cancel()
        for fetcher in list(self.fetchers.values()):
            await fetcher.stop()
        self.fetchers.clear()
        self.peers.close()

    # ------------------------------------------------------------------- high watermark (leader)

    def _on_appended(self, topic: str, partition: int, plog: PartitionLog) -> None:
        if (topic, partition) in self.leaders:
            self._advance_high_watermark((topic, partition), plog)

    def _advance_high_watermark(self, key: Key, plog: PartitionLog) -> None:
        state = self.leaders[key]
        hw = state.high_watermark(plog.log_end_offset, plog.high_watermark)
        if hw != plog.high_watermark:
            plog.update_high_watermark(hw)
            self.purgatory.check(key)

    # ----------------------------------------------------------------- follower fetches (3)

    def read_for_follower(self, replica_id: int, pf: PartitionFetch, max_bytes: int, check_leader: Callable[[], PartitionLog],
                          ) -> PartitionRead:
        key = (pf.topic or "", pf.partition)
        try:
            plog = check_leader()
            state = self.leaders.get(key)
            if state is None:
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{key} is not led here")
            diverging = diverging_epoch(plog.leader_epochs, plog.log_end_offset, pf.last_fetched_epoch,
                                        pf.fetch_offset)
            if diverging is not None:
                return PartitionRead(ErrorCode.NONE, None, plog.high_watermark, plog.high_watermark,
                                     plog.log_start_offset, diverging_epoch=diverging)
            result = plog.read(pf.fetch_offset, max(1, min(pf.max_bytes, max_bytes)), max_offset=plog.log_end_offset)
        except KafkaError as e:
            plog = self.logs.get_log(*key) if pf.topic is not None else None
            hw = plog.high_watermark if plog is not None else -1
            start = plog.log_start_offset if plog is not None else -1
            return PartitionRead(e.code, None, hw, hw, start, e.message)
        now = self.clock.monotonic_ms()
        if state.record_fetch(replica_id, pf.fetch_offset, plog.log_end_offset, now):
            self._advance_high_watermark(key, plog)
            proposed = state.proposed_expand(replica_id, plog.high_watermark, set(self._image().brokers))
            if proposed is not None:
                self._write_isr(key, state, proposed, f"follower {replica_id} caught up")
        return PartitionRead(ErrorCode.NONE, result.records, plog.high_watermark, plog.last_stable_offset,
                             plog.log_start_offset)

    # ---------------------------------------------------------------- follower responses (4)

    def build_request(self, leader_id: int) -> FetchRequest | None:
        topics: dict[str, list] = {}
        for (topic, partition), (leader, epoch) in self.following.items():
            if leader != leader_id:
                continue
            plog = self.logs.get_log(topic, partition)
            if plog is None:
                continue
            topics.setdefault(topic, []).append(FetchRequest.FetchPartition(
                partition=partition, current_leader_epoch=epoch, fetch_offset=plog.log_end_offset,
                last_fetched_epoch=plog.leader_epochs.latest_epoch, log_start_offset=plog.log_start_offset,
                partition_max_bytes=self.settings.fetch_max_bytes))
        if not topics:
            return None
        return FetchRequest(replica_id=self.broker_id, max_wait_ms=self.settings.fetch_wait_max_ms, min_bytes=1,
                            max_bytes=self.settings.fetch_response_max_bytes, isolation_level=0, session_id=0,
                            session_epoch=-1,
                            topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()])

    def handle_response(self, leader_id: int, request: FetchRequest, response: FetchResponse) -> bool:
        if response.error_code:
            log.info("broker %d: fetch from %d failed: %s", self.broker_id, leader_id, ErrorCode(response.error_code).name)
            return False
        sent = {(t.topic, p.partition): p for t in request.topics for p in t.partitions}
        progress = False
        for t in response.responses:
            for data in t.partitions:
                key = (t.topic, data.partition_index)
                asked = sent.get(key)
                if asked is None or self.following.get(key) != (leader_id, asked.current_leader_epoch):
                    continue  # leadership moved while the fetch was out
                plog = self.logs.get_log(*key)
                if plog is None or plog.log_end_offset != asked.fetch_offset:
                    continue
                try:
                    progress |= self._apply_fetched(key, plog, data)
                except KafkaError as e:
                    if e.code is not ErrorCode.KAFKA_STORAGE_ERROR:  # a full disk is logged once, by its log dir
                        log.warning("broker %d: cannot apply data of %s-%d from leader %d: %s", self.broker_id,
                                    *key, leader_id, e)
        return progress

    def _apply_fetched(self, key: Key, plog: PartitionLog, data) -> bool:
        code = ErrorCode(data.error_code)
        if code == ErrorCode.OFFSET_OUT_OF_RANGE and data.log_start_offset > plog.log_end_offset:
            log.warning("%s-%d: the leader's log starts at %d, after this log's end: starting over there", *key,
                        data.log_start_offset)
            plog.truncate_fully_and_start_at(data.log_start_offset)
            self.events.truncated(*key, plog)
            return True
        if code != ErrorCode.NONE:
            return False
        d = data.diverging_epoch
        if d.epoch != -1 or d.end_offset != -1:
            offset, _ = truncation_offset(plog.leader_epochs, plog.log_end_offset, plog.high_watermark, d.epoch,
                                          d.end_offset)
            offset = max(offset, plog.log_start_offset)
            log.info("%s-%d: diverged from the leader at epoch %d (ends at %d there); truncating %d -> %d", *key,
                     d.epoch, d.end_offset, plog.log_end_offset, offset)
            plog.truncate_to(offset)
            self.events.truncated(*key, plog)
            return True
        records = data.records
        if records is not None and len(records):
            plog.append_as_follower(bytearray(records))
            self.events.appended(*key, plog)
        plog.update_high_watermark(min(data.high_watermark, plog.log_end_offset))
        if plog.log_start_offset < data.log_start_offset <= plog.high_watermark:
            plog.delete_records_before(data.log_start_offset)
        return True

    # ------------------------------------------------------------------------------- ISR (5)

    async def _maintain_isr(self) -> None:
        interval_ms = max(50, self.settings.replica_lag_time_max_ms / 2)
        while True:
            await self.clock.sleep(interval_ms)
            try:
                self.check_isr()
            except Exception:
                log.exception("ISR check failed")

    def check_isr(self) -> None:
        now = self.clock.monotonic_ms()
        for key, state in list(self.leaders.items()):
            plog = self.logs.get_log(*key)
            if plog is None:
                continue
            proposed = state.proposed_shrink(plog.log_end_offset, now, self.settings.replica_lag_time_max_ms)
            if proposed is not None:
                lagging = [r for r in state.isr if r not in proposed]
                self._write_isr(key, state, proposed, f"followers {lagging} lag more than "
                                f"replica.lag.time.max.ms={self.settings.replica_lag_time_max_ms}")

    def _write_isr(self, key: Key, state: LeaderPartitionState, isr: tuple[int, ...], why: str) -> None:
        state.pending = isr
        new = PartitionMetadata(key[1], self.broker_id, state.leader_epoch, state.replicas, isr, state.partition_epoch)
        log.info("%s-%d: ISR %s -> %s (%s)", *key, list(state.isr), list(isr), why)

        async def write() -> None:
            result: asyncio.Future = asyncio.get_running_loop().create_future()
            try:
                self.alter_isr(key[0], key[1], new, lambda ok: result.done() or result.set_result(ok))
                written = await result
            except Exception as e:  # ZooKeeper unreachable: try again later
                log.warning("%s-%d: ISR change not written: %r", *key, e)
                written = False
            if not written and self.leaders.get(key) is state and state.pending == isr:
                # Proposals wait while a change is pending: hold it a moment before the next try, or a
                # leader cut off from ZooKeeper would propose again on every follower fetch.
                await self.clock.sleep(ISR_RETRY_BACKOFF_MS)
                if self.leaders.get(key) is state and state.pending == isr:
                    state.pending = None

        self._spawn(write())

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------------------- acks (6)

    async def wait_for_acks(self, topic: str, partition: int, required_offset: int, timeout_ms: int,
                            min_insync: int) -> ErrorCode:
        key = (topic, partition)
        done: asyncio.Future = asyncio.get_running_loop().create_future()
        outcome: list[ErrorCode] = []

        def try_complete() -> bool:
            state = self.leaders.get(key)
            plog = self.logs.get_log(topic, partition)
            if state is None or plog is None:
                outcome.append(ErrorCode.NOT_LEADER_OR_FOLLOWER)
                return True
            if plog.high_watermark >= required_offset:
                outcome.append(ErrorCode.NONE if len(state.isr) >= min_insync
                               else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
                return True
            return False

        def complete(timed_out: bool) -> None:
            if not done.done():
                done.set_result(ErrorCode.REQUEST_TIMED_OUT if timed_out else outcome[-1])

        self.purgatory.watch(DelayedOperation(self.clock.monotonic_ms() + timeout_ms, try_complete, complete), [key])
        return await done


__all__ = ["AlterIsr", "Replication", "ReplicationSettings"]
