"""The share groups' ``simple`` assignor (Kafka 4.4's SimpleAssignor): balance, sharing, stickiness,
only assignable partitions, heterogeneous subscriptions."""

from __future__ import annotations

import uuid

import pytest

from tidelog.coordinator.group.modern.assignors import AssignorError, MemberSpec
from tidelog.coordinator.group.modern.share.assignor import simple_assign

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def spec(*topics: uuid.UUID, **current: list[int]) -> MemberSpec:
    assignment = {T1 if name == "t1" else T2: frozenset(ps) for name, ps in current.items()}
    return MemberSpec(frozenset(topics), assignment)


def counts(result: dict) -> dict[str, int]:
    return {m: sum(len(ps) for ps in tps.values()) for m, tps in result.items()}


def holders(result: dict, topic: uuid.UUID) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for m, tps in result.items():
        for p in tps.get(topic, ()):
            out.setdefault(p, set()).add(m)
    return out


def test_more_partitions_than_members_each_partition_goes_to_one_member_balanced() -> None:
    result = simple_assign({m: spec(T1) for m in ("a", "b", "c")}, {T1: range(8)})
    assert sorted(counts(result).values()) == [2, 3, 3]
    assert all(len(ms) == 1 for ms in holders(result, T1).values())
    assert set(holders(result, T1)) == set(range(8))


def test_more_members_than_partitions_members_share_partitions() -> None:
    result = simple_assign({m: spec(T1) for m in ("a", "b", "c", "d", "e")}, {T1: range(2)})
    # Each partition is shared by ceil(5 / 2) = 3 members: 6 slots for 5 members, so one member holds both.
    assert sorted(counts(result).values()) == [1, 1, 1, 1, 2]
    assert sorted(len(ms) for ms in holders(result, T1).values()) == [3, 3]


def test_one_partition_is_shared_by_every_member() -> None:
    result = simple_assign({m: spec(T1) for m in ("a", "b", "c")}, {T1: [0]})
    assert holders(result, T1) == {0: {"a", "b", "c"}}


def test_only_assignable_partitions_are_assigned() -> None:
    result = simple_assign({"a": spec(T1), "b": spec(T1)}, {T1: [1, 3]})
    assert set(holders(result, T1)) == {1, 3}
    assert simple_assign({"a": spec(T1)}, {T1: []}) == {"a": {}}


def test_sticky_members_keep_what_balance_allows() -> None:
    before = {"a": spec(T1, t1=[0, 1]), "b": spec(T1, t1=[2, 3])}
    assert simple_assign(before, {T1: range(4)}) == {"a": {T1: frozenset({0, 1})}, "b": {T1: frozenset({2, 3})}}
    # A third member takes one partition from an overfilled one; the others keep the rest.
    after = simple_assign({**before, "c": spec(T1)}, {T1: range(4)})
    assert sorted(counts(after).values()) == [1, 1, 2]
    assert after["a"][T1] <= {0, 1} and after["b"][T1] <= {2, 3}
    assert all(len(ms) == 1 for ms in holders(after, T1).values())


def test_unsubscribed_topics_are_dropped_and_heterogeneous_subscriptions_share_per_topic() -> None:
    result = simple_assign({"a": spec(T1, t2=[0]), "b": spec(T1, T2)}, {T1: range(2), T2: range(2)})
    assert T2 not in result["a"]
    assert holders(result, T2) == {0: {"b"}, 1: {"b"}}
    assert sorted(len(ms) for ms in holders(result, T1).values()) == [1, 1]


def test_unknown_topic_is_an_assignor_error() -> None:
    with pytest.raises(AssignorError):
        simple_assign({"a": spec(T1)}, {})
    assert simple_assign({}, {T1: [0]}) == {}
