"""The fault runs' checker: a clean history is valid, and each broken invariant (lost acknowledged
record, duplicate, stranger, reused offset, aborted data seen by read_committed, unequal replicas,
a final read that did not finish) is named; the history round-trips through its JSON lines."""

from __future__ import annotations

from tests.fault.lab.history import History, check


def base_history() -> History:
    h = History()
    for i, value in enumerate(["p0-0", "p0-1", "p0-2"]):
        h.add("p0", "invoke", "send", {"value": value, "partition": 0})
        h.add("p0", "ok", "send", {"value": value, "partition": 0, "offset": i})
    h.add("t0", "invoke", "txn", {"values": [[0, "t0-0"]], "intent": "commit"})
    h.add("t0", "ok", "txn", {"values": [[0, "t0-0"]], "intent": "commit", "outcome": "committed"})
    h.add("t0", "invoke", "txn", {"values": [[0, "t0-1"]], "intent": "abort"})
    h.add("t0", "ok", "txn", {"values": [[0, "t0-1"]], "intent": "abort", "outcome": "aborted"})
    return h


UNCOMMITTED = [[0, 0, "p0-0"], [0, 1, "p0-1"], [0, 2, "p0-2"], [0, 3, "t0-0"], [0, 5, "t0-1"]]
COMMITTED = [[0, 0, "p0-0"], [0, 1, "p0-1"], [0, 2, "p0-2"], [0, 3, "t0-0"]]


def finish(h: History, uncommitted=UNCOMMITTED, committed=COMMITTED) -> History:
    for isolation, records in (("read_uncommitted", uncommitted), ("read_committed", committed)):
        h.add(f"final-{isolation}", "invoke", "read", {"isolation": isolation})
        h.add(f"final-{isolation}", "ok", "read", {"isolation": isolation, "records": records})
    return h


def test_a_clean_history_is_valid():
    verdict = check(finish(base_history()))
    assert verdict.valid, verdict.violations
    assert verdict.stats["acknowledged"] == 3 and verdict.stats["committed"] == 1 and verdict.stats["aborted"] == 1


def test_a_lost_acknowledged_record_and_a_lost_commit_are_named():
    verdict = check(finish(base_history(), UNCOMMITTED[1:], COMMITTED[1:3]))
    assert not verdict.valid
    assert any("1 acknowledged record(s) lost: p0-0" in v for v in verdict.violations)
    assert any("committed transactional record(s) missing: t0-0" in v for v in verdict.violations)


def test_duplicates_and_strangers_are_named():
    verdict = check(finish(base_history(), [*UNCOMMITTED, [0, 6, "p0-1"], [0, 7, "ghost"]]))
    assert any("duplicated record(s) in the final read_uncommitted read: p0-1" in v for v in verdict.violations)
    assert any("record(s) nobody wrote: ghost" in v for v in verdict.violations)


def test_an_offset_seen_with_two_values_is_a_reused_offset():
    h = base_history()
    h.add("r", "ok", "poll", {"isolation": "read_uncommitted", "records": [[0, 2, "p0-1"]]})
    verdict = check(finish(h))
    assert any("offset(s) reused for different data: 0@2: 'p0-1' then 'p0-2'" in v for v in verdict.violations)


def test_read_committed_seeing_an_aborted_value_is_named():
    h = base_history()
    h.add("r-committed", "ok", "poll", {"isolation": "read_committed", "records": [[0, 5, "t0-1"]]})
    verdict = check(finish(h))
    assert verdict.violations == ["r-committed (read_committed) saw 1 aborted record(s): t0-1"]


def test_an_unknown_outcome_may_go_either_way_but_a_definite_failure_may_not_appear():
    h = base_history()
    h.add("p0", "invoke", "send", {"value": "p0-3", "partition": 0})
    h.add("p0", "info", "send", {"value": "p0-3", "partition": 0}, "_MSG_TIMED_OUT: timed out")
    assert check(finish(h, [*UNCOMMITTED, [0, 6, "p0-3"]])).valid
    assert check(finish(h)).valid
    h.add("p0", "invoke", "send", {"value": "p0-4", "partition": 0})
    h.add("p0", "fail", "send", {"value": "p0-4", "partition": 0}, "INVALID_RECORD")
    verdict = check(finish(h, [*UNCOMMITTED, [0, 7, "p0-4"]]))
    assert any("send failed definitely: p0-4" in v for v in verdict.violations)


def test_an_unfinished_final_read_and_replica_problems_make_the_run_invalid():
    h = base_history()
    h.add("final-read_uncommitted", "ok", "read", {"isolation": "read_uncommitted", "records": UNCOMMITTED})
    h.add("final-read_committed", "info", "read", {"isolation": "read_committed", "records": COMMITTED[:1]},
          "did not reach the high watermarks")
    verdict = check(h, ["replicas of t-0 differ on disk"])
    assert "the final read_committed read failed: did not reach the high watermarks" in verdict.violations
    assert "no final read_committed read" in verdict.violations
    assert "replicas of t-0 differ on disk" in verdict.violations


def test_the_history_round_trips_through_its_file_and_summarises(tmp_path):
    h = finish(base_history())
    h.add("nemesis", "info", "start", "kill -9 broker 2")
    again = History.read(h.write(tmp_path / "history.jsonl"))
    assert again.ops == h.ops
    summary = again.summary()
    assert summary[0].startswith("history: ") and "send ok 3" in summary[0]
    assert summary[1] == "transactions: aborted 1, committed 1"
    assert summary[-1].endswith("nemesis start: kill -9 broker 2")


def test_an_acknowledged_record_invisible_to_read_committed_and_records_above_the_high_watermark():
    h = base_history()
    for isolation, records in (("read_uncommitted", UNCOMMITTED), ("read_committed", COMMITTED[1:])):
        h.add(f"final-{isolation}", "ok", "read", {"isolation": isolation, "records": records, "ends": {"0": 5}})
    verdict = check(h)
    assert any("1 acknowledged non-transactional record(s) missing from the final read_committed read: p0-0" in v
               for v in verdict.violations)
    assert any("read got partition 0's records up to offset 5, at or above its high watermark 5" in v
               for v in verdict.violations)


def test_a_duplicate_resent_after_an_epoch_bump_is_counted_not_a_violation():
    """The disk audit (sequence_audit) names values the client re-sent under a new epoch; only those
    are excused, any other duplicate stays a violation."""
    read = [*UNCOMMITTED, [0, 6, "p0-1"], [0, 7, "p0-2"]]
    verdict = check(finish(base_history(), read, [*COMMITTED, [0, 6, "p0-1"], [0, 7, "p0-2"]]), None, {"p0-1"})
    assert not verdict.valid
    assert [v for v in verdict.violations if "duplicated" in v] == [
        "1 duplicated record(s) in the final read_uncommitted read: p0-2",
        "1 duplicated record(s) in the final read_committed read: p0-2"]
    assert verdict.stats["resent_after_epoch_bump"] == 1
    assert verdict.duplicates["read_uncommitted"] == ["p0-1", "p0-2"]
