"""Share sessions (tidelog.share.session): KIP-932's epoch rules."""

from __future__ import annotations

import uuid

import pytest

from tidelog.errors import ErrorCode, KafkaError
from tidelog.share.session import ShareSessionCache, next_epoch

A = (uuid.UUID(int=1), 0)
B = (uuid.UUID(int=1), 1)


def code_of(fn, *args) -> ErrorCode:
    with pytest.raises(KafkaError) as e:
        fn(*args)
    return e.value.code


def test_open_continue_close() -> None:
    cache = ShareSessionCache(10)
    s = cache.fetch_session("g", "m", 0, [A], [], False)
    assert s is not None and s.epoch == 1 and list(s.partitions) == [A]
    s = cache.fetch_session("g", "m", 1, [B], [A], False)
    assert s is not None and s.epoch == 2 and list(s.partitions) == [B]
    # a repeated or skipped epoch
    assert code_of(cache.fetch_session, "g", "m", 1, [], [], False) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert code_of(cache.fetch_session, "g", "m", 3, [], [], False) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    # closing: no partitions may be added; the session must exist
    assert code_of(cache.fetch_session, "g", "m", -1, [A], [], True) == ErrorCode.INVALID_REQUEST
    assert cache.fetch_session("g", "m", -1, [], [], True) is None
    cache.remove("g", "m")
    assert code_of(cache.fetch_session, "g", "m", -1, [], [], True) == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert code_of(cache.fetch_session, "g", "m", 2, [], [], False) == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_opening_with_acknowledgements_is_invalid_and_reopening_replaces() -> None:
    cache = ShareSessionCache(10)
    assert code_of(cache.fetch_session, "g", "m", 0, [A], [], True) == ErrorCode.INVALID_REQUEST
    cache.fetch_session("g", "m", 0, [A], [], False)
    cache.fetch_session("g", "m", 1, [], [], False)
    s = cache.fetch_session("g", "m", 0, [B], [], False)
    assert s is not None and s.epoch == 1 and list(s.partitions) == [B] and len(cache) == 1


def test_session_limit_reached() -> None:
    cache = ShareSessionCache(2)
    cache.fetch_session("g", "m1", 0, [A], [], False)
    cache.fetch_session("g", "m2", 0, [A], [], False)
    assert code_of(cache.fetch_session, "g", "m3", 0, [A], [], False) == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    # a member re-opening its own session is not refused
    assert cache.fetch_session("g", "m2", 0, [A], [], False) is not None


def test_acknowledge_epochs() -> None:
    cache = ShareSessionCache(10)
    assert code_of(cache.acknowledge_session, "g", "m", 1) == ErrorCode.SHARE_SESSION_NOT_FOUND
    cache.fetch_session("g", "m", 0, [A], [], False)
    assert code_of(cache.acknowledge_session, "g", "m", 0) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert code_of(cache.acknowledge_session, "g", "m", 5) == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    s = cache.acknowledge_session("g", "m", 1)
    assert s is not None and s.epoch == 2
    assert cache.acknowledge_session("g", "m", -1) is None


def test_next_epoch_wraps_to_one() -> None:
    assert next_epoch(0) == 1 and next_epoch(2**31 - 1) == 1 and next_epoch(-1) == -1
