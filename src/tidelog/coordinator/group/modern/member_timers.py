"""The timers of consumer group members (Kafka's GroupMetadataManager timers, in memory as in Kafka):

* **session**: a member that does not heartbeat within its session timeout (the group's
  ``consumer.session.timeout.ms``; a classic member's own session timeout) is fenced;
* **rebalance**: a consumer-protocol member that still holds partitions to revoke when its rebalance
  timeout runs out is fenced, unless it has left that member epoch meanwhile;
* **join**: a classic member told to rejoin (REBALANCE_IN_PROGRESS) that does not send JoinGroup within
  its rebalance timeout is fenced; the first such timer stands until the join arrives;
* **sync**: a classic member that joined and does not send SyncGroup within its rebalance timeout is
  fenced.

A timer runs as an operation on the group's ``__consumer_offsets`` partition; fencing a member that is
gone writes nothing. Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from tidelog.coordinator.runtime import CoordinatorRuntime, Result

#: fence(group id, member id, member epoch or None): the result that removes the member, if it is still
#: there (at that epoch, when one is given).
FenceFn = Callable[[str, str, "int | None"], Result[Any]]


class ConsumerGroupTimers(Protocol):
    """Coordinator timers (the runtime's): ``op`` runs as an operation on the group's partition."""

    def schedule(self, key: str, delay_ms: int, group_id: str, op: Callable[[], Result[Any] | None]) -> None: ...

    def cancel(self, key: str) -> None: ...

    def scheduled(self, key: str) -> bool: ...


#: Timer key prefixes by kind (distinct from the classic groups' ``join-``, ``sync-``, ``heartbeat-``).
_PREFIXES = {"session": "session-timeout", "rebalance": "rebalance-timeout", "join": "classic-member-join-timeout",
             "sync": "classic-member-sync-timeout"}
KINDS = tuple(_PREFIXES)


def _key(kind: str, group_id: str, member_id: str) -> str:
    return f"{_PREFIXES[kind]}-{group_id}-{member_id}"


class MemberTimers:
    """The four member timers over :class:`ConsumerGroupTimers` (none: no timers, as in some tests)."""

    def __init__(self, timers: ConsumerGroupTimers | None, fence: FenceFn) -> None:
        self.timers = timers
        self.fence = fence

    def _schedule(self, kind: str, group_id: str, member_id: str, delay_ms: int, epoch: int | None = None) -> None:
        if self.timers is not None:
            self.timers.schedule(_key(kind, group_id, member_id), max(delay_ms, 0), group_id,
                                 lambda: self.fence(group_id, member_id, epoch))

    def session(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self._schedule("session", group_id, member_id, timeout_ms)

    def rebalance(self, group_id: str, member_id: str, member_epoch: int, timeout_ms: int) -> None:
        """Fences the member only if it is still at ``member_epoch`` when the timeout runs out."""
        self._schedule("rebalance", group_id, member_id, timeout_ms, member_epoch)

    def join(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        """Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent: an armed join timer is left as it is."""
        if self.timers is not None and not self.timers.scheduled(_key("join", group_id, member_id)):
            self._schedule("join", group_id, member_id, timeout_ms)

    def sync(self, group_id: str, member_id: str, timeout_ms: int) -> None:
        self._schedule("sync", group_id, member_id, timeout_ms)

    def cancel(self, group_id: str, member_id: str, *kinds: str) -> None:
        """Cancel ``kinds`` (default: all four) of a member's timers."""
        if self.timers is not None:
            for kind in kinds or KINDS:
                self.timers.cancel(_key(kind, group_id, member_id))


class RuntimeTimers:
    """:class:`ConsumerGroupTimers` over the group coordinator's runtime: a group's timers run on its
    ``__consumer_offsets`` partition (``partition_for(group_id)``)."""

    def __init__(self, runtime: CoordinatorRuntime, partition_for: Callable[[str], int]) -> None:
        self._runtime = runtime
        self._partition_for = partition_for

    def schedule(self, key: str, delay_ms: int, group_id: str, op: Callable[[], Result[Any] | None]) -> None:
        self._runtime.schedule(key, delay_ms, self._partition_for(group_id), op)

    def cancel(self, key: str) -> None:
        self._runtime.cancel(key)

    def scheduled(self, key: str) -> bool:
        return key in self._runtime.timers


__all__ = ["KINDS", "ConsumerGroupTimers", "FenceFn", "MemberTimers", "RuntimeTimers"]
