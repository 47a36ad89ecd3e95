"""Share groups (KIP-932) in the console: a share group's members and assignments (ShareGroupDescribe),
per partition its share start offset (DescribeShareGroupOffsets), the log end offset and lag, and the
in-flight records of the partitions this broker leads; resetting its start offsets (AlterShareGroupOffsets).

The in-flight records are the share partitions' windows held by this broker's share partition manager
(``in_flight(group_id)``, a read-only snapshot handed over by the composition root, as the group
coordinator is for the lag sampler); a partition led by another broker shows no in-flight figures.

Lag (KIP-1226): the records from the share start offset to the log end offset (the high watermark) that are
not yet delivery-complete (acknowledged or archived). Where this broker holds the partition's window and the
window starts at the share start offset it is ``high watermark - start offset - records of the window
acknowledged or archived``; otherwise (another broker leads; or the window and the persisted start offset
differ, e.g. the log start moved, or the offsets were reset while this broker held the window) it is
``high watermark - share start offset``, an upper bound. No lag while the start offset is not known yet
(-1: the share partition starts at its first fetch, by ``share.auto.offset.reset``) or the high watermark
is not (another broker leads).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tidelog.security.principal import KafkaPrincipal
from tidelog.share.manager import SharePartitionSnapshot
from tidelog.web.console.sampler import Sampler
from tidelog.web.console.share_admin import ShareAdmin

InFlight = Callable[[str], list[SharePartitionSnapshot]]


def no_in_flight(group_id: str) -> list[SharePartitionSnapshot]:
    return []


class ShareGroupView:
    def __init__(self, admin: ShareAdmin, sampler: Sampler, in_flight: InFlight = no_in_flight) -> None:
        self.admin = admin
        self.sampler = sampler
        self.in_flight = in_flight

    async def total_lag(self, principal: KafkaPrincipal, group_id: str) -> int | None:
        """The group's lag for the group list (the sum of its partitions' known lags)."""
        starts = await self.admin.share_start_offsets(principal, group_id)
        windows = {(s.topic, s.partition): s for s in self.in_flight(group_id)}
        known = [lag for (t, p), start in starts.items()
                 if (lag := share_lag(start, self.sampler.end_offset(t, p), windows.get((t, p)))) is not None]
        return sum(known) if known else None

    async def describe(self, principal: KafkaPrincipal, listed: dict[str, str]) -> dict[str, Any]:
        group_id = listed["group_id"]
        g = await self.admin.describe_share_group(principal, group_id)
        members = [{"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                    "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                    "subscribed_topics": sorted(m.subscribed_topic_names),
                    "assignment": sorted(({"topic": tp.topic_name, "partitions": sorted(tp.partitions)}
                                          for tp in m.assignment.topic_partitions), key=lambda a: a["topic"])}
                   for m in g.members]
        owners: dict[tuple[str, int], list[str]] = {}
        for m in members:
            for a in m["assignment"]:
                for p in a["partitions"]:
                    owners.setdefault((a["topic"], p), []).append(m["member_id"])
        starts = await self.admin.share_start_offsets(principal, group_id)
        windows = {(s.topic, s.partition): s for s in self.in_flight(group_id)}
        offsets = []
        for topic, partition in sorted(set(starts) | set(owners)):
            start = starts.get((topic, partition), -1)
            end = self.sampler.end_offset(topic, partition)
            window = windows.get((topic, partition))
            offsets.append({
                "topic": topic, "partition": partition, "start_offset": start if start >= 0 else None,
                "end_offset": end, "lag": share_lag(start, end, window), "member_ids": sorted(owners.get((topic, partition), [])),
                "in_flight": None if window is None else {
                    "acquired": window.acquired, "available": window.available,
                    "delivery_complete": window.delivery_complete,
                    "window_start": window.start_offset, "window_end": window.end_offset}})
        known = [o["lag"] for o in offsets if o["lag"] is not None]
        return {"group_id": group_id, "type": listed["type"], "state": g.group_state or listed["state"],
                "protocol_type": listed["protocol_type"], "protocol": g.assignor_name or None,
                "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
                "members": members, "offsets": offsets, "lag": sum(known) if known else None}


def share_lag(start: int, end: int | None, window: SharePartitionSnapshot | None) -> int | None:
    if end is None:
        return None
    if start < 0:
        return None
    if window is not None and window.start_offset == start:  # the window agrees with the persisted state
        return max(0, end - window.start_offset - window.delivery_complete)
    return max(0, end - start)


__all__ = ["InFlight", "ShareGroupView", "no_in_flight", "share_lag"]
