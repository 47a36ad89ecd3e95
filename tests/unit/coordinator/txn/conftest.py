"""A transaction coordinator on real partition logs in tmp_path and a ManualClock.

``__transaction_state`` has :data:`STATE_PARTITIONS` partitions; markers go to real data logs
(``TxnHarness.data(topic, partition)``) through the same producer-state rules as the broker's.
``Crash`` lets a test stop the coordinator at any write (before or after it reaches the log), and
``restart()`` builds a new coordinator that loads the same logs, as a broker restart does.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tidelog.config import TopicConfig
from tidelog.coordinator.runtime import LogWriter
from tidelog.coordinator.txn import TransactionCoordinator, TransactionVersion, TxnConfig
from tidelog.coordinator.txn.coordinator import TRANSACTION_STATE_TOPIC
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import RecordBatchBuilder
from tidelog.storage.loader import load_log
from tidelog.storage.log import PartitionLog
from tidelog.testing import ManualClock

STATE_PARTITIONS = 4
T0 = 1_700_000_000_000
TIMEOUT_MS = 60_000


class Crash(Exception):
    """The process died here."""


class StateWriter(LogWriter):
    """The real writer of ``__transaction_state``; ``fail_with`` makes appends fail as a lost
    leadership would, ``crash_before`` / ``crash_after`` (a count of appends) stop the process."""

    def __init__(self, logs: dict[int, PartitionLog]) -> None:
        super().__init__(logs.__getitem__)
        self.fail_with: ErrorCode | None = None
        self.appends = 0
        self.crash_before: int | None = None
        self.crash_after: int | None = None

    def append(self, partition: int, batch: bytes) -> int:
        if self.fail_with is not None:
            raise KafkaError(self.fail_with, "partition unavailable")
        self.appends += 1
        if self.crash_before == self.appends:
            raise Crash(f"before state write {self.appends}")
        offset = super().append(partition, batch)
        if self.crash_after == self.appends:
            raise Crash(f"after state write {self.appends}")
        return offset


class MarkerLogs:
    """Data partitions and the marker writer the coordinator uses: a marker goes into the real log
    (producer-state checks included); ``fail`` gives chosen partitions an error instead, and
    ``crash_before`` / ``crash_after`` stop the process at the n-th marker."""

    def __init__(self, root: Path, clock: ManualClock) -> None:
        self.root = root
        self.clock = clock
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self.fail: dict[tuple[str, int], ErrorCode] = {}
        self.written: list[tuple[str, int, int, int, int, bool]] = []
        self.count = 0
        self.crash_before: int | None = None
        self.crash_after: int | None = None

    def log(self, topic: str, partition: int) -> PartitionLog:
        tp = (topic, partition)
        if tp not in self.logs:
            self.logs[tp] = load_log(self.root / f"{topic}-{partition}", topic, partition, TopicConfig(), self.clock)
        return self.logs[tp]

    def write(self, topic: str, partition: int, producer_id: int, epoch: int, coordinator_epoch: int,
              commit: bool) -> ErrorCode:
        if (topic, partition) in self.fail:
            return self.fail[(topic, partition)]
        self.count += 1
        if self.crash_before == self.count:
            raise Crash(f"before marker {self.count}")
        try:
            self.log(topic, partition).append_marker(producer_id, epoch, coordinator_epoch, commit=commit)
        except KafkaError as e:
            return e.code
        self.written.append((topic, partition, producer_id, epoch, coordinator_epoch, commit))
        if self.crash_after == self.count:
            raise Crash(f"after marker {self.count}")
        return ErrorCode.NONE

    def reopen(self) -> None:
        """Close and load every data log again (what a restart sees on disk)."""
        for tp, plog in list(self.logs.items()):
            plog.close()
            self.logs[tp] = load_log(self.root / f"{tp[0]}-{tp[1]}", tp[0], tp[1], TopicConfig(), self.clock)


def txn_batch(producer_id: int, epoch: int, seq: int = 0, n: int = 2) -> bytearray:
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=seq,
                                 is_transactional=True)
    for i in range(n):
        builder.append(T0 + i, b"k%d" % i, b"v")
    return bytearray(builder.build())


class TxnHarness:
    def __init__(self, tmp_path: Path, **config) -> None:
        self.tmp_path = tmp_path
        self.clock = ManualClock(wall_ms=T0)
        self.state_logs = {p: self._state_log(p) for p in range(STATE_PARTITIONS)}
        self.writer = StateWriter(self.state_logs)
        self.data = MarkerLogs(tmp_path / "data", self.clock)
        self.ids = itertools.count(1000)
        defaults = dict(num_partitions=STATE_PARTITIONS, transaction_max_timeout_ms=900_000,
                        abort_timed_out_transactions_interval_ms=10_000)
        defaults.update(config)
        self.config = TxnConfig(**defaults)
        self.coordinator = self._new()

    def _state_log(self, p: int) -> PartitionLog:
        return load_log(self.tmp_path / f"{TRANSACTION_STATE_TOPIC}-{p}", TRANSACTION_STATE_TOPIC, p,
                        TopicConfig(cleanup_policy="compact"), self.clock)

    def _new(self) -> TransactionCoordinator:
        c = TransactionCoordinator(self.config, self.clock, self.writer, lambda: next(self.ids), self.data.write)
        c.load(range(STATE_PARTITIONS))
        return c

    def restart(self) -> TransactionCoordinator:
        """A new coordinator over the same logs (re-read from disk), as after a crash."""
        self.coordinator.close()
        for p, plog in self.state_logs.items():
            plog.close()
            self.state_logs[p] = self._state_log(p)
        self.writer = StateWriter(self.state_logs)
        self.data.reopen()
        self.data.crash_before = self.data.crash_after = None
        self.coordinator = self._new()
        return self.coordinator

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        for _ in range(50):
            if not self.coordinator.poll():
                return
        raise AssertionError("timers keep firing")

    # ------------------------------------------------------------------------------ a producer

    def init(self, txn_id: str = "tx", timeout_ms: int = TIMEOUT_MS, expected=None) -> tuple[int, int]:
        result = self.coordinator.init_producer_id(txn_id, timeout_ms, expected)
        assert result.error == ErrorCode.NONE, result
        return result.producer_id, result.producer_epoch

    def begin(self, txn_id: str, pid: int, epoch: int, partitions=(("t", 0), ("t", 1)), *,
              version: TransactionVersion = TransactionVersion.TV_0) -> None:
        """Add the partitions and write a transactional batch to each, as a producer does."""
        assert self.coordinator.add_partitions(txn_id, pid, epoch, partitions, version) == ErrorCode.NONE
        for topic, partition in partitions:
            self.data.log(topic, partition).append_as_leader(txn_batch(pid, epoch))

    def markers(self, topic: str, partition: int) -> list[tuple[int, int, bool]]:
        """(producer id, epoch, commit) of each marker in a data log, in order."""
        from tidelog.records import decode_control_batch
        out = []
        for view in self.data.log(topic, partition).batches():
            if view.is_control_batch:
                out.append((view.producer_id, view.producer_epoch, decode_control_batch(view).is_commit))
        return out


@pytest.fixture
def txn(tmp_path: Path) -> TxnHarness:
    return TxnHarness(tmp_path)
