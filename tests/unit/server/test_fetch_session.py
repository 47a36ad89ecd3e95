"""Fetch session cache rules (KIP-227)."""

from __future__ import annotations

import pytest

from tidelog.errors import ErrorCode, KafkaError
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
