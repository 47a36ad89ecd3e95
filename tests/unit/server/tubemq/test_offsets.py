"""TubeMQ consume offsets on a real group coordinator: where registrations and fetches start, the
tentative last pack, commits as the member's OffsetCommit (in the one offset store)."""

from __future__ import annotations

import pytest

from tests.unit.server.tubemq.conftest import GROUP, Harness, SimClient, at_once
from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.server.tubemq.offsets import READ_FROM_MAX, READ_FROM_MAX_ALWAYS, READ_NORMAL, TubeOffsets

KEY = (GROUP, "t", 0)


@pytest.fixture
def member(h: Harness) -> tuple[str, int]:
    a = SimClient(h, "a")
    a.register()
    a.heartbeat()
    return "a", h.consumer_groups.group(GROUP).members["a"].member_epoch


def test_a_first_registration_starts_at_the_log_start_or_the_end(h: Harness, member) -> None:
    offsets = TubeOffsets(h.service)
    assert at_once(offsets.load(KEY, member, READ_FROM_MAX, None, 5, 40)) == 40  # first time, from the max
    assert at_once(offsets.committed(*KEY)) == 40  # committed at once, in the one offset store
    assert at_once(offsets.load(KEY, member, READ_FROM_MAX, None, 5, 50)) == 40  # not the first time: continue
    assert at_once(offsets.load(KEY, member, READ_FROM_MAX_ALWAYS, None, 5, 50)) == 50
    assert at_once(offsets.load(KEY, member, READ_NORMAL, 7, 5, 50)) == 7  # an offset asked for wins
    assert at_once(offsets.load(KEY, member, READ_NORMAL, 99, 5, 50)) == 50  # clamped into the log
    assert at_once(offsets.load(KEY, member, READ_NORMAL, None, 60, 70)) == 60  # below the log start: moved up
    fresh = (GROUP, "t", 1)
    assert at_once(offsets.load(fresh, member, READ_NORMAL, None, 3, 9)) == 3
    assert h.coordinator.offsets.get(GROUP, "t", 1).offset == 3


def test_the_last_pack_is_committed_by_the_next_fetch_or_rolled_back(h: Harness, member) -> None:
    offsets = TubeOffsets(h.service)
    at_once(offsets.load(KEY, member, READ_NORMAL, None, 0, 100))
    assert at_once(offsets.start_of_fetch(KEY, member, True, 0, 100)) == 0
    at_once(offsets.after_fetch(KEY, member, 10, delivered=10))
    assert at_once(offsets.committed(*KEY)) == 0  # tentative until confirmed
    assert at_once(offsets.start_of_fetch(KEY, member, False, 0, 100)) == 0  # not consumed: read again
    at_once(offsets.after_fetch(KEY, member, 10, delivered=10))
    assert at_once(offsets.start_of_fetch(KEY, member, True, 0, 100)) == 10  # consumed: committed, continue
    assert at_once(offsets.committed(*KEY)) == 10
    at_once(offsets.after_fetch(KEY, member, 20, delivered=10))
    assert at_once(offsets.confirm(KEY, member, True)) == 20
    at_once(offsets.after_fetch(KEY, member, 30, delivered=0))  # nothing delivered (filtered): committed at once
    assert at_once(offsets.committed(*KEY)) == 30
    at_once(offsets.after_fetch(KEY, member, 40, delivered=5))
    assert at_once(offsets.confirm(KEY, member, False)) == 30  # rolled back


def test_commits_are_the_members_and_fail_for_a_stale_epoch(h: Harness, member) -> None:
    offsets = TubeOffsets(h.service)
    client, epoch = member
    with pytest.raises(TubeError) as e:
        at_once(offsets.commit(KEY, (client, epoch + 5), 3))
    assert e.value.code == TubeErrorCode.HB_NO_NODE
    with pytest.raises(TubeError) as e:
        at_once(offsets.commit(KEY, ("stranger", epoch), 3))
    assert e.value.code == TubeErrorCode.HB_NO_NODE
    assert at_once(offsets.committed(*KEY)) is None
