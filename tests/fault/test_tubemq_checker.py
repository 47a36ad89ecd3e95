"""The TubeMQ fault run's own checkers (:mod:`tests.fault.lab.tubemq_workload`) on hand-built
histories: a duplicate that no unknown outcome explains, more copies than sends, a consumer resuming
below the acknowledged commit or above every commit, each found; a retried send's second copy, a
resume at an unacknowledged commit and a clean run are valid. The whole checker
(:func:`check_tubemq`) also finds a lost acknowledged message and a poll-skip through the lab's
checkers."""

from __future__ import annotations

from tests.fault.lab.history import History
from tests.fault.lab.tubemq_workload import check_duplicates, check_resumes, check_tubemq


def send(h: History, value: str, outcome: str = "ok", partition: int = 0, offset: int | None = None) -> None:
    h.add("p", "invoke", "send", {"value": value, "partition": partition})
    h.add("p", outcome, "send", {"value": value, "partition": partition,
                                 **({"offset": offset} if outcome == "ok" else {})},
          None if outcome == "ok" else "ConnectionClosed")


def final(h: History, values: list[str], partition: int = 0) -> None:
    records = [[partition, i, v] for i, v in enumerate(values)]
    ends = {str(partition): len(values)}
    for isolation in ("read_uncommitted", "read_committed"):
        h.add(f"final-{isolation}", "invoke", "read", {"isolation": isolation})
        h.add(f"final-{isolation}", "ok", "read", {"isolation": isolation, "records": records, "ends": ends})


def commit(h: History, offset: int, outcome: str = "ok", process: str = "c0") -> None:
    h.add(process, "invoke", "commit", {"offsets": {"0": offset}})
    h.add(process, outcome, "commit", {"offsets": {"0": offset}})


def resume(h: History, offset: int, process: str = "c1") -> None:
    h.add(process, "info", "resume", {"partition": 0, "offset": offset})


def poll(h: History, *offsets: int, process: str = "c0") -> None:
    h.add(process, "ok", "poll", {"isolation": "read_committed",
                                  "records": [[0, o, f"v{o}"] for o in offsets]})


def test_a_retry_after_an_unknown_outcome_explains_a_second_copy():
    h = History()
    send(h, "v0", "info")
    send(h, "v0", "ok", offset=1)
    final(h, ["v0", "v0"])
    violations, explained = check_duplicates(h)
    assert violations == [] and explained == {"v0"}


def test_a_duplicate_of_a_send_acknowledged_at_once_is_found():
    h = History()
    send(h, "v0", "ok", offset=0)
    final(h, ["v0", "v0"])
    violations, explained = check_duplicates(h)
    assert explained == set()
    assert len(violations) == 1 and "v0 x2 (no send of it had an unknown outcome)" in violations[0]


def test_more_copies_than_sends_is_found_even_after_an_unknown_outcome():
    h = History()
    send(h, "v0", "info")
    send(h, "v0", "ok", offset=1)
    final(h, ["v0", "v0", "v0"])
    violations, _ = check_duplicates(h)
    assert len(violations) == 1 and "v0 x3 (sent 2 time(s))" in violations[0]


def test_a_resume_below_the_acknowledged_commit_is_a_regression():
    h = History()
    commit(h, 5)
    resume(h, 3)
    problems = check_resumes(h)
    assert len(problems) == 1 and "resumed partition 0 at 3, below the acknowledged commit 5" in problems[0]


def test_a_resume_above_every_commit_is_a_skip():
    h = History()
    commit(h, 5)
    resume(h, 8)
    problems = check_resumes(h)
    assert len(problems) == 1 and "above every commit (5)" in problems[0]


def test_a_resume_at_an_unacknowledged_commit_or_at_the_acknowledged_one_is_valid():
    h = History()
    resume(h, 0)  # nothing committed yet: the log start
    commit(h, 5)
    commit(h, 9, "info")  # the broker died before answering: it may or may not be there
    resume(h, 9)
    resume(h, 5, process="c2")
    assert check_resumes(h) == []


def test_the_whole_checker_finds_a_lost_message_and_a_poll_skip_and_passes_a_clean_run():
    def history(lose: bool, skip: bool) -> History:
        h = History()
        for i in range(4):
            send(h, f"v{i}", offset=i)
        h.add("c0", "info", "assign", {"partitions": [0]})
        resume(h, 0, process="c0")
        poll(h, 0, 1)
        commit(h, 2)
        poll(h, 3) if skip else poll(h, 2, 3)
        final(h, ["v0", "v1", "v2"] if lose else ["v0", "v1", "v2", "v3"])
        return h

    clean = check_tubemq(history(False, False), {"c0"})
    assert clean.valid, clean.describe()
    assert clean.stats["acknowledged"] == 4 and clean.stats["polled"] == 4
    lost = check_tubemq(history(True, False), {"c0"})
    assert any("acknowledged record(s) lost: v3" in v for v in lost.violations)
    skipped = check_tubemq(history(False, True), {"c0"})
    assert any(v.startswith("poll-skip: 1") for v in skipped.violations), skipped.violations
