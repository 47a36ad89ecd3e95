"""The classic group states: the transition table (every cell, legal and illegal) and the model."""

from __future__ import annotations

import itertools

import pytest

from tidelog.coordinator.group.classic.group import (
    VALID_PREVIOUS_STATES,
    ClassicGroup,
    ClassicGroupState,
    ClassicMember,
    IllegalStateTransition,
    can_transition,
)
from tidelog.errors import ErrorCode, KafkaError
from tidelog.testing import ManualClock

S = ClassicGroupState

LEGAL = {
    (S.PREPARING_REBALANCE, S.EMPTY),
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.STABLE, S.PREPARING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.STABLE),
    (S.EMPTY, S.DEAD),
    (S.PREPARING_REBALANCE, S.DEAD),
    (S.COMPLETING_REBALANCE, S.DEAD),
    (S.STABLE, S.DEAD),
    (S.DEAD, S.DEAD),
}


def test_display_names_are_kafkas() -> None:
    assert [s.value for s in S] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]


@pytest.mark.parametrize(("source", "target"), list(itertools.product(S, S)))
def test_every_cell_of_the_table(source: ClassicGroupState, target: ClassicGroupState) -> None:
    legal = (source, target) in LEGAL
    assert can_transition(source, target) is legal
    group = ClassicGroup("g", ManualClock(), state=source)
    if legal:
        group.transition_to(target)
        assert (group.previous_state, group.state) == (source, target)
        assert group.current_state_timestamp == ManualClock().wall_ms()
    else:
        with pytest.raises(IllegalStateTransition):
            group.transition_to(target)
        assert group.state is source


def test_table_lists_every_state() -> None:
    assert set(VALID_PREVIOUS_STATES) == set(S)
    assert sum(len(v) for v in VALID_PREVIOUS_STATES.values()) == len(LEGAL)


def _member(mid: str, *protocols: str, instance: str | None = None) -> ClassicMember:
    return ClassicMember(mid, instance, "c", "/h", 1000, 1000, "consumer", [(p, p.encode()) for p in protocols])


def test_protocol_vote_and_candidates() -> None:
    g = ClassicGroup("g", ManualClock())
    g.add(_member("a", "range", "roundrobin"))
    g.add(_member("b", "roundrobin", "range"))
    g.add(_member("c", "roundrobin", "range", "sticky"))
    assert g.candidate_protocols() == {"range", "roundrobin"}
    assert g.select_protocol() == "roundrobin"  # 2 votes to 1
    g.remove("c")
    assert g.select_protocol() == "range"  # 1-1: the earliest vote wins
    g.state = S.STABLE
    assert not g.supports_protocols("consumer", ["sticky"])
    assert not g.supports_protocols("connect", ["range"])
    assert g.supports_protocols("consumer", ["sticky", "roundrobin"])


def test_leader_is_first_member_and_next_one_when_it_leaves() -> None:
    g = ClassicGroup("g", ManualClock())
    for mid in "abc":
        g.add(_member(mid, "range"))
    assert g.leader_id == "a"
    g.remove("a")
    assert g.leader_id == "b"
    g.remove("b"), g.remove("c")
    assert g.leader_id is None


def test_validate_member_fences_static_members() -> None:
    g = ClassicGroup("g", ManualClock())
    g.add(_member("m1", "range", instance="i1"))
    g.validate_member("m1", "i1", "op")
    with pytest.raises(KafkaError) as e:
        g.validate_member("m0", "i1", "op")
    assert e.value.code == ErrorCode.FENCED_INSTANCE_ID
    with pytest.raises(KafkaError) as e:
        g.validate_member("m1", "other", "op")
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID
    with pytest.raises(KafkaError) as e:
        g.validate_member("zz", None, "op")
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID
