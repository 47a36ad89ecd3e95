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
:meth:`FetchSessionCache.resolve` applies these rules to a request and returns a
:class:`SessionFetch`: the partitions to read, and which of them the response includes.
Loop-only, not thread-safe.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tidelog.clock import Clock
from tidelog.errors import ErrorCode, KafkaError
from tidelog.replica.fetch import PartitionFetch, PartitionRead

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


@dataclass(slots=True)
class SessionFetch:
    """The partitions one Fetch reads (``partitions``; ``states`` are their session entries, None
    without a session) and whether its response is incremental."""

    partitions: list[PartitionFetch]
    states: list[SessionPartition | None]
    session: FetchSession | None = None
    incremental: bool = False

    @property
    def session_id(self) -> int:
        return self.session.session_id if self.session is not None else 0

    def include(self, i: int, read: PartitionRead) -> bool:
        """Whether partition ``i`` goes into the response (an incremental one carries only partitions
        with news); records what the client is told in the session."""
        state = self.states[i]
        if state is None:
            return True
        offsets = (read.high_watermark, read.last_stable_offset, read.log_start_offset)
        told = (state.high_watermark, state.last_stable_offset, state.log_start_offset)
        if self.incremental and not read.size and not read.error and offsets == told:
            return False
        state.high_watermark, state.last_stable_offset, state.log_start_offset = offsets
        return True


TopicName = Callable[[Any], "str | None"]


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

    def resolve(self, version: int, request: Any, topic_name: TopicName,
                topic_id: Callable[[str], uuid.UUID | None]) -> SessionFetch:
        """Apply the session rules to a FetchRequest. ``topic_name(entry)`` names a request's topic
        entry (by name, or by id from v13; None if unknown); ``topic_id(name)`` gives a topic's id.
        Raises KafkaError (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH)."""
        requested = [
            PartitionFetch(topic_name(t), t.topic_id, p.partition, p.fetch_offset, p.partition_max_bytes,
                           p.current_leader_epoch)
            for t in request.topics
            for p in t.partitions
        ]
        if version < 7 or request.session_epoch == FINAL_EPOCH:
            if version >= 7 and request.session_id:
                self.close(request.session_id)
            return SessionFetch(requested, [None] * len(requested))
        if request.session_epoch == INITIAL_EPOCH:
            if request.session_id:
                self.close(request.session_id)
            session = self.create()
            states: list[SessionPartition | None] = [None] * len(requested)
            if session is not None:
                for i, pf in enumerate(requested):
                    if pf.topic is not None:
                        states[i] = session.partitions[(pf.topic, pf.partition)] = SessionPartition(
                            pf.fetch_offset, pf.max_bytes, pf.current_leader_epoch)
            return SessionFetch(requested, states, session)
        session = self.get(request.session_id, request.session_epoch)
        for t in request.forgotten_topics_data:
            name = topic_name(t)
            for p in t.partitions:
                session.partitions.pop((name, p), None)
        for pf in requested:
            if pf.topic is None:
                continue
            state = session.partitions.get((pf.topic, pf.partition))
            if state is None:
                state = session.partitions[(pf.topic, pf.partition)] = SessionPartition(pf.fetch_offset, pf.max_bytes)
            state.fetch_offset, state.max_bytes, state.current_leader_epoch = (
                pf.fetch_offset, pf.max_bytes, pf.current_leader_epoch)
        session.epoch = session.epoch + 1 if session.epoch < 0x7FFFFFFF else 1
        partitions, session_states = [], []
        for (name, partition), state in session.partitions.items():
            partitions.append(PartitionFetch(name, topic_id(name), partition, state.fetch_offset, state.max_bytes,
                                             state.current_leader_epoch))
            session_states.append(state)
        return SessionFetch(partitions, list(session_states), session, incremental=True)


__all__ = ["FINAL_EPOCH", "INITIAL_EPOCH", "FetchSession", "FetchSessionCache", "SessionFetch", "SessionPartition"]
