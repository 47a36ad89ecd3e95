"""The console's login sessions: a random token (the session cookie's value) -> the logged-in principal,
kept in the broker's memory only, each with a fixed expiry (``connections.max.reauth.ms`` when set, else
8 hours, as a SASL connection must re-authenticate after that long). Sessions end at logout, at expiry and
when the broker restarts. Loop-only.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.security.principal import KafkaPrincipal

#: How long a session lasts when ``connections.max.reauth.ms`` is not set.
DEFAULT_SESSION_MS = 8 * 3600 * 1000
#: Most sessions kept at once; the oldest go first beyond it (each login makes one).
MAX_SESSIONS = 10_000


@dataclass(frozen=True, slots=True)
class Session:
    principal: KafkaPrincipal
    expires_ms: int


class SessionStore:
    def __init__(self, now_ms: Callable[[], int], lifetime_ms: int = DEFAULT_SESSION_MS) -> None:
        self._now_ms = now_ms
        self.lifetime_ms = lifetime_ms if lifetime_ms > 0 else DEFAULT_SESSION_MS
        self._sessions: dict[str, Session] = {}

    def create(self, principal: KafkaPrincipal) -> str:
        """A new session's token (256 random bits, URL-safe)."""
        now = self._now_ms()
        self._sessions = {t: s for t, s in self._sessions.items() if s.expires_ms > now}
        while len(self._sessions) >= MAX_SESSIONS:
            del self._sessions[next(iter(self._sessions))]
        token = secrets.token_urlsafe(32)
        self._sessions[token] = Session(principal, now + self.lifetime_ms)
        return token

    def get(self, token: str | None) -> Session | None:
        """The live session of ``token`` (None when unknown or expired)."""
        session = self._sessions.get(token) if token else None
        if session is None:
            return None
        if session.expires_ms <= self._now_ms():
            del self._sessions[token]  # type: ignore[arg-type]
            return None
        return session

    def delete(self, token: str | None) -> None:
        if token:
            self._sessions.pop(token, None)

    def __len__(self) -> int:
        return len(self._sessions)


__all__ = ["DEFAULT_SESSION_MS", "MAX_SESSIONS", "Session", "SessionStore"]
