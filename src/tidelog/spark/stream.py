"""``spark.readStream.format("tidelog")``: the micro-batch stream reader.

Spark calls ``initialOffset``, ``latestOffset``, ``partitions`` and ``commit`` on one long-lived instance
per query run, in a planner process on the driver; ``read`` runs on executors in a pickled copy that
never sees that state. Offsets are the canonical JSON of :mod:`tidelog.spark.offsets`.

Rules, with the reason for each:

1. **Initial offsets are resolved once per run and cached.** Spark asks for them more than once; a second
   "latest" resolution would skip the records produced in between.
2. **A new query whose start is not deterministic (``latest``, timestamps, JSON with -1) begins with an
   empty batch 0**: the first ``latestOffset`` of the run returns the initial offsets unchanged, so Spark
   journals them as batch 0's end. The Kafka source writes its initial offsets into the checkpoint
   instead; a Python source gets no checkpoint path. Without it, a crash between journaling batch 0 and
   committing it would replay batch 0 from a fresh "latest" and lose records.
3. **Replaying batch 0** after such a crash calls ``partitions(fresh initial offsets, journaled end)``:
   a start past the end is clamped to nothing to read for batch 0; any other start past its end is
   data loss (Spark's "offset was changed" check).
4. **Partitions that appear later** (a topic grows, or a new topic matches ``subscribePattern``) are
   read from their earliest offset; one that starts above 0 or vanishes is reported as data loss.
5. **Rate limits.** ``maxOffsetsPerTrigger`` caps a batch, split across partitions in proportion to
   their backlog. ``minOffsetsPerTrigger`` skips a trigger (returns the start) until that many records
   are waiting or ``maxTriggerDelay`` has passed since the last batch. Spark can only pass one read limit,
   so the default limit is ``ReadMinRows`` when a minimum is set and the maximum is applied here.
6. **Trigger.AvailableNow** pins the latest offsets at the first ``latestOffset`` after
   ``prepareForTriggerAvailableNow`` and never reads past them; it still honours ``maxOffsetsPerTrigger``
   (several batches) but not the minimum (waiting for more data would defeat "available now").
7. ``commit`` does nothing, as in the Kafka source: progress lives in the checkpoint only.

Not thread-safe (Spark calls it from one thread); holds an admin client, dropped when pickled.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from tidelog.spark.offset_reader import OffsetReader
from tidelog.spark.offsets import (
    OffsetRange,
    PartitionOffsets,
    backlog,
    format_partitions,
    from_json_offsets,
    rate_limit,
    to_json_offsets,
)
from tidelog.spark.options import SourceOptions
from tidelog.spark.reader import RangePartition, range_partitions, read_range, report_data_loss

log = logging.getLogger(__name__)

JsonOffsets = dict[str, dict[str, int]]


class TidelogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._reader: OffsetReader | None = None
        self._initial: JsonOffsets | None = None
        self._first_latest_done = False
        self._latest: PartitionOffsets | None = None
        self._available_now = False
        self._pinned: PartitionOffsets | None = None
        self._last_trigger_ms = 0.0

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_reader"] = None
        return state

    @property
    def offset_reader(self) -> OffsetReader:
        if self._reader is None:
            self._reader = OffsetReader(self.options)
        return self._reader

    # ------------------------------------------------------------------------------ offsets

    def initialOffset(self) -> JsonOffsets:
        if self._initial is None:
            offsets = self.offset_reader.resolve(self.options.starting, is_start=True)
            self._initial = to_json_offsets(offsets)
            log.info("initial offsets: %s", self._initial)
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True

    def latestOffset(self, start: JsonOffsets, limit: ReadLimit) -> JsonOffsets:
        first = not self._first_latest_done
        self._first_latest_done = True
        if (first and self._initial is not None and start == self._initial
                and not self.options.starting.deterministic):
            return start  # rule 2: batch 0 is empty and journals the initial offsets
        begin = from_json_offsets(start)
        if self._available_now:
            if self._pinned is None:
                self._pinned = self.offset_reader.latest()
            latest = dict(self._pinned)
        else:
            latest = self.offset_reader.latest()
        self._latest = latest
        return to_json_offsets(self._limit(begin, latest, limit))

    def _limit(self, begin: PartitionOffsets, latest: PartitionOffsets, limit: ReadLimit) -> PartitionOffsets:
        if isinstance(limit, ReadAllAvailable):
            return latest
        max_rows = self.options.max_offsets_per_trigger
        if isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows
        elif isinstance(limit, ReadMinRows) and not self._available_now and self._delay(begin, latest, limit.min_rows):
            return begin
        if max_rows is None:
            return latest
        new = [tp for tp in latest if tp not in begin]
        new_start = self.offset_reader.earliest(new) if new else {}
        return rate_limit(max_rows, begin, latest, new_start)

    def _delay(self, begin: PartitionOffsets, latest: PartitionOffsets, min_rows: int) -> bool:
        """Skip this trigger? (``minOffsetsPerTrigger`` and ``maxTriggerDelay``, as the Kafka source)."""
        now_ms = time.time() * 1000
        if now_ms - self._last_trigger_ms >= self.options.max_trigger_delay_ms:
            self._last_trigger_ms = now_ms
            return False
        if backlog(begin, latest) < min_rows:
            return True
        self._last_trigger_ms = now_ms
        return False

    def reportLatestOffset(self) -> JsonOffsets | None:
        return to_json_offsets(self._latest) if self._latest else None

    # --------------------------------------------------------------------------- planning

    def partitions(self, start: JsonOffsets, end: JsonOffsets) -> list[RangePartition]:
        begin, until = from_json_offsets(start), from_json_offsets(end)
        if self._pinned is not None:
            self._verify_available_now_end(until)
        fail = self.options.fail_on_data_loss
        new = [tp for tp in until if tp not in begin]
        if new:
            found = self.offset_reader.earliest(new)
            gone = set(new) - set(found)
            if gone:
                report_data_loss(f"Cannot find earliest offsets of {format_partitions(gone)}. "
                                 "Some data may have been missed", fail)
            for tp, offset in sorted(found.items()):
                if offset != 0:
                    report_data_loss(f"Added partition {tp} starts from {offset} instead of 0. "
                                     "Some data may have been missed", fail)
            log.info("partitions added: %s", found)
            begin.update(found)
        deleted = set(begin) - set(until)
        if deleted:
            report_data_loss(f"{format_partitions(deleted)} are gone. Some data may have been missed", fail)
        replaying_batch_0 = self._initial is not None and start == self._initial
        ranges = []
        for tp in sorted(until):
            if tp not in begin:
                continue
            first, last = begin[tp], until[tp]
            if first > last:
                if not replaying_batch_0:
                    report_data_loss(f"Partition {tp}'s offset was changed from {first} to {last}, "
                                     "some data may have been missed", fail)
                continue
            ranges.append(OffsetRange(tp, first, last))
        return range_partitions(ranges, self.options, role="executor")

    def _verify_available_now_end(self, until: PartitionOffsets) -> None:
        assert self._pinned is not None
        if set(until) != set(self._pinned):
            raise RuntimeError(
                "The topic-partitions of the end offset differ from those pinned for Trigger.AvailableNow: "
                f"pinned {format_partitions(self._pinned)}, end {format_partitions(until)}")
        beyond = [tp for tp, offset in until.items() if offset > self._pinned[tp]]
        if beyond:
            raise RuntimeError(
                "The end offset is past the offsets pinned for Trigger.AvailableNow for "
                f"{format_partitions(beyond)}: pinned {to_json_offsets(self._pinned)}, end {to_json_offsets(until)}")

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(partition)

    def commit(self, end: JsonOffsets) -> None:
        """Nothing to do: the query's progress is its checkpoint (rule 7)."""


__all__ = ["TidelogStreamReader"]
