"""The list-append transaction checker (:mod:`tests.fault.lab.elle`) on hand-built histories: each
anomaly it names is found in a history that has it, and a valid history is valid."""

from __future__ import annotations

from tests.fault.lab.elle import Txn, check


def committed(tid: str, writes=(), reads=None, process: str = "p") -> Txn:
    return Txn(tid, process, "committed", list(writes), dict(reads or {}))


def test_a_serial_history_is_valid_with_its_edges():
    t1 = committed("T1", [(0, "a1"), (1, "b1")])
    t2 = committed("T2", [(0, "a2")], reads={0: ["a1"], 1: ["b1"]})
    verdict = check([t1, t2], {0: ["a1", "a2"], 1: ["b1"]})
    assert verdict.valid, verdict.describe()
    assert verdict.stats["ww_edges"] == 1 and verdict.stats["wr_edges"] == 1


def test_g0_a_write_cycle_over_two_keys():
    # T2's append lands before T1's on key 0, after it on key 1: a delayed produce of T1 on key 0
    t1 = committed("T1", [(0, "a1"), (1, "b1")])
    t2 = committed("T2", [(0, "a2"), (1, "b2")])
    verdict = check([t1, t2], {0: ["a2", "a1"], 1: ["b1", "b2"]})
    assert list(verdict.anomalies) == ["G0"]
    assert "T1 -ww-> T2 -ww-> T1" in verdict.anomalies["G0"][0] or "T2 -ww-> T1 -ww-> T2" in verdict.anomalies["G0"][0]


def test_g1c_a_cycle_through_a_read():
    # T2 read T1's value, yet T2's append precedes T1's on key 1
    t1 = committed("T1", [(0, "a1"), (1, "b1")])
    t2 = committed("T2", [(1, "b2")], reads={0: ["a1"]})
    verdict = check([t1, t2], {0: ["a1"], 1: ["b2", "b1"]})
    assert "G1c" in verdict.anomalies and "G0" not in verdict.anomalies
    assert "-wr->" in verdict.anomalies["G1c"][0] and "-ww->" in verdict.anomalies["G1c"][0]


def test_g1c_two_transactions_reading_each_other():
    t1 = committed("T1", [(0, "a1")], reads={1: ["b1"]})
    t2 = committed("T2", [(1, "b1")], reads={0: ["a1"]})
    verdict = check([t1, t2], {0: ["a1"], 1: ["b1"]})
    assert list(verdict.anomalies) == ["G1c"]


def test_aborted_read_by_a_transaction_a_poller_and_the_final_read():
    t1 = Txn("T1", "p", "aborted", [(0, "a1")])
    t2 = committed("T2", [(1, "b1")], reads={0: ["a1"]})
    verdict = check([t1, t2], {0: ["a1"], 1: ["b1"]}, other_reads=[("r-committed", 0, ["a1"])])
    g1a = verdict.anomalies["G1a"]
    assert len(g1a) == 3 and any("T2 read a1" in a for a in g1a) and any("r-committed" in a for a in g1a)
    assert any("final read_committed" in a for a in g1a)


def test_torn_and_lost_transactions():
    t1 = committed("T1", [(0, "a1"), (1, "b1")])  # b1 lost
    t2 = Txn("T2", "p", "unknown", [(0, "a2"), (1, "b2")])  # half visible
    t3 = Txn("T3", "p", "unknown", [(0, "a3")])  # none visible: fine, it may have aborted
    t4 = committed("T4", [(1, "b4")])  # lost entirely
    verdict = check([t1, t2, t3, t4], {0: ["a1", "a2"], 1: []})
    assert len(verdict.anomalies["torn-transaction"]) == 2
    assert verdict.anomalies["lost-transaction"] == ["committed T4: none of 1 write(s) visible"]


def test_torn_read_skipping_a_committed_value_or_out_of_order():
    t1 = committed("T1", [(0, "a1"), (0, "a2"), (0, "a3")])
    skip = committed("R1", reads={0: ["a1", "a3"]})
    order = committed("R2", reads={0: ["a2", "a1"]})
    fine = committed("R3", reads={0: ["a2", "a3"]})
    verdict = check([t1, skip, order, fine], {0: ["a1", "a2", "a3"]})
    torn = verdict.anomalies["torn-read"]
    assert len(torn) == 2 and "skipped a2" in torn[0] and "out of the version order" in torn[1]


def test_duplicate_append_and_garbage_read():
    t1 = committed("T1", [(0, "a1")])
    verdict = check([t1, committed("R", reads={0: ["zz"]})], {0: ["a1", "a1"]})
    assert set(verdict.anomalies) == {"duplicate-append", "garbage-read"}


def test_a_longer_cycle_is_found_among_many_transactions():
    # A chain T0 -> T1 -> ... -> T49 on key 0 and one read closing it: T0 read T49's value.
    txns = [committed(f"T{i}", [(0, f"v{i}")]) for i in range(50)]
    txns[0].reads = {0: ["v49"]}
    verdict = check(txns, {0: [f"v{i}" for i in range(50)]})
    assert list(verdict.anomalies) == ["G1c"]
    assert verdict.anomalies["G1c"][0].count("->") == 50


def test_a_recorded_history_is_checked_against_its_final_read_committed_read():
    from tests.fault.lab.history import History
    from tests.fault.lab.txn_append import check_history, transactions

    h = History()
    t1 = {"values": [[0, "a-0"]], "intent": "commit", "reads": {}}
    h.add("a", "invoke", "txn", t1)
    h.add("a", "ok", "txn", {**t1, "outcome": "committed"})
    t2 = {"values": [[1, "b-0"]], "intent": "abort", "reads": {"0": ["a-0"]}}
    h.add("b", "invoke", "txn", t2)
    h.add("b", "ok", "txn", {**t2, "outcome": "aborted"})
    t3 = {"values": [[1, "b-1"]], "intent": "commit", "reads": {}}
    h.add("b", "invoke", "txn", t3)
    h.add("b", "info", "txn", t3, "timed out")
    h.add("c", "invoke", "txn", {"values": [[0, "c-0"]], "intent": "commit", "reads": {}})  # never completed
    h.add("r-committed", "ok", "poll", {"isolation": "read_committed", "records": [[1, 0, "b-0"]]})
    h.add("final-read_committed", "ok", "read", {"isolation": "read_committed",
                                                 "records": [[0, 0, "a-0"], [1, 1, "b-1"]]})
    assert [(t.id, t.status) for t in transactions(h)] == [
        ("a:0", "committed"), ("b:1", "aborted"), ("b:2", "unknown"), ("c:3", "unknown")]
    verdict = check_history(h)
    assert list(verdict.anomalies) == ["G1a"]
    assert verdict.anomalies["G1a"] == ["r-committed read b-0 (key 1) written by aborted b:1"]
    assert verdict.stats["wr_edges"] == 1
