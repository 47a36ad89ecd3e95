"""The console's login sessions: random tokens, a fixed expiry, logout, the bound on how many are kept;
and ``console.authentication``'s values."""

from __future__ import annotations

import pytest

from tidelog.config import BrokerConfig, ConfigError
from tidelog.security.principal import KafkaPrincipal
from tidelog.testing import ManualClock
from tidelog.web.console import session as session_module
from tidelog.web.console.session import DEFAULT_SESSION_MS, SessionStore

ALICE = KafkaPrincipal("User", "alice")


def test_a_session_lasts_its_lifetime_and_not_a_millisecond_more() -> None:
    clock = ManualClock()
    store = SessionStore(clock.monotonic_ms, 60_000)
    token = store.create(ALICE)
    clock.advance(59_999)
    session = store.get(token)
    assert session is not None and session.principal == ALICE
    clock.advance(1)
    assert store.get(token) is None and len(store) == 0


def test_tokens_are_random_and_unknown_ones_match_nothing() -> None:
    store = SessionStore(ManualClock().monotonic_ms)
    assert store.lifetime_ms == DEFAULT_SESSION_MS  # 0 (connections.max.reauth.ms unset): 8 hours
    tokens = {store.create(ALICE) for _ in range(50)}
    assert len(tokens) == 50 and all(len(t) >= 40 for t in tokens)
    assert store.get("not-a-token") is None and store.get(None) is None and store.get("") is None


def test_logout_deletes_the_session() -> None:
    store = SessionStore(ManualClock().monotonic_ms)
    token = store.create(ALICE)
    store.delete(token)
    assert store.get(token) is None
    store.delete(token)  # twice is harmless
    store.delete(None)


def test_the_oldest_sessions_go_beyond_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "MAX_SESSIONS", 3)
    clock = ManualClock()
    store = SessionStore(clock.monotonic_ms)
    tokens = [store.create(ALICE) for _ in range(5)]
    assert len(store) == 3
    assert [store.get(t) is not None for t in tokens] == [False, False, True, True, True]


@pytest.mark.parametrize(("raw", "parsed"), [("", ""), ("none", "none"), ("SASL", "sasl"), (" sasl ", "sasl")])
def test_console_authentication_values(raw: str, parsed: str) -> None:
    assert BrokerConfig.from_props({"console.authentication": raw})["console.authentication"] == parsed


def test_an_unknown_console_authentication_is_refused() -> None:
    with pytest.raises(ConfigError, match="console.authentication: must be empty, none or sasl"):
        BrokerConfig.from_props({"console.authentication": "oauth"})
