"""What a reader may know of the partition logs on this broker: offsets and figures, never the log.

Handlers, the TubeMQ front end, the console, metrics and the coordinators read partition data
through :class:`tidelog.replica.manager.ReplicaManager` (records, leader-checked offsets) and the
figures here; none of them holds a :class:`~tidelog.storage.log.PartitionLog`. What they get:

* :class:`LogOffsets` -- the four offsets of a log at one moment (Kafka's ``LogOffsetSnapshot``):
  ``log_start_offset <= last_stable_offset <= high_watermark <= log_end_offset``;
* :class:`LogSummary` -- those plus its size on disk and segment count (metrics, the console);
* :class:`LogDirDescription` -- one log dir's partitions and space (DescribeLogDirs);
* :class:`LocalLogs` -- these figures for every replica this broker hosts, leader or follower
  (metrics, the console's rates). Leader-only reads are the replica manager's.

Loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from tidelog.storage.log import PartitionLog
from tidelog.storage.log_manager import LogManager

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LogOffsets:
    """A partition log's offsets at one moment (Kafka's ``LogOffsetSnapshot``)."""

    log_start_offset: int  # the first offset a reader may ask for (retention and DeleteRecords move it)
    high_watermark: int  # read_uncommitted consumers read up to here (exclusive)
    last_stable_offset: int  # read_committed consumers read up to here (exclusive)
    log_end_offset: int  # the offset the next appended record gets

    @classmethod
    def of(cls, plog: PartitionLog) -> LogOffsets:
        return cls(plog.log_start_offset, plog.high_watermark, plog.last_stable_offset, plog.log_end_offset)


@dataclass(frozen=True, slots=True)
class LogSummary:
    """One partition log's figures: its offsets, its size on disk and how many segments hold it."""

    topic: str
    partition: int
    offsets: LogOffsets
    size_bytes: int
    segment_count: int

    @classmethod
    def of(cls, plog: PartitionLog) -> LogSummary:
        return cls(plog.topic, plog.partition, LogOffsets.of(plog), plog.size, plog.segment_count)


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    """One log dir (DescribeLogDirs): its absolute path, the sizes of the partitions it holds, by topic
    then partition, and its file system's space; ``error`` set (and no figures) when it cannot be read."""

    path: str
    partition_sizes: dict[str, dict[int, int]] = field(default_factory=dict)  # topic -> partition -> bytes
    total_bytes: int = -1
    usable_bytes: int = -1
    error: OSError | None = None


@dataclass(frozen=True, slots=True)
class LogDirState:
    """A log dir's free space and whether writes to it fail (a full disk), for metrics."""

    path: str
    failing: bool
    free_bytes: int | None  # None when the file system cannot be asked


class LocalLogs:
    """The figures of every partition log on this broker, leader or follower (read-only)."""

    def __init__(self, logs: LogManager) -> None:
        self._logs = logs

    def summaries(self) -> Iterator[LogSummary]:
        """Every open log's figures, in (topic, partition) order."""
        for _, plog in sorted(self._logs.logs(), key=lambda item: item[0]):
            if not plog.closed:
                yield LogSummary.of(plog)

    def offsets(self, topic: str, partition: int) -> LogOffsets | None:
        """The offsets of this broker's replica of the partition; None when it hosts no open log of it."""
        plog = self._logs.get_log(topic, partition)
        return None if plog is None or plog.closed else LogOffsets.of(plog)

    def min_insync_replicas(self, topic: str, partition: int) -> int | None:
        """The partition's ``min.insync.replicas`` as its log here is configured; None without a log here."""
        plog = self._logs.get_log(topic, partition)
        return None if plog is None else plog.config.min_insync_replicas

    def describe_dirs(self, wanted: Iterable[tuple[str, int]] | None = None) -> list[LogDirDescription]:
        """Every log dir with the partitions it holds (only ``wanted`` ones when given) and its space."""
        want = None if wanted is None else set(wanted)
        sizes: dict[str, dict[str, dict[int, int]]] = {}
        for (topic, partition), plog in self._logs.logs():
            if want is not None and (topic, partition) not in want:
                continue
            log_dir = self._logs.log_dir_of(topic, partition)
            if log_dir is None:
                continue
            by_topic = sizes.setdefault(os.path.abspath(log_dir), {})
            by_topic.setdefault(topic, {})[partition] = plog.size
        out = []
        for log_dir in self._logs.log_dirs:
            path = os.path.abspath(log_dir)
            try:
                st = os.statvfs(path)
            except OSError as e:
                log.warning("cannot describe log dir %s: %s", path, e)
                out.append(LogDirDescription(path, error=e))
                continue
            out.append(LogDirDescription(path, sizes.get(path, {}), st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize))
        return out

    def dir_states(self) -> list[LogDirState]:
        """Each log dir's "full" condition and free bytes."""
        out = []
        for log_dir, space in self._logs.space.items():
            try:
                free: int | None = space.free_bytes()
            except OSError:
                free = None
            out.append(LogDirState(str(log_dir), space.failing, free))
        return out


__all__ = ["LocalLogs", "LogDirDescription", "LogDirState", "LogOffsets", "LogSummary"]
