"""The replica manager: the partitions this broker hosts, and the one door to their logs.

Every read and write of partition data goes through here, whoever asks (Produce, Fetch, ListOffsets,
DeleteRecords, the coordinators' internal topics):

1. **Leadership.** A partition is served only by its leader: an unknown topic or partition is
   UNKNOWN_TOPIC_OR_PARTITION, another broker's partition NOT_LEADER_OR_FOLLOWER, a missing log
   KAFKA_STORAGE_ERROR. A request's ``current_leader_epoch`` (-1 = no check) older than the
   partition's is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH.
2. **Appends.** ``acks`` must be 0, 1 or -1 (INVALID_REQUIRED_ACKS); with acks=-1 an ISR smaller
   than ``min.insync.replicas`` fails with NOT_ENOUGH_REPLICAS before anything is written. The log
   validates and writes; then the ``appended`` event fires (not for an idempotent retry that wrote
   nothing): parked fetches wake, the flush policy looks, and later replication and metrics.
   Transaction markers (COMMIT/ABORT) are written with :meth:`write_txn_marker`, the same checks
   applying; coordinators' own batches are appended with ``from_client=False``.
3. **Reads** follow :mod:`tidelog.replica.fetch` (response budget, KIP-74, high watermark or last
   stable offset), and a fetch that finds too little parks in the purgatory (:class:`DelayedFetch`).
   Readers never get the log itself: records come as read results (:meth:`read_partitions`,
   :meth:`batches`), offsets as :class:`~tidelog.replica.local_logs.LogOffsets`
   (:meth:`leader_offsets`, :meth:`offset_for_timestamp`, :meth:`legacy_offsets`), sizes as
   :class:`~tidelog.replica.local_logs.LogSummary` (:meth:`leader_summary`); the figures of every
   local replica, leader or follower, are :attr:`local_logs`' (metrics, the console).
4. **Metadata changes** arrive from the metadata store (:meth:`apply_metadata`, a store subscriber):
   logs are created for new partitions this broker hosts, reconfigured when a topic's or the
   broker's configs change, and deleted with their topic (``deleted`` fires for each partition, so
   fetches parked on it answer at once). Nothing else creates or deletes logs.

Loop-only, not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.cluster.store import MetadataStore
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.config import TopicConfig
from tidelog.errors import ErrorCode, KafkaError
from tidelog.meter import PartitionTraffic
from tidelog.records import RecordBatchView
from tidelog.replica.events import LogEvents
from tidelog.replica.fetch import READ_COMMITTED, DelayedFetch, PartitionFetch, PartitionRead, readable_end
from tidelog.replica.local_logs import LocalLogs, LogOffsets, LogSummary
from tidelog.replica.purgatory import DelayedOperation, Purgatory
from tidelog.replica.replication import AlterIsr, Replication, ReplicationSettings
from tidelog.storage.log import LATEST_TIMESTAMP, AppendResult, PartitionLog
from tidelog.storage.log_manager import LogManager
from tidelog.storage.producer_state import ProducerStateEntry

log = logging.getLogger(__name__)

HIGH_WATERMARK = -1  # DeleteRecords: "up to the high watermark"


class ReplicaManager:
    def __init__(self, broker_id: int, logs: LogManager, store: MetadataStore, topic_configs: TopicConfigs,
                 clock: Clock, schedule: Callable[[float, Callable[[], None]], Any],
                 events: LogEvents | None = None, *, replication: ReplicationSettings | None = None,
                 alter_isr: AlterIsr | None = None, may_lead: Callable[[], bool] | None = None,
                 traffic: PartitionTraffic | None = None) -> None:
        self.broker_id = broker_id
        #: The logs themselves: for the replica layer and the composition root, never for readers.
        self.logs = logs
        #: The figures of every log on this broker (leader or follower), for metrics and the console.
        self.local_logs = LocalLogs(logs)
        self.store = store
        self.topic_configs = topic_configs
        self.clock = clock
        self.events = events or LogEvents()
        self.purgatory = Purgatory(clock, schedule)
        #: Bytes and records in and out per partition (None: metrics off).
        self.traffic = traffic
        self.events.on_appended(lambda topic, partition, _: self.purgatory.check((topic, partition)))
        self.events.on_deleted(lambda topic, partition: self.purgatory.check((topic, partition)))
        #: Cluster mode: followers, the ISR and the high watermark (None: a single node, where every
        #: partition has one replica and the high watermark follows the log end).
        self.replication = (Replication(broker_id, logs, lambda: self.image, self.events, self.purgatory, clock,
                                        replication, alter_isr) if replication is not None and alter_isr is not None
                            else None)
        self._started = False  # metadata changes wait until start(): the logs are still loading
        #: False while this broker may not act as leader (its ZooKeeper session expired)
        self.may_lead = may_lead or (lambda: True)
        store.subscribe(self.apply_metadata)

    @property
    def image(self) -> MetadataImage:
        return self.store.image

    # ---------------------------------------------------------------------------- leadership (1)

    def partition(self, topic: str, partition: int) -> PartitionMetadata:
        t = self.image.topics.get(topic)
        if t is None or not 0 <= partition < len(t.partitions):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition} does not exist")
        return t.partitions[partition]

    def partition_exists(self, topic: str, partition: int) -> bool:
        t = self.image.topics.get(topic)
        return t is not None and 0 <= partition < len(t.partitions)

    def _leader_log(self, topic: str, partition: int) -> PartitionLog:
        """The log of ``topic``-``partition`` if this broker leads it; KafkaError otherwise."""
        p = self.partition(topic, partition)
        if p.leader != self.broker_id or not self.may_lead():
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"broker {self.broker_id} does not lead {topic}-{partition}")
        plog = self.logs.get_log(topic, partition)
        if plog is None:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"no log for {topic}-{partition}")
        return plog

    def check_leader_epoch(self, topic: str, partition: int, requested: int) -> None:
        """Kafka's current-leader-epoch check (-1 = no check)."""
        if requested < 0:
            return
        epoch = self.partition(topic, partition).leader_epoch
        if requested > epoch:
            raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH, f"leader epoch {requested} is newer than {epoch}")
        if requested < epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH, f"leader epoch {requested} is older than {epoch}")

    def leader_epoch(self, topic: str, partition: int) -> int:
        return self.partition(topic, partition).leader_epoch

    # -------------------------------------------------------------------------------- append (2)

    def append_records(self, topic: str, partition: int, records, *, acks: int,
                       check: Callable[[Any, TopicConfig], None] | None = None, from_client: bool = True) -> AppendResult:
        """Append as leader; raises KafkaError (nothing written). ``check(records, config)``, the caller's
        own validation of the request's records (with the log's topic config), runs after the acks,
        leadership and ISR checks.
        ``from_client=False`` marks a coordinator's write (no sequence checks, Kafka's
        ``AppendOrigin.COORDINATOR``)."""
        if acks not in (0, 1, -1):
            raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or -1, not {acks}")
        plog, meta = self._writable_log(topic, partition, acks)
        if check is not None:
            check(records, plog.config)
        result = plog.append_as_leader(records, leader_epoch=meta.leader_epoch, from_client=from_client)
        if not result.duplicate:
            self.events.appended(topic, partition, plog)
            if self.traffic is not None:
                self.traffic.appended(topic, partition, len(records), result.record_count)
        return result

    def write_txn_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                         coordinator_epoch: int, *, commit: bool) -> AppendResult:
        """Write a COMMIT or ABORT marker for ``producer_id`` (WriteTxnMarkers; the transaction
        coordinator's one way to end a transaction in a partition). An acks=-1 write: leadership and
        ``min.insync.replicas`` are checked as for a produce. Raises KafkaError (nothing written):
        UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, INVALID_PRODUCER_EPOCH,
        TRANSACTION_COORDINATOR_FENCED."""
        plog, meta = self._writable_log(topic, partition, -1)
        result = plog.append_marker(producer_id, producer_epoch, coordinator_epoch, commit=commit,
                                    leader_epoch=meta.leader_epoch)
        self.events.appended(topic, partition, plog)
        return result

    def _writable_log(self, topic: str, partition: int, acks: int) -> tuple[PartitionLog, PartitionMetadata]:
        plog = self._leader_log(topic, partition)
        meta = self.partition(topic, partition)
        if acks == -1 and len(meta.isr) < plog.config.min_insync_replicas:
            raise KafkaError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"ISR has {len(meta.isr)} replicas, fewer than min.insync.replicas={plog.config.min_insync_replicas}",
            )
        return plog, meta

    # ------------------------------------------------------------------------- producer state

    def producer_states(self, topic: str, partition: int) -> list[ProducerStateEntry]:
        """The active producers of a partition this broker leads (DescribeProducers), by producer id."""
        plog = self._leader_log(topic, partition)
        return sorted(plog.producer_state.active_producers.values(), key=lambda e: e.producer_id)

    def producer_epoch(self, topic: str, partition: int, producer_id: int) -> int | None:
        """The epoch the partition (led here) last saw of ``producer_id``, or None. Raises KafkaError."""
        entry = self._leader_log(topic, partition).producer_state.last_entry(producer_id)
        return None if entry is None else entry.producer_epoch

    def has_ongoing_transaction(self, topic: str, partition: int, producer_id: int, producer_epoch: int) -> bool:
        """Whether the partition's log has an open transaction of this producer in this epoch: its
        later batches need no verification with the transaction coordinator (KIP-890)."""
        entry = self._leader_log(topic, partition).producer_state.last_entry(producer_id)
        return (entry is not None and entry.current_txn_first_offset is not None
                and entry.producer_epoch == producer_epoch)

    # ---------------------------------------------------------------------------------- read (3)

    def read_partitions(self, partitions: Iterable[PartitionFetch], max_bytes: int | None,
                        isolation_level: int) -> list[PartitionRead]:
        """Read every partition within the response budget ``max_bytes`` (None: no budget, the
        pre-v3 form); see :mod:`tidelog.replica.fetch`."""
        budget = max_bytes
        min_one_batch = True
        out = []
        for pf in partitions:
            limit = pf.max_bytes if budget is None else min(pf.max_bytes, budget)
            read = self._read(pf, limit, min_one_batch, isolation_level)
            if read.size:
                min_one_batch = False
                if budget is not None:
                    budget = max(0, budget - read.size)
            out.append(read)
        return out

    def _read(self, pf: PartitionFetch, limit: int, min_one_batch: bool, isolation_level: int) -> PartitionRead:
        if pf.topic is None:
            return PartitionRead(ErrorCode.UNKNOWN_TOPIC_ID)
        try:
            plog = self._leader_log(pf.topic, pf.partition)
            self.check_leader_epoch(pf.topic, pf.partition, pf.current_leader_epoch)
            end = readable_end(plog, isolation_level)
            if limit <= 0 and not min_one_batch:
                result = plog.read(pf.fetch_offset, 0, max_offset=end, min_one_batch=False)
            else:
                result = plog.read(pf.fetch_offset, max(limit, 1), max_offset=end, min_one_batch=min_one_batch)
        except KafkaError as e:
            hw = log_start = -1
            try:
                plog = self._leader_log(pf.topic, pf.partition)
                hw, log_start = plog.high_watermark, plog.log_start_offset
            except KafkaError:
                pass
            return PartitionRead(e.code, None, hw, hw, log_start, e.message)  # Kafka reports the HW as LSO here
        aborted = plog.aborted_in_read(pf.fetch_offset, result.records) if isolation_level == READ_COMMITTED else None
        return PartitionRead(ErrorCode.NONE, result.records, result.high_watermark, plog.last_stable_offset,
                             result.log_start_offset, aborted=aborted)

    def count_sent(self, partitions: Iterable[PartitionFetch], reads: Iterable[PartitionRead]) -> None:
        """Metrics (when on): the reads of a Fetch response about to be sent; records out are the
        offsets from the fetch offset to the end of the batches read."""
        traffic = self.traffic
        if traffic is None:
            return
        for pf, read in zip(partitions, reads):
            if read.records is not None and read.records.size and pf.topic is not None:
                plog = self.logs.get_log(pf.topic, pf.partition)
                records = plog.next_offset_after(read.records) - pf.fetch_offset if plog is not None else 0
                traffic.sent(pf.topic, pf.partition, read.records.size, max(0, records))

    async def wait_for_data(self, partitions: list[PartitionFetch], min_bytes: int, max_wait_ms: int,
                            isolation_level: int) -> bool:
        """Park until the partitions have ``min_bytes`` to read, or ``max_wait_ms`` passes. Returns
        True if it timed out."""
        logs = {}
        for pf in partitions:
            if pf.topic is not None:
                plog = self.logs.get_log(pf.topic, pf.partition)
                if plog is not None:
                    logs[(pf.topic, pf.partition)] = plog
        delayed = DelayedFetch(partitions, logs, min_bytes, isolation_level,
                               lambda topic: topic not in self.image.topics)
        done: asyncio.Future = asyncio.get_running_loop().create_future()

        def complete(timed_out: bool) -> None:
            if not done.done():
                done.set_result(timed_out)

        op = DelayedOperation(self.clock.monotonic_ms() + max_wait_ms, delayed.has_enough, complete)
        self.purgatory.watch(op, delayed.keys)
        return await done

    # --------------------------------------------------------------------------- replication

    def needs_acks_wait(self, topic: str, partition: int, acks: int) -> bool:
        """Whether an acks=all produce must wait for followers (cluster mode, a leader with an ISR)."""
        return acks == -1 and self.replication is not None and (topic, partition) in self.replication.leaders

    async def wait_for_acks(self, topic: str, partition: int, required_offset: int, timeout_ms: int) -> ErrorCode:
        """acks=all: wait until every ISR member has ``required_offset`` (:mod:`tidelog.replica.replication`)."""
        if self.replication is None:
            return ErrorCode.NONE
        min_isr = self.local_logs.min_insync_replicas(topic, partition) or 1
        return await self.replication.wait_for_acks(topic, partition, required_offset, timeout_ms, min_isr)

    def read_for_follower(self, replica_id: int, partitions: list[PartitionFetch], max_bytes: int) -> list[PartitionRead]:
        """A follower's fetch (Fetch with a replica id): reads up to the log end, divergence check first."""
        out = []
        budget = max_bytes
        for pf in partitions:
            if self.replication is None or pf.topic is None:
                out.append(PartitionRead(ErrorCode.NOT_LEADER_OR_FOLLOWER if pf.topic else ErrorCode.UNKNOWN_TOPIC_ID))
                continue

            def check(pf: PartitionFetch = pf) -> PartitionLog:
                assert pf.topic is not None
                plog = self._leader_log(pf.topic, pf.partition)
                self.check_leader_epoch(pf.topic, pf.partition, pf.current_leader_epoch)
                return plog

            read = self.replication.read_for_follower(replica_id, pf, max(budget, 1), check)
            budget = max(0, budget - read.size)
            out.append(read)
        return out

    async def wait_for_follower_data(self, partitions: list[PartitionFetch], max_wait_ms: int) -> None:
        """Park a follower's fetch until one of its partitions' logs grows past its fetch offset."""
        logs = {}
        for pf in partitions:
            if pf.topic is not None and (plog := self.logs.get_log(pf.topic, pf.partition)) is not None:
                logs[(pf.topic, pf.partition)] = plog
        delayed = DelayedFetch(partitions, logs, 1, 0, lambda topic: topic not in self.image.topics,
                               end=lambda plog: plog.log_end_offset)
        done: asyncio.Future = asyncio.get_running_loop().create_future()

        def complete(_timed_out: bool) -> None:
            if not done.done():
                done.set_result(None)

        self.purgatory.watch(DelayedOperation(self.clock.monotonic_ms() + max_wait_ms, delayed.has_enough, complete),
                             delayed.keys)
        await done

    def end_offset_for_epoch(self, topic: str, partition: int, current_leader_epoch: int,
                             leader_epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch on the leader: (the largest epoch <= ``leader_epoch`` this log knows, the
        offset where it ended), from the leader-epoch cache; raises KafkaError."""
        plog = self._leader_log(topic, partition)
        self.check_leader_epoch(topic, partition, current_leader_epoch)
        return plog.leader_epochs.end_offset_for(leader_epoch, plog.log_end_offset)

    # ------------------------------------------------------------------------ offsets and trims

    def leader_offsets(self, topic: str, partition: int, current_leader_epoch: int = -1) -> LogOffsets:
        """The offsets of a partition this broker leads (Kafka's ``fetchOffsetSnapshot``); raises
        KafkaError as every leader read does (rule 1)."""
        plog = self._leader_log(topic, partition)
        self.check_leader_epoch(topic, partition, current_leader_epoch)
        return LogOffsets.of(plog)

    def leader_summary(self, topic: str, partition: int) -> LogSummary:
        """The offsets, size on disk and segment count of a partition this broker leads; raises KafkaError."""
        return LogSummary.of(self._leader_log(topic, partition))

    def leader_config(self, topic: str, partition: int) -> TopicConfig:
        """The configs the log of a partition this broker leads applies (``max.message.bytes`` ...);
        raises KafkaError."""
        return self._leader_log(topic, partition).config

    def offset_for_timestamp(self, topic: str, partition: int, timestamp: int, current_leader_epoch: int = -1,
                             isolation_level: int = 0) -> tuple[int, int] | None:
        """ListOffsets on the leader: (timestamp, offset), or None when no record qualifies. LATEST (-1)
        is the last stable offset for read_committed, the high watermark otherwise; EARLIEST (-2) the
        log start offset; MAX_TIMESTAMP (-3) the record with the largest timestamp. Raises KafkaError."""
        plog = self._leader_log(topic, partition)
        self.check_leader_epoch(topic, partition, current_leader_epoch)
        if timestamp == LATEST_TIMESTAMP and isolation_level == READ_COMMITTED:
            return -1, plog.last_stable_offset
        return plog.offset_for_timestamp(timestamp)

    def legacy_offsets(self, topic: str, partition: int, timestamp: int, max_num_offsets: int,
                       current_leader_epoch: int = -1) -> list[int]:
        """ListOffsets v0 on the leader (``old_style_offsets``): for LATEST the high watermark and the
        segments' base offsets, newest first, at most ``max_num_offsets``; otherwise the one offset
        found for ``timestamp`` (the high watermark when none qualifies). Raises KafkaError."""
        plog = self._leader_log(topic, partition)
        self.check_leader_epoch(topic, partition, current_leader_epoch)
        return plog.legacy_offsets_before(timestamp, max_num_offsets)

    def batches(self, topic: str, partition: int, start_offset: int = -1) -> Iterator[RecordBatchView]:
        """Every batch of a partition this broker leads from ``start_offset`` (-1, or anything below the
        log start offset: from the log start offset) to the log end, in order: a coordinator loading
        its state. Leadership is checked once, before the first batch; raises KafkaError."""
        plog = self._leader_log(topic, partition)
        return plog.batches(max(start_offset, plog.log_start_offset))

    def is_committed(self, topic: str, partition: int, offset: int) -> bool:
        """Whether the high watermark has reached ``offset`` on a partition this broker leads (in
        cluster mode; a single node commits every append at once, so True)."""
        if self.replication is None:
            return True
        plog = self.logs.get_log(topic, partition)
        return (topic, partition) in self.replication.leaders and plog is not None and plog.high_watermark >= offset

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """DeleteRecords on the leader (Kafka's ``deleteRecordsOnLeader``); returns the new low
        watermark. Internal topics -> INVALID_TOPIC_EXCEPTION; a topic without ``delete`` in its
        cleanup.policy -> POLICY_VIOLATION; -1 means the high watermark; a negative offset ->
        OFFSET_OUT_OF_RANGE (the log refuses one above the high watermark)."""
        meta = self.image.topics.get(topic)
        if meta is not None and meta.is_internal:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete records of internal topic {topic}")
        plog = self._leader_log(topic, partition)
        if not plog.config.delete:
            raise KafkaError(ErrorCode.POLICY_VIOLATION,
                             f"Records of partition {topic}-{partition} can not be deleted due to the configured policy")
        target = plog.high_watermark if offset == HIGH_WATERMARK else offset
        if target < 0:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"The offset {target} for partition {topic}-{partition} is not valid")
        return plog.delete_records_before(target)

    # ----------------------------------------------------------------------- metadata changes (4)

    def start(self) -> None:
        """Bring the logs in line with the metadata loaded at start-up."""
        self._started = True
        image = self.image
        for topic in image.topics.values():
            if self.replication is not None:  # a cluster: a reassignment may have moved some away meanwhile
                for p in topic.partitions:
                    if self.broker_id not in p.replicas:
                        self._drop_moved_log(topic.name, p)
            self._host(image, topic, reconfigure=True)
        if self.replication is not None:
            self.replication.apply(image)

    def apply_metadata(self, old: MetadataImage, new: MetadataImage) -> None:
        if not self._started:  # a ZooKeeper watch while the logs load: start() applies the image then
            return
        broker_configs_changed = old.broker_configs is not new.broker_configs
        for name, topic in old.topics.items():
            current = new.topics.get(name)
            if current is None or current.topic_id != topic.topic_id:
                self._delete(topic)
        for name, topic in new.topics.items():
            previous = old.topics.get(name)
            if previous is topic and not broker_configs_changed:
                continue
            same_id = previous is not None and previous.topic_id == topic.topic_id
            reconfigure = broker_configs_changed or not same_id or previous.configs != topic.configs
            if same_id:
                self._drop_moved(previous, topic)
            self._host(new, topic, reconfigure=reconfigure)
        if self.replication is not None:
            self.replication.apply(new)

    def _host(self, image: MetadataImage, topic: TopicMetadata, *, reconfigure: bool) -> None:
        config = self.topic_configs.for_topic(image, topic.name)
        for p in topic.partitions:
            if self.broker_id not in p.replicas:
                continue
            plog = self.logs.get_log(topic.name, p.partition)
            if plog is None:
                plog = self.logs.get_or_create_log(topic.name, p.partition, config)
                self.events.created(topic.name, p.partition, plog)
            elif reconfigure:
                plog.update_config(config)
            if self.replication is None and p.leader == self.broker_id and p.leader_epoch > plog.leader_epochs.latest_epoch:
                plog.leader_epochs.assign(p.leader_epoch, plog.log_end_offset)  # as a cluster's new leader does

    def _drop_moved(self, previous: TopicMetadata, topic: TopicMetadata) -> None:
        """Partitions this broker is no longer a replica of (a reassignment moved them away): their logs go."""
        for before, after in zip(previous.partitions, topic.partitions):
            if self.broker_id in before.replicas and self.broker_id not in after.replicas:
                self._drop_moved_log(topic.name, after)

    def _drop_moved_log(self, topic: str, p: PartitionMetadata) -> None:
        if self.logs.delete_log(topic, p.partition):
            log.info("%s-%d moved to brokers %s: its log here is deleted", topic, p.partition, list(p.replicas))
            self.events.deleted(topic, p.partition)

    def _delete(self, topic: TopicMetadata) -> None:
        for p in topic.partitions:
            if self.logs.delete_log(topic.name, p.partition):
                self.events.deleted(topic.name, p.partition)


__all__ = ["HIGH_WATERMARK", "ReplicaManager"]
