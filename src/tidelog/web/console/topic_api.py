"""Topics: list (with search), create, delete, describe (partition table), describe and alter configs.

Creating, deleting and altering go to the broker's CreateTopics, DeleteTopics and IncrementalAlterConfigs
handlers (Kafka's checks and error codes); the listing and partition table read the metadata image and,
for offsets and sizes, the partitions' logs on this broker (``null`` where another broker leads), showing
only the topics a Metadata request as the caller's principal shows (the authorizer's DESCRIBE).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tidelog.cluster.metadata import MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.errors import ErrorCode, KafkaError
from tidelog.replica.manager import ReplicaManager
from tidelog.web.console.admin import ConsoleAdmin
from tidelog.web.console.api_error import ApiError
from tidelog.web.console.params import INT_MAX, field, json_body, string_map
from tidelog.web.console.principal import principal_of


def under_replicated(p: PartitionMetadata) -> bool:
    return len(p.isr) < len(p.replicas)


def offline(p: PartitionMetadata) -> bool:
    return p.leader < 0


class TopicApi:
    def __init__(self, replicas: ReplicaManager, admin: ConsoleAdmin) -> None:
        self.replicas = replicas
        self.admin = admin

    @property
    def image(self) -> MetadataImage:
        return self.replicas.image

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/v1/topics", self.list_topics),
                web.post("/api/v1/topics", self.create),
                web.get("/api/v1/topics/{topic}", self.describe),
                web.delete("/api/v1/topics/{topic}", self.delete),
                web.get("/api/v1/topics/{topic}/configs", self.configs),
                web.patch("/api/v1/topics/{topic}/configs", self.alter_configs)]

    def _topic(self, name: str) -> TopicMetadata:
        topic = self.image.topics.get(name)
        if topic is None:
            raise ApiError.from_kafka(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist")
        return topic

    def partition_row(self, topic: str, p: PartitionMetadata) -> dict[str, Any]:
        row: dict[str, Any] = {"partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch,
                               "replicas": list(p.replicas), "isr": list(p.isr),
                               "under_replicated": under_replicated(p), "offline": offline(p),
                               "start_offset": None, "end_offset": None, "size_bytes": None}
        try:
            summary = self.replicas.leader_summary(topic, p.partition)
        except KafkaError:
            return row
        row.update(start_offset=summary.offsets.log_start_offset, end_offset=summary.offsets.high_watermark,
                   size_bytes=summary.size_bytes)
        return row

    def summary(self, topic: TopicMetadata) -> dict[str, Any]:
        rows = [self.partition_row(topic.name, p) for p in topic.partitions]
        return {"name": topic.name, "topic_id": str(topic.topic_id), "internal": topic.is_internal,
                "partitions": len(topic.partitions), "replication_factor": topic.replication_factor,
                "under_replicated": sum(r["under_replicated"] for r in rows),
                "messages": sum(r["end_offset"] - r["start_offset"] for r in rows if r["end_offset"] is not None),
                "size_bytes": sum(r["size_bytes"] for r in rows if r["size_bytes"] is not None)}

    async def list_topics(self, request: web.Request) -> web.Response:
        search = request.query.get("search", "").strip().lower()
        internal = request.query.get("internal", "true").lower() not in ("false", "0", "no")
        allowed = await self.admin.describable_topics(principal_of(request))
        topics = [self.summary(t) for name, t in sorted(self.image.topics.items())
                  if name in allowed and search in name.lower() and (internal or not t.is_internal)]
        return web.json_response({"topics": topics})

    async def create(self, request: web.Request) -> web.Response:
        body = await json_body(request)
        name = field(body, "name", str)
        partitions = field(body, "partitions", int, -1, lo=-1, hi=INT_MAX)
        replication_factor = field(body, "replication_factor", int, -1, lo=-1, hi=32767)
        configs = string_map(body, "configs")
        validate_only = field(body, "validate_only", bool, False)
        created = await self.admin.create_topic(principal_of(request), name, partitions, replication_factor,
                                                configs, validate_only)
        return web.json_response(created, status=200 if validate_only else 201)

    async def describe(self, request: web.Request) -> web.Response:
        await self.admin.require_topic(principal_of(request), request.match_info["topic"], "DESCRIBE")
        topic = self._topic(request.match_info["topic"])
        return web.json_response({**self.summary(topic), "configs_overridden": dict(topic.configs),
                                  "partition_table": [self.partition_row(topic.name, p) for p in topic.partitions]})

    async def delete(self, request: web.Request) -> web.Response:
        name = request.match_info["topic"]
        await self.admin.delete_topic(principal_of(request), name)
        return web.json_response({"deleted": name})

    async def configs(self, request: web.Request) -> web.Response:
        name = request.match_info["topic"]
        return web.json_response({"topic": name, "configs": await self.admin.describe_topic_configs(
            principal_of(request), name)})

    async def alter_configs(self, request: web.Request) -> web.Response:
        name = request.match_info["topic"]
        body = await json_body(request)
        changes = string_map(body, "configs")
        if not changes:
            raise ApiError.bad_request("'configs' must name at least one config (a value sets it, null resets it)")
        principal = principal_of(request)
        await self.admin.alter_topic_configs(principal, name, changes, field(body, "validate_only", bool, False))
        return web.json_response({"topic": name, "configs": await self.admin.describe_topic_configs(principal, name)})


__all__ = ["TopicApi", "offline", "under_replicated"]
