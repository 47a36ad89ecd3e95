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

A session opened by a v13+ request (topics named by id) remembers each partition by its topic id and
the name it had, as Kafka does: forgotten topics are matched by id; until the client forgets it, a
partition whose topic was deleted answers UNKNOWN_TOPIC_OR_PARTITION, one whose name now belongs to
a new topic INCONSISTENT_TOPIC_ID (the Fetch handler's check), one whose id was never known
UNKNOWN_TOPIC_ID (its name is looked up again at every fetch). A session opened with ids and
continued without them, or the other way round, gets FETCH_SESSION_TOPIC_ID_ERROR.

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
from tidelog.protocol.primitives import ZERO_UUID
from tidelog.replica.fetch import PartitionFetch, PartitionRead

FINAL_EPOCH = -1
INITIAL_EPOCH = 0
EVICTION_MS = 120_000


@dataclass(slots=True)
class SessionPartition:
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    topic: str | None = None  # None: the topic id is not known here (yet)
    topic_id: uuid.UUID = ZERO_UUID  # v13+ sessions: the id the client gave
    # what the client was last told, to decide whether an incremental response must include us
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1


@dataclass(slots=True)
class FetchSession:
    session_id: int
    epoch: int  # the epoch the next request must carry
    # by (topic id, partition) when the session uses topic ids (v13+), else by (topic name, partition)
    partitions: dict[tuple[Any, int], SessionPartition] = field(default_factory=dict)
    last_used_ms: int = 0
    uses_topic_ids: bool = False


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


TopicNameOf = Callable[[uuid.UUID], "str | None"]
TopicIdOf = Callable[[str], "uuid.UUID | None"]


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

    def resolve(self, version: int, request: Any, name_of: TopicNameOf, id_of: TopicIdOf) -> SessionFetch:
        """Apply the session rules to a FetchRequest. ``name_of(topic_id)`` names a topic by its id
        (None if unknown), ``id_of(name)`` gives a topic's id (None if there is no such topic).
        Raises KafkaError (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
        FETCH_SESSION_TOPIC_ID_ERROR)."""
        uses_ids = version >= 13
        requested = [
            PartitionFetch(name_of(t.topic_id) if uses_ids else t.topic, t.topic_id, p.partition, p.fetch_offset,
                           p.partition_max_bytes, p.current_leader_epoch)
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
                session.uses_topic_ids = uses_ids
                for i, pf in enumerate(requested):
                    states[i] = session.partitions[_key(uses_ids, pf)] = _state(pf)
            return SessionFetch(requested, states, session)
        session = self.get(request.session_id, request.session_epoch)
        if session.uses_topic_ids != uses_ids:
            raise KafkaError(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
                             f"fetch session {session.session_id} used topic ids inconsistently")
        for t in request.forgotten_topics_data:
            topic = t.topic_id if uses_ids else t.topic
            for p in t.partitions:
                session.partitions.pop((topic, p), None)
        for pf in requested:
            state = session.partitions.get(_key(uses_ids, pf))
            if state is None:
                session.partitions[_key(uses_ids, pf)] = _state(pf)
            else:
                state.fetch_offset, state.max_bytes, state.current_leader_epoch = (
                    pf.fetch_offset, pf.max_bytes, pf.current_leader_epoch)
        session.epoch = session.epoch + 1 if session.epoch < 0x7FFFFFFF else 1
        partitions, session_states = [], []
        for (_, partition), state in session.partitions.items():
            if uses_ids:
                if state.topic is None:
                    state.topic = name_of(state.topic_id)
                topic_id = state.topic_id  # the name stays: a deleted topic's partition reads as unknown
            else:
                topic_id = id_of(state.topic) or ZERO_UUID  # type: ignore[arg-type]
            partitions.append(PartitionFetch(state.topic, topic_id, partition, state.fetch_offset, state.max_bytes,
                                             state.current_leader_epoch))
            session_states.append(state)
        return SessionFetch(partitions, list(session_states), session, incremental=True)


def _key(uses_ids: bool, pf: PartitionFetch) -> tuple[Any, int]:
    return (pf.topic_id if uses_ids else pf.topic), pf.partition


def _state(pf: PartitionFetch) -> SessionPartition:
    return SessionPartition(pf.fetch_offset, pf.max_bytes, pf.current_leader_epoch, pf.topic, pf.topic_id)


__all__ = ["FINAL_EPOCH", "INITIAL_EPOCH", "FetchSession", "FetchSessionCache", "SessionFetch", "SessionPartition"]
