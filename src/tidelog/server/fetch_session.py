"""Incremental fetch sessions (KIP-227): the broker remembers what a consumer fetches.

Rules (by ``session_id`` / ``session_epoch`` of the FetchRequest):

* epoch -1 (FINAL): a full fetch without a session; a session named by ``session_id`` is closed.
* epoch 0 (INITIAL): a full fetch that opens a new session (if the cache has room; otherwise the
  response carries session id 0 and the client keeps doing full fetches). An old session named by
  ``session_id`` is closed first.
* epoch > 0: an incremental fetch of session ``session_id``: unknown id -> FETCH_SESSION_ID_NOT_FOUND,
  wrong epoch -> INVALID_FETCH_SESSION_EPOCH. The request's partitions are added or updated, the
  forgotten ones removed; the response holds only partitions with news (records, a changed high
  watermark, last stable offset or log start offset, or an error). The expected epoch then advances.

Sessions idle for longer than the eviction time are dropped when the cache is full.
Loop-only, not thread-safe.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from tidelog.clock import Clock
from tidelog.errors import ErrorCode, KafkaError

FINAL_EPOCH = -1
INITIAL_EPOCH = 0
EVICTION_MS = 120_000


@dataclass(slots=True)
class SessionPartition:
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    # what the client was last told, to decide whether an incremental response must include us
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1


@dataclass(slots=True)
class FetchSession:
    session_id: int
    epoch: int  # the epoch the next request must carry
    partitions: dict[tuple[str, int], SessionPartition] = field(default_factory=dict)
    last_used_ms: int = 0


class FetchSessionCache:
    def __init__(self, max_slots: int, clock: Clock) -> None:
        self.max_slots = max_slots
        self.clock = clock
        self._sessions: dict[int, FetchSession] = {}
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int, epoch: int) -> FetchSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise KafkaError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, f"fetch session {session_id} not found")
        if session.epoch != epoch:
            raise KafkaError(
                ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                f"fetch session {session_id} expected epoch {session.epoch}, got {epoch}",
            )
        session.last_used_ms = self.clock.monotonic_ms()
        return session

    def create(self) -> FetchSession | None:
        now = self.clock.monotonic_ms()
        if len(self._sessions) >= self.max_slots:
            stale = [s for s in self._sessions.values() if now - s.last_used_ms > EVICTION_MS]
            if not stale:
                return None
            del self._sessions[min(stale, key=lambda s: s.last_used_ms).session_id]
        session = FetchSession(next(self._ids) & 0x7FFFFFFF or next(self._ids), 1, last_used_ms=now)
        self._sessions[session.session_id] = session
        return session

    def close(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)


__all__ = ["FINAL_EPOCH", "INITIAL_EPOCH", "FetchSession", "FetchSessionCache", "SessionPartition"]
