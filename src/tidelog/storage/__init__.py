"""Tidelog's log storage: segmented, indexed, append-only partition logs on local disk.

Knows files and record batches (as bytes with a header view); knows nothing of sockets, requests,
coordinators or cluster metadata. The API is synchronous: cheap appends run on the event loop, while
fsync, recovery and compaction run in an executor.
"""

from tidelog.storage.checkpoints import CheckpointError, read_checkpoint, write_checkpoint
from tidelog.storage.cleaner import CleanerError, CleanPlan, CleanResult, LogCleaner
from tidelog.storage.index import CorruptIndexError, OffsetIndex, TimeIndex
from tidelog.storage.loader import load_log
from tidelog.storage.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    AppendResult,
    PartitionLog,
    ReadResult,
)
from tidelog.storage.log_manager import LogManager
from tidelog.storage.producer_state import ProducerStateManager
from tidelog.storage.retention import SegmentSummary, segments_to_delete
from tidelog.storage.segment import FileSlice, Segment

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AppendResult",
    "CheckpointError",
    "CleanPlan",
    "CleanResult",
    "CleanerError",
    "CorruptIndexError",
    "FileSlice",
    "LogCleaner",
    "LogManager",
    "OffsetIndex",
    "PartitionLog",
    "ProducerStateManager",
    "ReadResult",
    "Segment",
    "SegmentSummary",
    "TimeIndex",
    "load_log",
    "read_checkpoint",
    "segments_to_delete",
    "write_checkpoint",
]
