"""Answering a coordinator request only once what it saw is committed (Kafka's coordinator runtime
completes a response when the high watermark passes the writes it depends on).

Rules:

1. **Touching.** While a request is handled (between :func:`begin` and :func:`end`, which the
   dispatcher calls around every handler), each coordinator operation on a partition of an internal
   topic -- a write, or a read of state that writes built -- records ``(runtime, partition)`` with
   :func:`touch`. Timers and other work outside a request record nothing.
2. **Waiting.** :func:`wait` waits, for each touched partition, until the partition's high watermark
   passes the *last* coordinator write to it as of the moment of waiting (so a response parked until
   another request's write -- a JoinGroup completed by the leader's SyncGroup -- waits for that write
   too). A request that wrote nothing itself still waits for the writes its answer reflects: memory
   is never shown to a client before the ISR has it.
3. **Failing.** The first failure wins, as an error code already translated for a coordinator's
   answer (:func:`tidelog.coordinator.runtime.normalize_append_error`: NOT_LEADER_OR_FOLLOWER ->
   NOT_COORDINATOR, REQUEST_TIMED_OUT / NOT_ENOUGH_REPLICAS(_AFTER_APPEND) -> COORDINATOR_NOT_AVAILABLE).

On a single node (no replication) every write is committed when it is appended, so :func:`pending`
is false at once and the dispatcher answers without waiting. Loop-only, not thread-safe.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

from tidelog.errors import ErrorCode

Touched = set[tuple[Any, int]]  # (CoordinatorRuntime, partition)

_current: ContextVar[Touched | None] = ContextVar("tidelog_coordinator_touched", default=None)


def begin() -> Token:
    """Start collecting the partitions the current request touches (rule 1)."""
    return _current.set(set())


def end(token: Token) -> Touched:
    """Stop collecting; returns what the request touched."""
    touched = _current.get() or set()
    _current.reset(token)
    return touched


def touch(runtime: Any, partition: int) -> None:
    """Record that the current request (if any) depends on ``runtime``'s writes to ``partition``."""
    touched = _current.get()
    if touched is not None:
        touched.add((runtime, partition))


def pending(touched: Touched) -> bool:
    """Whether any touched partition has a coordinator write the high watermark has not passed."""
    return any(not runtime.is_committed(partition) for runtime, partition in touched)


async def wait(touched: Touched) -> ErrorCode:
    """Rule 2: wait until every touched partition's last write is committed; rule 3's error code or NONE."""
    for runtime, partition in touched:
        code = await runtime.committed(partition)
        if code != ErrorCode.NONE:
            return code
    return ErrorCode.NONE


__all__ = ["begin", "end", "pending", "touch", "wait"]
