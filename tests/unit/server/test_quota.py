"""Kafka's precedence between the eight quota entities, the sharing of a quota by the clients its
entity covers, and the fetch-size cap."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.cluster.client_quota import entity
from tidelog.server.quota import INACTIVE_SENSOR_EXPIRATION_MS, ClientQuotaManager, ClientQuotaManagers

KEY = "producer_byte_rate"
# Kafka's order, highest precedence first (ClientQuotaManager's DefaultQuotaCallback).
LEVELS = [
    entity(user="alice", client_id="app"),
    entity(user="alice", client_id=None),
    entity(user="alice"),
    entity(user=None, client_id="app"),
    entity(user=None, client_id=None),
    entity(user=None),
    entity(client_id="app"),
    entity(client_id=None),
]


def manager(quotas) -> ClientQuotaManager:
    m = ClientQuotaManager(KEY)
    m.update({e: {KEY: v} for e, v in quotas.items()})
    return m


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_the_highest_precedence_entity_applies(level):
    quotas = {e: float(1000 + i) for i, e in enumerate(LEVELS) if i >= level}
    assert manager(quotas).quota("alice", "app") == 1000 + level


def test_no_matching_entity_means_no_quota():
    m = manager({entity(user="bob"): 10.0, entity(client_id="other"): 10.0})
    assert m.quota("alice", "app") is None
    assert m.record_and_get_throttle_ms("alice", "app", 10**9, 0) == 0


def test_a_user_quota_is_shared_by_the_users_clients_and_a_client_default_is_not():
    user_level = manager({entity(user="alice"): 100.0})
    assert user_level.metric_tags("alice", "a") == user_level.metric_tags("alice", "b") == ("alice", "")
    assert user_level.record_and_get_throttle_ms("alice", "a", 900, 0) == 0    # 90 B/s over 10 s
    assert user_level.record_and_get_throttle_ms("alice", "b", 900, 0) > 0     # 180 B/s: shared
    client_default = manager({entity(client_id=None): 100.0})
    assert client_default.record_and_get_throttle_ms("alice", "a", 900, 0) == 0
    assert client_default.record_and_get_throttle_ms("bob", "b", 900, 0) == 0  # its own sensor
    assert client_default.record_and_get_throttle_ms("carol", "b", 900, 0) > 0  # same client id: shared


def test_user_default_gives_each_user_their_own_quota():
    m = manager({entity(user=None): 100.0})
    assert m.record_and_get_throttle_ms("alice", "x", 900, 0) == 0
    assert m.record_and_get_throttle_ms("bob", "x", 900, 0) == 0


def test_changes_apply_to_live_sensors_and_removal_stops_throttling():
    m = manager({entity(client_id="app"): 100.0})
    assert m.record_and_get_throttle_ms("u", "app", 2000, 0) == 10_000
    m.update({entity(client_id="app"): {KEY: 1000.0}})
    assert m.record_and_get_throttle_ms("u", "app", 0, 0) == 0   # 200 B/s is within 1000 B/s
    m.update({})
    assert not m.enabled and m.record_and_get_throttle_ms("u", "app", 10**9, 0) == 0


def test_fetch_cap_is_quota_times_window_num_minus_one():
    managers = ClientQuotaManagers(num_samples=11, window_seconds=2)
    managers.update({entity(client_id="c"): {"consumer_byte_rate": 1000.0}})
    assert managers.fetch.max_value_in_window("u", "c") == 1000.0 * 10 * 2
    assert managers.fetch.max_value_in_window("u", "other") is None
    assert managers.produce.quota("u", "c") is None  # another key


def test_request_quota_throttle_is_bounded_by_one_window():
    managers = ClientQuotaManagers()
    managers.update({entity(user="u"): {"request_percentage": 1.0}})
    assert managers.request.record_and_get_throttle_ms("u", "c", 500.0, 0) == 1000


def test_idle_sensors_expire():
    m = manager({entity(client_id=None): 100.0})
    m.record_and_get_throttle_ms("u", "a", 900, 0)
    m.record_and_get_throttle_ms("u", "b", INACTIVE_SENSOR_EXPIRATION_MS + 60_000, INACTIVE_SENSOR_EXPIRATION_MS + 60_000)
    assert set(m._sensors) == {("", "b")}


@settings(max_examples=200, deadline=None)
@given(present=st.lists(st.booleans(), min_size=8, max_size=8),
       user=st.sampled_from(["alice", "bob"]), client=st.sampled_from(["app", "other", ""]))
def test_precedence_for_any_set_of_entities(present, user, client):
    """Whatever subset of the eight levels has a quota, the request gets the first one in Kafka's order
    that covers it (alice/app entities do not cover bob or other; an empty client id is no client id)."""
    quotas = {e: float(1000 + i) for i, (e, on) in enumerate(zip(LEVELS, present)) if on}
    covering = [
        user == "alice" and client == "app", user == "alice" and client != "", user == "alice",
        client == "app", client != "", True,
        client == "app", client != "",
    ]
    # Kafka: an empty client id is no client id: only the user-only levels (3, 6) can apply.
    order = [2, 5] if client == "" else list(range(8))
    expected = next((1000 + i for i in order if present[i] and covering[i]), None)
    assert manager(quotas).quota(user, client) == expected
