"""The coordinator runtime: Kafka's partition routing, timers on a ManualClock, write-then-replay,
failed appends that leave memory alone, and load as replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidelog.config import TopicConfig
from tidelog.coordinator.group.records import CoordinatorRecord, OffsetCommitKey, OffsetCommitValue
from tidelog.coordinator.group.serde import deserialize, serialize
from tidelog.coordinator.runtime import CoordinatorRuntime, Result, Timers, java_string_hash, partition_for
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records import RecordBatchBuilder
from tidelog.storage.loader import load_log
from tidelog.testing import ManualClock

from .conftest import SwitchableWriter


@pytest.mark.parametrize(("key", "hash_code"), [
    ("", 0), ("a", 97), ("hello", 99162322), ("consumerGroupId", -437965020),
    ("polygenelubricants", -(2**31)),  # Integer.MIN_VALUE: Utils.abs maps it to 0
    ("\U0001F600", 31 * 0xD83D + 0xDE00),  # hashed as two UTF-16 code units
])
def test_java_string_hash(key: str, hash_code: int) -> None:
    assert java_string_hash(key) == hash_code


def test_partition_for_is_kafkas() -> None:
    assert partition_for("consumerGroupId", 50) == 20  # the seed document's worked example
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 7) == 99162322 % 7


class Wakeups:
    def __init__(self) -> None:
        self.calls: list[tuple[float, object]] = []

    def __call__(self, delay_ms: float, fn):
        self.calls.append((delay_ms, fn))
        return self

    def cancel(self) -> None:
        self.calls.append(("cancelled", None))


def test_timers_fire_in_deadline_order_replace_and_cancel() -> None:
    clock, fired = ManualClock(), []
    timers = Timers(clock)
    timers.schedule("a", 300, lambda: fired.append("a"))
    timers.schedule("b", 100, lambda: fired.append("b"))
    timers.schedule("c", 200, lambda: fired.append("c"))
    timers.schedule("a", 150, lambda: fired.append("a2"))  # replaces a
    timers.cancel("c")
    clock.advance(99)
    assert timers.poll() == 0 and fired == []
    clock.advance(1000)
    assert timers.poll() == 2 and fired == ["b", "a2"] and len(timers) == 0


def test_timer_scheduled_while_polling_waits_for_the_next_poll() -> None:
    clock, fired = ManualClock(), []
    timers = Timers(clock)
    timers.schedule("x", 0, lambda: timers.schedule("y", 0, lambda: fired.append("y")))
    assert timers.poll() == 1 and fired == []
    assert timers.poll() == 1 and fired == ["y"]


def test_timers_arm_one_loop_wakeup_for_the_earliest_deadline() -> None:
    clock, wakeups = ManualClock(), Wakeups()
    timers = Timers(clock, wakeups)
    timers.schedule("late", 500, lambda: None)
    timers.schedule("later", 900, lambda: None)
    assert [d for d, _ in wakeups.calls] == [500]
    timers.schedule("soon", 100, lambda: None)
    assert [d for d, _ in wakeups.calls] == [500, "cancelled", 100]
    clock.advance(100)
    wakeups.calls[-1][1]()  # the loop fires the wakeup
    assert "soon" not in timers and wakeups.calls[-1][0] == 400


@pytest.fixture
def runtime_env(tmp_path: Path):
    clock = ManualClock()
    plog = load_log(tmp_path / "p-0", "__consumer_offsets", 0, TopicConfig(cleanup_policy="compact"), clock)
    writer = SwitchableWriter({0: plog})
    replayed: list[tuple[int, CoordinatorRecord]] = []
    runtime = CoordinatorRuntime(clock, writer, lambda p, off, pid, rec: replayed.append((off, rec)), serialize,
                                 deserialize)
    return runtime, writer, plog, replayed


def _record(offset: int) -> CoordinatorRecord:
    return CoordinatorRecord(OffsetCommitKey("g", "t", 0), OffsetCommitValue(offset, "", 1))


def test_run_appends_then_replays_then_answers(runtime_env) -> None:
    runtime, _, plog, replayed = runtime_env
    appended: list[int] = []
    result = Result([_record(1), _record(2)], "ok", on_appended=lambda: appended.append(plog.log_end_offset))
    assert runtime.apply(0, lambda: result) == "ok"
    assert [off for off, _ in replayed] == [0, 1] and appended == [2]
    assert runtime.apply(0, lambda: Result([_record(3)], "no replay", replay=False)) == "no replay"
    assert len(replayed) == 2 and plog.log_end_offset == 3


def test_failed_append_replays_nothing_and_normalises_the_error(runtime_env) -> None:
    runtime, writer, plog, replayed = runtime_env
    writer.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    failures: list[ErrorCode] = []
    with pytest.raises(KafkaError) as e:
        runtime.apply(0, lambda: Result([_record(1)], "x", on_failed=lambda err: failures.append(err.code),
                                      on_appended=lambda: failures.append("appended")))
    assert e.value.code == ErrorCode.NOT_COORDINATOR and failures == [ErrorCode.NOT_COORDINATOR]
    assert replayed == [] and plog.log_end_offset == 0


def test_load_replays_every_record_and_skips_unknown_types(runtime_env) -> None:
    runtime, _, plog, replayed = runtime_env
    runtime.apply(0, lambda: Result([_record(1), _record(2)]))
    junk = RecordBatchBuilder(base_offset=0)
    junk.append(0, b"\x00\x63junk", b"v")  # key version 99
    plog.append_as_leader(bytearray(junk.build()))
    runtime.apply(0, lambda: Result([CoordinatorRecord(OffsetCommitKey("g", "t", 0))]))
    replayed.clear()
    assert runtime.load(0) == 3
    assert [(off, rec.value is None) for off, rec in replayed] == [(0, False), (1, False), (3, True)]


def test_timer_operations_write_their_results(runtime_env) -> None:
    runtime, _, plog, replayed = runtime_env
    runtime.schedule("k", 50, 0, lambda: Result([_record(5)]))
    runtime.clock.advance(50)
    assert runtime.poll() == 1 and plog.log_end_offset == 1 and len(replayed) == 1
