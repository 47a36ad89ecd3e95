"""The generated classes behave as the dataclasses they replaced (plain slotted classes load faster):
keyword or positional construction with the spec's defaults, a fresh list or struct per instance,
equality and repr by value, frozen and hashable records, copies and :func:`replace`."""

from __future__ import annotations

import copy
import pickle

import pytest

from tidelog.protocol import coordinator_records as records
from tidelog.protocol.message import FrozenInstanceError, fields, replace
from tidelog.protocol.messages import JoinGroupRequest, ProduceRequest, ProduceResponse


def test_defaults_and_positional_arguments() -> None:
    assert JoinGroupRequest().session_timeout_ms == 0
    assert JoinGroupRequest().group_instance_id is None
    assert JoinGroupRequest().protocol_type == ""
    assert ProduceRequest(None, -1, 30_000) == ProduceRequest(acks=-1, timeout_ms=30_000, transactional_id=None)
    with pytest.raises(TypeError):
        ProduceRequest(no_such_field=1)  # type: ignore[call-arg]


def test_mutable_defaults_are_per_instance() -> None:
    a, b = ProduceRequest(), ProduceRequest()
    a.topic_data.append(ProduceRequest.TopicProduceData(name="t"))
    assert b.topic_data == [] and a != b


def test_equality_and_repr_by_value() -> None:
    one = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="t")], throttle_time_ms=5)
    two = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="t")], throttle_time_ms=5)
    assert one == two and one is not two
    assert one != ProduceResponse(throttle_time_ms=5)
    assert ProduceRequest() != ProduceResponse()
    assert ProduceRequest(unknown_tagged_fields=[(9, b"x")]) != ProduceRequest()
    text = repr(one)
    assert text.startswith("ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name='t', ")
    assert "throttle_time_ms=5" in text and "unknown_tagged_fields" not in text
    with pytest.raises(TypeError):
        hash(one)  # mutable, so unhashable, as a dataclass with eq


def test_records_are_frozen_hashable_and_copyable() -> None:
    key = records.OffsetCommitKey("g", "t", 0)
    with pytest.raises(FrozenInstanceError):
        key.group = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del key.topic
    assert {key, records.OffsetCommitKey("g", "t", 0)} == {key}
    assert copy.copy(key) == key and copy.deepcopy(key) == key
    assert pickle.loads(pickle.dumps(key)) == key


def test_replace_and_fields() -> None:
    key = records.ConsumerGroupMemberMetadataKey(group_id="g", member_id="m")
    moved = replace(key, member_id="n")
    assert (moved.group_id, moved.member_id, key.member_id) == ("g", "n", "m")
    assert fields(key) == ("group_id", "member_id", "unknown_tagged_fields")
    with pytest.raises(TypeError):
        replace(key, nope=1)
    request = ProduceRequest(acks=1)
    assert replace(request, acks=-1) == ProduceRequest(acks=-1)
    assert copy.copy(request) == request and copy.deepcopy(request) == request
