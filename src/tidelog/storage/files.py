"""Every file and directory name of the storage layer, in one place.

Layout of a log directory (``log.dirs`` entry)::

    <log dir>/
      .lock                                 held (flock) by the broker using the dir; holds its pid
      .kafka_cleanshutdown                  present only after a clean shutdown
      recovery-point-offset-checkpoint      per partition: offset up to which data is fsync'ed
      log-start-offset-checkpoint           per partition: log start offset (DeleteRecords, retention)
      cleaner-offset-checkpoint             per partition: offset up to which the log is compacted
      <topic>-<partition>/                  one directory per topic-partition
        00000000000000000000.log            segment data: record batches exactly as appended
        00000000000000000000.index          sparse offset index of that segment
        00000000000000000000.timeindex      time index of that segment
        00000000000000000000.txnindex       aborted transactions of that segment (later)
        00000000000000000000.snapshot       producer-state snapshot at that offset
        *.deleted                           segment files waiting for removal (retention)
        *.cleaned / *.swap                  compaction output before / during the swap
      <topic>-<partition>.<id>-delete/      a deleted partition, renamed at once, removed off the loop

A segment file is named by its base offset, zero-padded to 20 digits. Pure functions.
"""

from __future__ import annotations

from pathlib import Path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TMP_SUFFIX = ".tmp"

SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
DELETE_DIR_SUFFIX = "-delete"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"


def offset_prefix(offset: int) -> str:
    return f"{offset:020d}"


def segment_file(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / (offset_prefix(base_offset) + suffix)


def log_file(directory: Path, base_offset: int) -> Path:
    return segment_file(directory, base_offset, LOG_SUFFIX)


def index_file(directory: Path, base_offset: int) -> Path:
    return segment_file(directory, base_offset, INDEX_SUFFIX)


def time_index_file(directory: Path, base_offset: int) -> Path:
    return segment_file(directory, base_offset, TIME_INDEX_SUFFIX)


def txn_index_file(directory: Path, base_offset: int) -> Path:
    return segment_file(directory, base_offset, TXN_INDEX_SUFFIX)


def snapshot_file(directory: Path, offset: int) -> Path:
    return segment_file(directory, offset, SNAPSHOT_SUFFIX)


def parse_offset_file(path: Path) -> tuple[int, str] | None:
    """(offset, full suffix) of a segment/snapshot file name, e.g. ``(42, ".log.deleted")``; else None."""
    name = path.name
    head, sep, _ = name.partition(".")
    if not sep or len(head) != 20 or not head.isdigit():
        return None
    return int(head), name[len(head) :]


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def partition_dir(log_dir: Path, topic: str, partition: int) -> Path:
    return log_dir / partition_dir_name(topic, partition)


def deleted_partition_dir(log_dir: Path, topic: str, partition: int, unique_id: str) -> Path:
    """Where a deleted partition's directory is renamed before its files are removed (Kafka's
    ``<topic>-<partition>.<id>-delete``); never parsed as a live partition."""
    return log_dir / f"{partition_dir_name(topic, partition)}.{unique_id}{DELETE_DIR_SUFFIX}"


def is_deleted_partition_dir(name: str) -> bool:
    return name.endswith(DELETE_DIR_SUFFIX) and "." in name


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) from ``<topic>-<partition>``; None for other directories."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        return None
    return topic, int(part)


__all__ = [
    "CLEANED_SUFFIX",
    "CLEANER_OFFSET_CHECKPOINT",
    "CLEAN_SHUTDOWN_FILE",
    "DELETED_SUFFIX",
    "DELETE_DIR_SUFFIX",
    "INDEX_SUFFIX",
    "LOCK_FILE",
    "LOG_START_OFFSET_CHECKPOINT",
    "LOG_SUFFIX",
    "RECOVERY_POINT_CHECKPOINT",
    "SEGMENT_SUFFIXES",
    "SNAPSHOT_SUFFIX",
    "SWAP_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "TMP_SUFFIX",
    "TXN_INDEX_SUFFIX",
    "deleted_partition_dir",
    "index_file",
    "is_deleted_partition_dir",
    "log_file",
    "offset_prefix",
    "parse_offset_file",
    "parse_partition_dir",
    "partition_dir",
    "partition_dir_name",
    "segment_file",
    "snapshot_file",
    "time_index_file",
    "txn_index_file",
]
