"""Driver-side look-ups: which topic-partitions a query reads, and their offsets.

One confluent-kafka ``AdminClient`` answers everything: Metadata for the topic list, ListOffsets for
earliest, latest and by-timestamp offsets (one request per look-up, all partitions at once). As Spark's
``KafkaOffsetReaderAdmin``:

* ``subscribe`` reads the listed topics that exist (a topic created later is a new topic, read from its
  earliest offset); ``subscribePattern`` matches the whole topic name (Java's ``Pattern.matches``) and
  skips internal topics (``__consumer_offsets`` ...); ``assign`` reads exactly the given partitions;
* a look-up that fails is retried ``fetchOffset.numRetries`` times, ``fetchOffset.retryIntervalMs``
  apart;
* a timestamp with no record at or after it resolves to latest for an end, and for a start fails (or
  resolves to latest with ``startingOffsetsByTimestampStrategy=latest``).

Holds a client, so it is neither picklable nor thread-safe: the readers create it lazily, on the driver,
and drop it when they are pickled.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from confluent_kafka import IsolationLevel, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import OffsetSpec

from tidelog.spark.client import admin_config, create_admin
from tidelog.spark.offsets import EARLIEST, LATEST, PartitionOffsets, TopicPartition, format_partitions
from tidelog.spark.options import RangeLimit, SourceOptions

#: How long one admin request may take before it counts as a failed attempt.
REQUEST_TIMEOUT_S = 30.0

T = TypeVar("T")


class OffsetReader:
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._admin = create_admin(admin_config(options.kafka_config))
        self._isolation = (IsolationLevel.READ_COMMITTED if options.read_committed
                           else IsolationLevel.READ_UNCOMMITTED)

    # ------------------------------------------------------------------------------ partitions

    def topic_partitions(self) -> list[TopicPartition]:
        """The topic-partitions the query reads now, sorted."""
        return self._retry(self._topic_partitions)

    def _topic_partitions(self) -> list[TopicPartition]:
        strategy = self.options.strategy
        if strategy.kind == "assign":
            return sorted(set(strategy.assigned))
        metadata = self._admin.list_topics(timeout=REQUEST_TIMEOUT_S)
        if strategy.kind == "subscribe":
            wanted = set(strategy.topics)
            names = [name for name in metadata.topics if name in wanted]
        else:
            pattern = re.compile(strategy.pattern)
            names = [name for name in metadata.topics if not name.startswith("__") and pattern.fullmatch(name)]
        out = []
        for name in names:
            topic = metadata.topics[name]
            if topic.error is not None and not topic.partitions:
                continue
            out.extend(TopicPartition(name, p) for p in topic.partitions)
        return sorted(out)

    # --------------------------------------------------------------------------------- offsets

    def earliest(self, tps: Iterable[TopicPartition] | None = None) -> PartitionOffsets:
        return self._list_offsets(tps, lambda _: OffsetSpec.earliest())

    def latest(self, tps: Iterable[TopicPartition] | None = None) -> PartitionOffsets:
        return self._list_offsets(tps, lambda _: OffsetSpec.latest())

    def _list_offsets(self, tps: Iterable[TopicPartition] | None,
                      spec: Callable[[TopicPartition], OffsetSpec]) -> PartitionOffsets:
        def attempt() -> PartitionOffsets:
            wanted = self._topic_partitions() if tps is None else list(tps)
            return self._offsets({tp: spec(tp) for tp in wanted})
        return self._retry(attempt)

    def _offsets(self, specs: Mapping[TopicPartition, OffsetSpec]) -> PartitionOffsets:
        if not specs:
            return {}
        request = {KafkaTopicPartition(tp.topic, tp.partition): spec for tp, spec in specs.items()}
        futures = self._admin.list_offsets(request, isolation_level=self._isolation,
                                           request_timeout=REQUEST_TIMEOUT_S)
        return {TopicPartition(k.topic, k.partition): f.result().offset for k, f in futures.items()}

    def resolve(self, limit: RangeLimit, *, is_start: bool) -> PartitionOffsets:
        """Concrete offsets for every current topic-partition of the query (Spark's ``fetchPartitionOffsets``)."""
        return self._retry(lambda: self._resolve(limit, is_start))

    def _resolve(self, limit: RangeLimit, is_start: bool) -> PartitionOffsets:
        tps = self._topic_partitions()
        if limit.kind == "earliest":
            return self._offsets({tp: OffsetSpec.earliest() for tp in tps})
        if limit.kind == "latest":
            return self._offsets({tp: OffsetSpec.latest() for tp in tps})
        if limit.kind == "offsets":
            given = limit.offset_map
            if set(given) != set(tps):
                raise ValueError(
                    "If startingOffsets or endingOffsets names specific offsets, it must name every "
                    "topic-partition the query reads (use -1 for latest, -2 for earliest). Specified: "
                    f"{format_partitions(given)} Assigned: {format_partitions(tps)}")
            symbolic = {tp: OffsetSpec.latest() if o == LATEST else OffsetSpec.earliest()
                        for tp, o in given.items() if o in (LATEST, EARLIEST)}
            return {**given, **self._offsets(symbolic)}
        if limit.kind == "timestamps":
            timestamps = limit.offset_map
            if set(timestamps) != set(tps):
                raise ValueError(
                    "If startingOffsetsByTimestamp or endingOffsetsByTimestamp is given, it must name "
                    f"every topic-partition the query reads. Specified: {format_partitions(timestamps)} "
                    f"Assigned: {format_partitions(tps)}")
        else:
            timestamps = {tp: limit.timestamp_ms for tp in tps}
        found = self._offsets({tp: OffsetSpec.for_timestamp(ts) for tp, ts in timestamps.items()})
        missing = [tp for tp, offset in found.items() if offset < 0]
        if missing and is_start and not limit.no_match_latest:
            tp = min(missing)
            raise ValueError(f"No offset matched from request of topic-partition {tp} and timestamp "
                             f"{timestamps[tp]}.")
        if missing:
            found.update(self._offsets({tp: OffsetSpec.latest() for tp in missing}))
        return found

    # ---------------------------------------------------------------------------------- retries

    def _retry(self, fn: Callable[[], T]) -> T:
        attempts = max(1, self.options.fetch_offset_num_retries)
        for attempt in range(attempts):
            try:
                return fn()
            except KafkaException:
                if attempt == attempts - 1:
                    raise
                time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
        raise AssertionError("unreachable")


__all__ = ["OffsetReader"]
