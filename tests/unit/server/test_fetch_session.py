"""Fetch session cache rules (KIP-227)."""

from __future__ import annotations

import uuid

import pytest

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import FetchRequest
from tidelog.server.fetch_session import EVICTION_MS, FetchSessionCache
from tidelog.testing import ManualClock


def test_create_get_and_epochs() -> None:
    cache = FetchSessionCache(10, ManualClock())
    s = cache.create()
    assert s is not None and s.session_id > 0 and s.epoch == 1
    assert cache.get(s.session_id, 1) is s
    with pytest.raises(KafkaError) as e:
        cache.get(s.session_id, 5)
    assert e.value.code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    with pytest.raises(KafkaError) as e:
        cache.get(12345, 1)
    assert e.value.code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    cache.close(s.session_id)
    assert len(cache) == 0


def test_full_cache_evicts_only_stale_sessions() -> None:
    clock = ManualClock()
    cache = FetchSessionCache(2, clock)
    a, b = cache.create(), cache.create()
    assert cache.create() is None  # full, nothing stale: the client does sessionless fetches
    clock.advance(EVICTION_MS + 1)
    cache.get(b.session_id, 1)  # b is in use
    c = cache.create()
    assert c is not None and len(cache) == 2
    with pytest.raises(KafkaError):
        cache.get(a.session_id, 1)


# ------------------------------------------------------------------ sessions over topic ids (v13+)

def _request(session_id: int, epoch: int, topics=(), forgotten=()) -> FetchRequest:
    return FetchRequest(
        session_id=session_id, session_epoch=epoch,
        topics=[FetchRequest.FetchTopic(topic_id=tid, partitions=[
            FetchRequest.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1024) for p in parts])
            for tid, parts in topics],
        forgotten_topics_data=[FetchRequest.ForgottenTopic(topic_id=tid, partitions=list(parts))
                               for tid, parts in forgotten])


class _Topics:
    """The broker's topics by name, as the Fetch handler looks them up."""

    def __init__(self, **ids: uuid.UUID) -> None:
        self.ids = dict(ids)

    def name_of(self, topic_id: uuid.UUID) -> str | None:
        return next((name for name, tid in self.ids.items() if tid == topic_id), None)

    def id_of(self, name: str) -> uuid.UUID | None:
        return self.ids.get(name)


def test_a_session_keeps_the_topic_id_and_name_of_a_deleted_topic() -> None:
    """A deleted topic's partitions keep their id (old code: None, which the response could not
    encode) and their name (the replica manager answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka does),
    and the client can forget them by that id."""
    cache = FetchSessionCache(10, ManualClock())
    gone, kept = uuid.uuid4(), uuid.uuid4()
    topics = _Topics(gone=gone, kept=kept)
    first = cache.resolve(17, _request(0, 0, [(gone, [0, 1]), (kept, [0])]), topics.name_of, topics.id_of)
    session = first.session
    assert session is not None
    del topics.ids["gone"]
    fetch = cache.resolve(17, _request(session.session_id, 1), topics.name_of, topics.id_of)
    assert fetch.incremental
    by_partition = {(pf.topic_id, pf.partition): pf.topic for pf in fetch.partitions}
    assert by_partition == {(gone, 0): "gone", (gone, 1): "gone", (kept, 0): "kept"}
    fetch = cache.resolve(17, _request(session.session_id, 2, forgotten=[(gone, [0, 1])]),
                          topics.name_of, topics.id_of)
    assert [(pf.topic_id, pf.partition, pf.topic) for pf in fetch.partitions] == [(kept, 0, "kept")]


def test_a_topic_created_again_under_the_same_name_keeps_the_old_id_in_the_session() -> None:
    """The partition stays the old topic's (the Fetch handler answers INCONSISTENT_TOPIC_ID for it)."""
    cache = FetchSessionCache(10, ManualClock())
    old = uuid.uuid4()
    topics = _Topics(t=old)
    session = cache.resolve(13, _request(0, 0, [(old, [0])]), topics.name_of, topics.id_of).session
    assert session is not None
    topics.ids["t"] = uuid.uuid4()
    fetch = cache.resolve(13, _request(session.session_id, 1), topics.name_of, topics.id_of)
    assert [(pf.topic, pf.topic_id) for pf in fetch.partitions] == [("t", old)]


def test_an_unknown_topic_id_is_remembered_and_forgotten_by_id() -> None:
    cache = FetchSessionCache(10, ManualClock())
    unknown = uuid.uuid4()
    topics = _Topics()
    first = cache.resolve(17, _request(0, 0, [(unknown, [3])]), topics.name_of, topics.id_of)
    assert first.session is not None and [pf.topic for pf in first.partitions] == [None]
    sid = first.session.session_id
    assert [(pf.topic_id, pf.topic) for pf in cache.resolve(17, _request(sid, 1), topics.name_of,
                                                             topics.id_of).partitions] == [(unknown, None)]
    topics.ids["late"] = unknown  # the broker learns of the topic: its name is looked up again
    assert [pf.topic for pf in cache.resolve(17, _request(sid, 2), topics.name_of, topics.id_of).partitions] == [
        "late"]
    assert cache.resolve(17, _request(sid, 3, forgotten=[(unknown, [3])]), topics.name_of,
                         topics.id_of).partitions == []


def test_a_session_must_use_topic_ids_consistently() -> None:
    cache = FetchSessionCache(10, ManualClock())
    tid = uuid.uuid4()
    topics = _Topics(t=tid)
    session = cache.resolve(13, _request(0, 0, [(tid, [0])]), topics.name_of, topics.id_of).session
    assert session is not None
    with pytest.raises(KafkaError) as e:
        cache.resolve(12, FetchRequest(session_id=session.session_id, session_epoch=1), topics.name_of, topics.id_of)
    assert e.value.code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


def test_a_session_by_name_answers_with_the_current_topic_id() -> None:
    cache = FetchSessionCache(10, ManualClock())
    tid = uuid.uuid4()
    topics = _Topics(t=tid)
    request = FetchRequest(session_id=0, session_epoch=0, topics=[FetchRequest.FetchTopic(topic="t", partitions=[
        FetchRequest.FetchPartition(partition=0, fetch_offset=5, partition_max_bytes=1024)])])
    session = cache.resolve(12, request, topics.name_of, topics.id_of).session
    assert session is not None and not session.uses_topic_ids
    del topics.ids["t"]
    fetch = cache.resolve(12, FetchRequest(session_id=session.session_id, session_epoch=1), topics.name_of,
                          topics.id_of)
    assert [(pf.topic, pf.partition, pf.fetch_offset) for pf in fetch.partitions] == [("t", 0, 5)]
    assert all(isinstance(pf.topic_id, uuid.UUID) for pf in fetch.partitions)
