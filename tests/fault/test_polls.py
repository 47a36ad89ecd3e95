"""The group consumers' poll checker (:func:`tests.fault.lab.groups.check_polls`) on hand-built
histories: poll-skip, nonmonotonic-poll, a skip across a rebalance and a committed-offset
regression are each found where they are, and a clean hand-over is valid."""

from __future__ import annotations

from tests.fault.lab.groups import check_polls
from tests.fault.lab.history import History

# Partition 0 holds offsets 0..9 except 4 (a transaction marker): the version order skips it.
VERSIONS = {0: [0, 1, 2, 3, 5, 6, 7, 8, 9]}


def poll(h: History, process: str, *offsets: int, partition: int = 0) -> None:
    h.add(process, "ok", "poll", {"isolation": "read_committed",
                                  "records": [[partition, o, f"v{o}"] for o in offsets]})


def commit(h: History, process: str, offset: int, outcome: str = "ok", partition: int = 0) -> None:
    h.add(process, "invoke", "commit", {"offsets": {str(partition): offset}})
    h.add(process, outcome, "commit", {"offsets": {str(partition): offset}})


def assign(h: History, process: str, *partitions: int) -> None:
    h.add(process, "info", "assign", {"partitions": list(partitions)})


def revoke(h: History, process: str, *partitions: int) -> None:
    h.add(process, "info", "revoke", {"partitions": list(partitions), "lost": False})


def handover(first_poll_of_c2: list[int], c1_commit: int = 6, outcome: str = "ok") -> History:
    h = History()
    assign(h, "c1", 0)
    poll(h, "c1", 0, 1, 2, 3)  # 4 is a marker: not a gap
    poll(h, "c1", 5)
    commit(h, "c1", c1_commit, outcome)  # the next offset to read
    revoke(h, "c1", 0)
    assign(h, "c2", 0)
    poll(h, "c2", *first_poll_of_c2)
    return h


def test_a_clean_handover_through_the_committed_offset_is_valid():
    verdict = check_polls(handover([6, 7]), VERSIONS)
    assert verdict.violations == []
    assert verdict.stats["handovers"] == 2 and verdict.stats["polled"] == 7


def test_rereading_uncommitted_records_after_a_rebalance_is_allowed():
    # c1 committed 3 only: c2 reads 3 and 5 again (at least once), which is not an anomaly
    assert check_polls(handover([3, 5, 6], c1_commit=3), VERSIONS).violations == []


def test_poll_skip_within_an_assignment():
    h = History()
    assign(h, "c1", 0)
    poll(h, "c1", 0, 1)
    poll(h, "c1", 3, 5)  # 2 skipped
    verdict = check_polls(h, VERSIONS)
    assert len(verdict.violations) == 1 and verdict.violations[0].startswith("poll-skip: 1:")
    assert "skipped 2" in verdict.violations[0]


def test_nonmonotonic_poll_within_an_assignment():
    h = History()
    assign(h, "c1", 0)
    poll(h, "c1", 0, 1, 2)
    poll(h, "c1", 1)
    verdict = check_polls(h, VERSIONS)
    assert [v.split(":")[0] for v in verdict.violations] == ["nonmonotonic-poll"]


def test_poll_skip_across_a_rebalance():
    verdict = check_polls(handover([7, 8]), VERSIONS)  # the commit said 6 is next; 6 skipped
    assert [v.split(":")[0] for v in verdict.violations] == ["poll-skip across a rebalance"]


def test_a_lost_acknowledged_commit_shows_as_a_regression():
    verdict = check_polls(handover([0, 1]), VERSIONS)  # back to the start: the commit of 6 was lost
    assert [v.split(":")[0] for v in verdict.violations] == ["committed-offset regression"]


def test_a_commit_of_unknown_outcome_may_or_may_not_count():
    assert check_polls(handover([6], c1_commit=6, outcome="info"), VERSIONS).violations == []
    assert check_polls(handover([0], c1_commit=6, outcome="info"), VERSIONS).violations == []


def test_the_first_poll_of_a_group_starts_at_the_first_record():
    h = History()
    assign(h, "c1", 0)
    poll(h, "c1", 1, 2)
    assert [v.split(":")[0] for v in check_polls(h, VERSIONS).violations] == ["poll-skip across a rebalance"]


def test_records_missing_from_the_final_read_and_polls_outside_the_assignment():
    h = History()
    assign(h, "c1", 0)
    poll(h, "c1", 0, 4)  # 4 is not in the final read
    revoke(h, "c1", 0)
    poll(h, "c1", 5)
    names = [v.split(":")[0] for v in check_polls(h, VERSIONS).violations]
    assert names == ["polled record missing from the final read_committed read",
                     "poll of a partition not assigned to the consumer"]
