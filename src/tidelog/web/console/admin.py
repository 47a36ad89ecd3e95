"""The console's Kafka requests: each JSON API action that a Kafka API covers is sent as that Kafka request
to the broker's own handler (through the composition root's internal client), so it gets the same
validation, the same error codes and, once authorization exists, the same ACL checks as a client's.

Errors come back as :class:`ApiError` carrying the Kafka error's name and message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tidelog.errors import ErrorCode
from tidelog.protocol.message import Message
from tidelog.protocol.messages import (
    ConsumerGroupDescribeRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeTransactionsRequest,
    DescribeUserScramCredentialsRequest,
    IncrementalAlterConfigsRequest,
    ListGroupsRequest,
    ListTransactionsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ProduceRequest,
)
from tidelog.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from tidelog.security.principal import KafkaPrincipal
from tidelog.security.scram import MECHANISM_TYPES
from tidelog.web.console.api_error import ApiError, check

#: ``send(request, version, principal)``: a Kafka request answered by the broker's handler.
Send = Callable[[Message, int, KafkaPrincipal], Awaitable[Any]]

TOPIC_RESOURCE = 2
CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                  3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                  6: "DYNAMIC_BROKER_LOGGER_CONFIG", 8: "DYNAMIC_GROUP_CONFIG"}
#: IncrementalAlterConfigs operations: set a value, or delete the override (back to the default).
SET, DELETE = 0, 1


class ConsoleAdmin:
    def __init__(self, send: Send) -> None:
        self._send = send

    # ------------------------------------------------------------------------------- topics

    async def create_topic(self, principal: KafkaPrincipal, name: str, partitions: int, replication_factor: int,
                           configs: dict[str, str | None], validate_only: bool = False) -> dict[str, Any]:
        T = CreateTopicsRequest.CreatableTopic
        request = CreateTopicsRequest(topics=[T(
            name=name, num_partitions=partitions, replication_factor=replication_factor, assignments=[],
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])],
            timeout_ms=30_000, validate_only=validate_only)
        response = await self._send(request, 7, principal)
        (result,) = response.topics
        check(result.error_code, result.error_message)
        return {"name": result.name, "topic_id": str(result.topic_id), "partitions": result.num_partitions,
                "replication_factor": result.replication_factor}

    async def delete_topic(self, principal: KafkaPrincipal, name: str) -> None:
        request = DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=name)], timeout_ms=30_000)
        response = await self._send(request, 6, principal)
        (result,) = response.responses
        check(result.error_code, result.error_message)

    async def describe_topic_configs(self, principal: KafkaPrincipal, name: str) -> list[dict[str, Any]]:
        request = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=TOPIC_RESOURCE, resource_name=name, configuration_keys=None)],
            include_synonyms=False, include_documentation=True)
        response = await self._send(request, 4, principal)
        (result,) = response.results
        check(result.error_code, result.error_message)
        return [{"name": c.name, "value": None if c.is_sensitive else c.value, "source": CONFIG_SOURCES.get(
                    c.config_source, str(c.config_source)), "default": c.is_default, "read_only": c.read_only,
                 "sensitive": c.is_sensitive, "documentation": c.documentation}
                for c in sorted(result.configs, key=lambda c: c.name)]

    async def alter_topic_configs(self, principal: KafkaPrincipal, name: str, changes: dict[str, str | None],
                                  validate_only: bool = False) -> None:
        """``changes``: a value sets the override, None deletes it (back to the default)."""
        C = IncrementalAlterConfigsRequest.AlterableConfig
        request = IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=TOPIC_RESOURCE, resource_name=name,
            configs=[C(name=k, config_operation=DELETE if v is None else SET, value=v) for k, v in changes.items()])],
            validate_only=validate_only)
        response = await self._send(request, 1, principal)
        (result,) = response.responses
        check(result.error_code, result.error_message)

    async def log_dirs(self, principal: KafkaPrincipal) -> list[dict[str, Any]]:
        response = await self._send(DescribeLogDirsRequest(topics=None), 4, principal)
        check(response.error_code)
        return [{"path": r.log_dir, "error": r.error_code or None,
                 "size_bytes": sum(p.partition_size for t in r.topics for p in t.partitions),
                 "partitions": sum(len(t.partitions) for t in r.topics),
                 "total_bytes": r.total_bytes if r.total_bytes >= 0 else None,
                 "usable_bytes": r.usable_bytes if r.usable_bytes >= 0 else None}
                for r in response.results]

    async def describable_topics(self, principal: KafkaPrincipal) -> set[str]:
        """The topics ``principal`` may describe (a Metadata request for all topics, which hides the others)."""
        request = MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                  include_topic_authorized_operations=False)
        response = await self._send(request, 12, principal)
        return {t.name for t in response.topics if t.error_code == 0 and t.name is not None}

    async def topic_operations(self, principal: KafkaPrincipal, name: str) -> set[str]:
        """What the authorizer lets ``principal`` do on topic ``name`` (a Metadata request for it, never
        creating it): TOPIC_AUTHORIZATION_FAILED without DESCRIBE, UNKNOWN_TOPIC_OR_PARTITION if absent."""
        request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                                  allow_auto_topic_creation=False, include_topic_authorized_operations=True)
        response = await self._send(request, 12, principal)
        (t,) = response.topics
        check(t.error_code)
        ops = t.topic_authorized_operations
        return {op.name for op in AclOperation if ops > 0 and ops & (1 << op)}

    async def require_topic(self, principal: KafkaPrincipal, name: str, operation: str) -> None:
        """Raise 403 TOPIC_AUTHORIZATION_FAILED unless ``principal`` may do ``operation`` on topic ``name``."""
        if operation not in await self.topic_operations(principal, name):
            raise ApiError.from_kafka(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                      f"Not authorized to {operation} topic '{name}'")

    # ----------------------------------------------------------------------------- messages

    async def produce(self, principal: KafkaPrincipal, topic: str, partition: int, batch: bytes) -> int:
        """Append one batch (acks=-1); returns its base offset."""
        request = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.PartitionProduceData(index=partition, records=batch)])])
        response = await self._send(request, 9, principal)
        (t,) = response.responses
        (p,) = t.partition_responses
        detail = p.error_message or "; ".join(e.batch_index_error_message or "" for e in p.record_errors) or None
        check(p.error_code, detail)
        return p.base_offset

    # ------------------------------------------------------------------------------- groups

    async def list_groups(self, principal: KafkaPrincipal) -> list[dict[str, str]]:
        response = await self._send(ListGroupsRequest(states_filter=[], types_filter=[]), 5, principal)
        check(response.error_code)
        return [{"group_id": g.group_id, "protocol_type": g.protocol_type, "state": g.group_state,
                 "type": g.group_type} for g in response.groups]

    async def describe_classic_group(self, principal: KafkaPrincipal, group_id: str) -> Any:
        response = await self._send(DescribeGroupsRequest(groups=[group_id], include_authorized_operations=False),
                                    5, principal)
        (g,) = response.groups
        check(g.error_code, g.error_message)
        return g

    async def describe_consumer_group(self, principal: KafkaPrincipal, group_id: str) -> Any:
        response = await self._send(ConsumerGroupDescribeRequest(group_ids=[group_id],
                                                                 include_authorized_operations=False), 0, principal)
        (g,) = response.groups
        check(g.error_code, g.error_message)
        return g

    async def committed_offsets(self, principal: KafkaPrincipal, group_id: str) -> dict[tuple[str, int], int]:
        """Every committed offset of the group (an unknown group has none)."""
        request = OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id=group_id, member_id=None, member_epoch=-1, topics=None)], require_stable=False)
        response = await self._send(request, 8, principal)
        (g,) = response.groups
        check(g.error_code)
        out = {}
        for t in g.topics:
            for p in t.partitions:
                check(p.error_code)
                if p.committed_offset >= 0:
                    out[(t.name, p.partition_index)] = p.committed_offset
        return out

    async def commit_offsets(self, principal: KafkaPrincipal, group_id: str,
                             offsets: dict[tuple[str, int], int]) -> None:
        """An admin commit (no member, generation -1), as Kafka's reset-offsets tool makes."""
        by_topic: dict[str, list[Any]] = {}
        P = OffsetCommitRequest.OffsetCommitRequestPartition
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(P(partition_index=partition, committed_offset=offset,
                                                    committed_leader_epoch=-1, committed_metadata=""))
        request = OffsetCommitRequest(group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
                                      group_instance_id=None, retention_time_ms=-1, topics=[
                                          OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                                          for t, ps in by_topic.items()])
        response = await self._send(request, 8, principal)
        for t in response.topics:
            for p in t.partitions:
                check(p.error_code, f"{t.name}-{p.partition_index}: {ApiError.from_kafka(p.error_code).message}"
                      if p.error_code else None)

    # ------------------------------------------------------------------------- transactions

    async def list_transactions(self, principal: KafkaPrincipal, states: list[str],
                                producer_ids: list[int]) -> list[dict[str, Any]]:
        """The transactional ids this broker coordinates that ``principal`` may describe (ListTransactions,
        which leaves the others out), filtered by state names and producer ids (empty: all)."""
        request = ListTransactionsRequest(state_filters=states, producer_id_filters=producer_ids)
        response = await self._send(request, 1, principal)
        check(response.error_code)
        if response.unknown_state_filters:
            raise ApiError.bad_request(f"unknown transaction state(s): {', '.join(response.unknown_state_filters)}")
        return sorted(({"transactional_id": t.transactional_id, "producer_id": t.producer_id,
                        "state": t.transaction_state} for t in response.transaction_states),
                      key=lambda t: t["transactional_id"])

    async def describe_transaction(self, principal: KafkaPrincipal, transactional_id: str) -> dict[str, Any]:
        """One transactional id (DescribeTransactions): 404 TRANSACTIONAL_ID_NOT_FOUND if unknown, 403
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED without DESCRIBE on it; partitions of topics the principal may
        not describe are left out, as Kafka does."""
        response = await self._send(DescribeTransactionsRequest(transactional_ids=[transactional_id]), 0, principal)
        (t,) = response.transaction_states
        check(t.error_code, f"Transactional id '{transactional_id}': {ApiError.from_kafka(t.error_code).message}"
              if t.error_code else None)
        return {"transactional_id": t.transactional_id, "state": t.transaction_state, "producer_id": t.producer_id,
                "producer_epoch": t.producer_epoch, "timeout_ms": t.transaction_timeout_ms,
                "start_time": t.transaction_start_time_ms if t.transaction_start_time_ms >= 0 else None,
                "partitions": [{"topic": d.topic, "partition": p} for d in sorted(t.topics, key=lambda d: d.topic)
                               for p in sorted(d.partitions)]}

    # ----------------------------------------------------------------------------- security

    async def cluster_operations(self, principal: KafkaPrincipal) -> list[str]:
        """The cluster operations the authorizer allows ``principal`` (DescribeCluster's authorized
        operations: empty without DESCRIBE on the cluster)."""
        response = await self._send(DescribeClusterRequest(include_cluster_authorized_operations=True), 0, principal)
        check(response.error_code, response.error_message)
        ops = response.cluster_authorized_operations
        return [op.name for op in AclOperation if ops > 0 and ops & (1 << op)]

    async def describe_users(self, principal: KafkaPrincipal) -> list[dict[str, Any]]:
        """Every SCRAM user and its mechanisms (DescribeUserScramCredentials, all users)."""
        response = await self._send(DescribeUserScramCredentialsRequest(users=None), 0, principal)
        check(response.error_code, response.error_message)
        out = []
        for r in sorted(response.results, key=lambda r: r.user):
            check(r.error_code, r.error_message)
            out.append({"user": r.user, "credentials": [
                {"mechanism": MECHANISM_TYPES.get(c.mechanism, str(c.mechanism)), "iterations": c.iterations}
                for c in r.credential_infos]})
        return out

    async def describe_acls(self, principal: KafkaPrincipal) -> list[dict[str, Any]]:
        """Every ACL (DescribeAcls with a filter matching all)."""
        request = DescribeAclsRequest(resource_type_filter=int(ResourceType.ANY), resource_name_filter=None,
                                      pattern_type_filter=int(PatternType.ANY), principal_filter=None,
                                      host_filter=None, operation=int(AclOperation.ANY),
                                      permission_type=int(AclPermissionType.ANY))
        response = await self._send(request, 3, principal)
        check(response.error_code, response.error_message)
        return [{"resource_type": _name(ResourceType, r.resource_type), "resource_name": r.resource_name,
                 "pattern_type": _name(PatternType, r.pattern_type), "principal": a.principal, "host": a.host,
                 "operation": _name(AclOperation, a.operation), "permission": _name(AclPermissionType, a.permission_type)}
                for r in response.resources for a in r.acls]


def _name(enum: Any, code: int) -> str:
    try:
        return enum(code).name
    except ValueError:
        return str(code)


__all__ = ["ConsoleAdmin", "Send"]
