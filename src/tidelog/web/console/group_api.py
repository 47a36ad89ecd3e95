"""Groups: list, describe (members, assignment, committed offsets and lag per partition), the sampled lag
history, resetting offsets, and deleting a group.

Groups are described with the broker's own ListGroups, DescribeGroups (classic groups) or
ConsumerGroupDescribe (KIP-848 groups) and OffsetFetch handlers. A reset is Kafka's
``kafka-consumer-groups --reset-offsets``: allowed only while the group has no members (Empty or Dead,
else 409 NON_EMPTY_GROUP, as Kafka's tool refuses), the target offsets clamped to each partition's
[log start, high watermark], then written with an admin OffsetCommit (no member, generation -1).

Share groups (type ``share``, KIP-932) are described by :mod:`tidelog.web.console.share_group_api`; their
reset writes the targets as new share start offsets (AlterShareGroupOffsets), under the same rules. A
group of any type is deleted with DeleteGroups (Kafka refuses one with members: 409 NON_EMPTY_GROUP).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tidelog.coordinator.group.classic.consumer_protocol import decode_assignment
from tidelog.errors import ErrorCode, KafkaError
from tidelog.replica.manager import ReplicaManager
from tidelog.web.console.admin import ConsoleAdmin
from tidelog.web.console.api_error import ApiError
from tidelog.web.console.params import INT_MAX, field, json_body
from tidelog.web.console.principal import principal_of
from tidelog.web.console.sampler import Sampler
from tidelog.web.console.share_admin import ShareAdmin
from tidelog.web.console.share_group_api import InFlight, ShareGroupView, no_in_flight

RESET_TARGETS = ("earliest", "latest", "offset", "timestamp")
INACTIVE_STATES = ("empty", "dead")


class GroupApi:
    def __init__(self, replicas: ReplicaManager, admin: ConsoleAdmin, sampler: Sampler,
                 sample_interval_ms: int, share_admin: ShareAdmin, in_flight: InFlight = no_in_flight) -> None:
        self.replicas = replicas
        self.sample_interval_ms = sample_interval_ms
        self.admin = admin
        self.sampler = sampler
        self.share_admin = share_admin
        self.shares = ShareGroupView(share_admin, sampler, in_flight)

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/v1/groups", self.list_groups),
                web.get("/api/v1/groups/{group}", self.describe),
                web.delete("/api/v1/groups/{group}", self.delete),
                web.get("/api/v1/groups/{group}/lag-history", self.lag_history),
                web.post("/api/v1/groups/{group}/reset-offsets", self.reset_offsets)]

    async def list_groups(self, request: web.Request) -> web.Response:
        principal = principal_of(request)
        groups = await self.admin.list_groups(principal)
        for g in groups:
            points = self.sampler.groups.get(g["group_id"])
            g["lag"] = points.points[-1][1] if points and points.points else None
            if g["type"] == "share":  # not sampled: its lag now, from its start offsets
                try:
                    g["lag"] = await self.shares.total_lag(principal, g["group_id"])
                except ApiError:
                    g["lag"] = None
        return web.json_response({"groups": sorted(groups, key=lambda g: g["group_id"])})

    async def _listed(self, request: web.Request, group_id: str) -> dict[str, str] | None:
        return next((g for g in await self.admin.list_groups(principal_of(request)) if g["group_id"] == group_id),
                    None)

    async def describe(self, request: web.Request) -> web.Response:
        group_id = request.match_info["group"]
        principal = principal_of(request)
        listed = await self._listed(request, group_id)
        if listed is None:
            raise ApiError.from_kafka(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} does not exist.")
        if listed["type"] == "share":
            return web.json_response(await self.shares.describe(principal, listed))
        members, protocol = await self._members(principal, group_id, listed["type"])
        owner = {(a["topic"], p): m["member_id"] for m in members for a in m["assignment"] for p in a["partitions"]}
        committed = await self.admin.committed_offsets(principal, group_id)
        lags = self.sampler.lags(committed)
        offsets = []
        for (topic, partition), offset in sorted(committed.items()):
            offsets.append({"topic": topic, "partition": partition, "committed_offset": offset,
                            "end_offset": self.sampler.end_offset(topic, partition),
                            "lag": lags[(topic, partition)], "member_id": owner.get((topic, partition))})
        for topic, partition in sorted(set(owner) - set(committed)):  # assigned, nothing committed yet
            offsets.append({"topic": topic, "partition": partition, "committed_offset": None,
                            "end_offset": self.sampler.end_offset(topic, partition), "lag": None,
                            "member_id": owner[(topic, partition)]})
        offsets.sort(key=lambda o: (o["topic"], o["partition"]))
        return web.json_response({
            "group_id": group_id, "type": listed["type"], "state": listed["state"],
            "protocol_type": listed["protocol_type"], "protocol": protocol, "members": members, "offsets": offsets,
            "lag": sum(o["lag"] for o in offsets if o["lag"] is not None)})

    async def _members(self, principal, group_id: str, group_type: str) -> tuple[list[dict[str, Any]], str | None]:
        if group_type == "consumer":
            g = await self.admin.describe_consumer_group(principal, group_id)
            return [{"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                     "instance_id": m.instance_id, "member_epoch": m.member_epoch,
                     "assignment": [{"topic": tp.topic_name, "partitions": sorted(tp.partitions)}
                                    for tp in m.assignment.topic_partitions]}
                    for m in g.members], g.assignor_name
        g = await self.admin.describe_classic_group(principal, group_id)
        members = []
        for m in g.members:
            assignment: dict[str, list[int]] = {}
            if g.protocol_type == "consumer" and m.member_assignment:
                try:
                    assignment = decode_assignment(m.member_assignment)
                except Exception:  # a client's own bytes: show the member without its assignment
                    assignment = {}
            members.append({"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
                            "instance_id": m.group_instance_id,
                            "assignment": [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(assignment.items())]})
        return members, g.protocol_data or None

    async def lag_history(self, request: web.Request) -> web.Response:
        group_id = request.match_info["group"]
        try:  # the history is sampled by the broker: show it only to who may describe the group
            await self.admin.describe_classic_group(principal_of(request), group_id)
        except ApiError as e:
            if e.status == 403:
                raise
        return web.json_response({"group_id": group_id, "interval_ms": self.sample_interval_ms,
                                  "points": self.sampler.lag_history(group_id)})

    async def reset_offsets(self, request: web.Request) -> web.Response:
        group_id = request.match_info["group"]
        body = await json_body(request)
        to = field(body, "to", str)
        if to not in RESET_TARGETS:
            raise ApiError.bad_request(f"'to' must be one of {', '.join(RESET_TARGETS)}, not {to!r}")
        target_offset = field(body, "offset", int, lo=0) if to == "offset" else None
        target_time = field(body, "timestamp", int, lo=0) if to == "timestamp" else None
        topic = field(body, "topic", str, None, nullable=True)
        wanted = field(body, "partitions", list, None, nullable=True)
        if wanted is not None and (topic is None or not all(isinstance(p, int) and not isinstance(p, bool)
                                                            and 0 <= p <= INT_MAX for p in wanted)):
            raise ApiError.bad_request("'partitions' must be a list of partition numbers, with a 'topic'")
        dry_run = field(body, "dry_run", bool, False)
        principal = principal_of(request)

        listed = await self._listed(request, group_id)
        if listed is not None and listed["state"].lower() not in INACTIVE_STATES:
            raise ApiError.from_kafka(
                ErrorCode.NON_EMPTY_GROUP,
                f"Offsets can only be reset while group {group_id} has no members, but it is {listed['state']}: "
                "stop its consumers first.")
        share = listed is not None and listed["type"] == "share"
        if share:
            committed = await self.share_admin.share_start_offsets(principal, group_id)
            committed = {tp: o for tp, o in committed.items() if o >= 0}
        else:
            committed = await self.admin.committed_offsets(principal, group_id)
        partitions = self._partitions(topic, wanted, committed)
        offsets: dict[tuple[str, int], int] = {}
        for t, p in partitions:
            try:
                bounds = self.replicas.leader_offsets(t, p)
                if to == "timestamp":
                    found = self.replicas.offset_for_timestamp(t, p, target_time)  # type: ignore[arg-type]
                    offsets[(t, p)] = bounds.high_watermark if found is None else found[1]
                else:
                    chosen = {"earliest": bounds.log_start_offset, "latest": bounds.high_watermark}.get(to, target_offset)
                    offsets[(t, p)] = min(max(chosen, bounds.log_start_offset), bounds.high_watermark)  # type: ignore[type-var]
            except KafkaError as e:
                raise ApiError.from_kafka(e.code, f"{t}-{p}: {e.message}") from None
        if not dry_run and share:
            await self.share_admin.alter_share_start_offsets(principal, group_id, offsets)
        elif not dry_run:
            await self.admin.commit_offsets(principal, group_id, offsets)
        return web.json_response({"group_id": group_id, "dry_run": dry_run, "offsets": [
            {"topic": t, "partition": p, "previous_offset": committed.get((t, p)), "offset": o}
            for (t, p), o in sorted(offsets.items())]})

    async def delete(self, request: web.Request) -> web.Response:
        group_id = request.match_info["group"]
        await self.share_admin.delete_group(principal_of(request), group_id)
        return web.json_response({"group_id": group_id, "deleted": True})

    def _partitions(self, topic: str | None, wanted: list[int] | None,
                    committed: dict[tuple[str, int], int]) -> list[tuple[str, int]]:
        if topic is None:
            if not committed:
                raise ApiError.bad_request("the group has no committed offsets: name the 'topic' to reset")
            return sorted(committed)
        meta = self.replicas.image.topics.get(topic)
        if meta is None:
            raise ApiError.from_kafka(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic}' does not exist")
        count = len(meta.partitions)
        if wanted is None:
            return [(topic, p) for p in range(count)]
        missing = sorted(p for p in set(wanted) if p >= count)
        if missing:
            raise ApiError.from_kafka(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                      f"Topic '{topic}' has {count} partitions: no partition {missing[0]}")
        return [(topic, p) for p in sorted(set(wanted))]


__all__ = ["GroupApi"]
