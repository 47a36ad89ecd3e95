"""The leader's view of a replicated partition: its followers' progress, the high watermark, the ISR.

Sans-IO (times and offsets are passed in), so it is unit-tested without a network. The rules follow
Kafka's ``Partition`` (ZooKeeper era):

1. **Follower progress.** Each follower fetch reports the follower's log end offset (its fetch
   offset). The follower is *caught up* at the time of a fetch whose offset reaches the leader's log
   end, or, if it reaches the log end the leader had at the follower's previous fetch, at the time of
   that previous fetch (Kafka's ``lastCaughtUpTimeMs``). On becoming leader, members of the ISR count
   as caught up now and every follower's log end as unknown.
2. **High watermark** = the smallest log end offset among the leader and the ISR members (with
   members being added counted in: the "maximal" ISR while a change is being written); a follower
   whose log end is unknown holds it back. It never moves backwards.
3. **Shrink.** A follower in the ISR whose log end differs from the leader's and who has not been
   caught up for ``replica.lag.time.max.ms`` leaves the ISR.
4. **Expand.** A follower outside the ISR whose log end reaches both the high watermark and the start
   offset of the leader's current epoch joins it.
5. ISR changes are *proposed* here, written by the owner (conditionally, in ZooKeeper), and only take
   effect when the new partition state comes back; one change at a time (``pending``).

Loop-only, not thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

UNKNOWN = -1


@dataclass(slots=True)
class FollowerState:
    log_end_offset: int = UNKNOWN
    last_caught_up_ms: int = 0
    last_fetch_leader_end: int = UNKNOWN
    last_fetch_ms: int = 0


@dataclass(slots=True)
class LeaderPartitionState:
    leader_id: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    partition_epoch: int
    #: where this leader's epoch began in its log (rule 4)
    epoch_start_offset: int
    followers: dict[int, FollowerState] = field(default_factory=dict)
    #: an ISR change being written: the proposed ISR (None: none in flight)
    pending: tuple[int, ...] | None = None

    @classmethod
    def become_leader(cls, leader_id: int, leader_epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...],
                      partition_epoch: int, epoch_start_offset: int, now_ms: int) -> LeaderPartitionState:
        followers = {r: FollowerState(last_caught_up_ms=now_ms if r in isr else 0)
                     for r in replicas if r != leader_id}
        return cls(leader_id, leader_epoch, replicas, isr, partition_epoch, epoch_start_offset, followers)

    def update_metadata(self, replicas: tuple[int, ...], isr: tuple[int, ...], partition_epoch: int,
                        now_ms: int) -> None:
        """The partition state changed in the same leader epoch (an ISR change written)."""
        for r in replicas:
            if r != self.leader_id and r not in self.followers:
                self.followers[r] = FollowerState(last_caught_up_ms=now_ms if r in isr else 0)
        for r in list(self.followers):
            if r not in replicas:
                del self.followers[r]
        if partition_epoch != self.partition_epoch:
            self.pending = None  # the written change (or a conflicting one) came back
        self.replicas, self.isr, self.partition_epoch = replicas, isr, partition_epoch

    # ------------------------------------------------------------------------------ rule 1

    def record_fetch(self, follower_id: int, fetch_offset: int, leader_end: int, now_ms: int) -> bool:
        """A follower fetched from ``fetch_offset`` while the leader's log ended at ``leader_end``.
        False if ``follower_id`` is not a replica of this partition."""
        f = self.followers.get(follower_id)
        if f is None:
            return False
        if fetch_offset >= leader_end:
            f.last_caught_up_ms = max(f.last_caught_up_ms, now_ms)
        elif f.last_fetch_leader_end != UNKNOWN and fetch_offset >= f.last_fetch_leader_end:
            f.last_caught_up_ms = max(f.last_caught_up_ms, f.last_fetch_ms)
        f.log_end_offset = fetch_offset
        f.last_fetch_leader_end = leader_end
        f.last_fetch_ms = now_ms
        return True

    # ------------------------------------------------------------------------------ rule 2

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending is None:
            return self.isr
        return tuple(dict.fromkeys(self.isr + self.pending))

    def high_watermark(self, leader_end: int, current: int) -> int:
        low = leader_end
        for r in self.maximal_isr:
            if r == self.leader_id:
                continue
            f = self.followers.get(r)
            low = min(low, f.log_end_offset if f is not None and f.log_end_offset != UNKNOWN else current)
        return max(current, low)

    # --------------------------------------------------------------------------- rules 3-4

    def out_of_sync(self, leader_end: int, now_ms: int, max_lag_ms: int) -> list[int]:
        lagging = []
        for r in self.isr:
            if r == self.leader_id:
                continue
            f = self.followers.get(r)
            if f is None or (f.log_end_offset != leader_end and now_ms - f.last_caught_up_ms > max_lag_ms):
                lagging.append(r)
        return lagging

    def proposed_shrink(self, leader_end: int, now_ms: int, max_lag_ms: int) -> tuple[int, ...] | None:
        if self.pending is not None:
            return None
        lagging = self.out_of_sync(leader_end, now_ms, max_lag_ms)
        if not lagging:
            return None
        return tuple(r for r in self.isr if r not in lagging)

    def proposed_expand(self, follower_id: int, high_watermark: int, live: set[int] | None = None,
                        ) -> tuple[int, ...] | None:
        if self.pending is not None or follower_id in self.isr:
            return None
        f = self.followers.get(follower_id)
        if f is None or f.log_end_offset == UNKNOWN or (live is not None and follower_id not in live):
            return None
        if f.log_end_offset >= high_watermark and f.log_end_offset >= self.epoch_start_offset:
            return tuple(r for r in self.replicas if r in self.isr or r == follower_id)
        return None


__all__ = ["UNKNOWN", "FollowerState", "LeaderPartitionState"]
