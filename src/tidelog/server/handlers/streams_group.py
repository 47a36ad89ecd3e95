"""Streams groups (KIP-1071): StreamsGroupHeartbeat (v0-1), StreamsGroupDescribe (v0-1) and
StreamsGroupTopologyDescriptionUpdate (v0: as Kafka 4.4 without a topology description plugin, it answers
UNSUPPORTED_VERSION, and StreamsGroupDescribe v1 reports the description NOT_STORED).

Thin: the group coordinator service and its streams group type own every rule. Registered only when
``group.coordinator.rebalance.protocols`` lists ``streams`` (the default, as Kafka 4.4's); otherwise these
APIs are not in ApiVersions and answer UNSUPPORTED_VERSION. ACLs as Kafka checks them: READ on the group
for a heartbeat and DESCRIBE on every source topic of the topology a joining member sends; creating the
internal topics the topology misses needs CREATE on the cluster or on each topic (a topic the member may
not create is named in the MISSING_INTERNAL_TOPICS status instead); DESCRIBE on the group to describe it.

Internal topics (repartition and changelog topics) that a heartbeat finds missing are created here, as
Kafka's broker does after the coordinator's answer (its ``AutoTopicCreationManager``): with the partition
count the coordinator computed, the topology's replication factor (0 or -1: ``default.replication.factor``) and
configs. The member keeps seeing MISSING_INTERNAL_TOPICS until its heartbeat finds them in the metadata.
"""

from __future__ import annotations

import logging

from tidelog.cluster.controller import Controller, NewTopic
from tidelog.cluster.store import MetadataStore
from tidelog.coordinator.group.modern.streams.topology import MISSING_INTERNAL_TOPICS, InternalTopic
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
    StreamsGroupTopologyDescriptionUpdateRequest,
    StreamsGroupTopologyDescriptionUpdateResponse,
)
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.server.handlers.modern_groups import check_active, describe_groups, require_describable_topics

log = logging.getLogger(__name__)

D = StreamsGroupDescribeResponse


def _heartbeat_error(request: StreamsGroupHeartbeatRequest, code: ErrorCode, message: str | None
                     ) -> StreamsGroupHeartbeatResponse:
    return StreamsGroupHeartbeatResponse(error_code=int(code), error_message=message)


def _describe_error(request: StreamsGroupDescribeRequest, code: ErrorCode, message: str | None
                    ) -> StreamsGroupDescribeResponse:
    return D(groups=[D.DescribedGroup(group_id=g, error_code=int(code), error_message=message)
                     for g in request.group_ids])


def _update_error(request: StreamsGroupTopologyDescriptionUpdateRequest, code: ErrorCode, message: str | None
                  ) -> StreamsGroupTopologyDescriptionUpdateResponse:
    return StreamsGroupTopologyDescriptionUpdateResponse(error_code=int(code), error_message=message)


class StreamsGroupHandlers:
    def __init__(self, groups: GroupCoordinatorService, store: MetadataStore, controller: Controller,
                 default_replication_factor: int, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.groups = groups
        self.store = store
        self.controller = controller
        self.default_replication_factor = default_replication_factor
        self.authorizer = authorizer

    def _allowed(self, ctx: RequestContext, operation: AclOperation, resource: ResourceType, name: str) -> bool:
        return self.authorizer.authorize(ctx, operation, resource, name)

    @handles(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 1, _heartbeat_error)
    async def handle_streams_group_heartbeat(self, ctx: RequestContext, request: StreamsGroupHeartbeatRequest
                                             ) -> StreamsGroupHeartbeatResponse:
        if not self._allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if request.topology is not None:
            internal = {t.name for s in request.topology.subtopologies
                        for t in [*s.repartition_source_topics, *s.state_changelog_topics]}
            sources = {n for s in request.topology.subtopologies for n in s.source_topics if n not in internal}
            require_describable_topics(ctx, self.authorizer, sources)
        check_active(self.groups)
        outcome = await self.groups.streams_group_heartbeat(
            request, api_version=ctx.api_version, image=self.store.image, client_id=ctx.client_id,
            client_host="/" + ctx.client_host)
        response = outcome.response
        if outcome.to_create:
            failures = self._create(ctx, outcome.to_create)
            if failures:
                for status in response.status or ():
                    if status.status_code == MISSING_INTERNAL_TOPICS:
                        status.status_detail += " Errors: " + "; ".join(failures)
        return response

    def _create(self, ctx: RequestContext, topics: tuple[InternalTopic, ...]) -> list[str]:
        """Create the missing internal topics; the errors, as text, of those that could not be."""
        failures: list[str] = []
        cluster_create = self._allowed(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
        wanted = []
        for t in topics:
            if t.name in self.store.image.topics:
                continue
            if not cluster_create and not self._allowed(ctx, AclOperation.CREATE, ResourceType.TOPIC, t.name):
                failures.append(f"{t.name}: TOPIC_AUTHORIZATION_FAILED")
                continue
            wanted.append(NewTopic(t.name, t.partitions,
                                   t.replication_factor if t.replication_factor > 0 else self.default_replication_factor,
                                   dict(t.configs)))
        if wanted:
            for new, result in zip(wanted, self.controller.create_topics(wanted), strict=True):
                if isinstance(result, KafkaError) and result.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    log.warning("streams group internal topic %s not created: %s", new.name, result)
                    failures.append(f"{new.name}: {result.code.name} {result.message or ''}".rstrip())
        return failures

    @handles(ApiKey.STREAMS_GROUP_DESCRIBE, 0, 1, _describe_error)
    async def handle_streams_group_describe(self, ctx: RequestContext, request: StreamsGroupDescribeRequest
                                            ) -> StreamsGroupDescribeResponse:
        check_active(self.groups)
        include = ctx.api_version >= 1 and request.include_topology_description
        return D(groups=await describe_groups(
            ctx, self.authorizer, request.group_ids, request.include_authorized_operations,
            lambda valid: self.groups.streams_group_describe(valid, self.store.image, include), D.DescribedGroup))

    @handles(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, 0, _update_error)
    async def handle_streams_group_topology_description_update(
            self, ctx: RequestContext, request: StreamsGroupTopologyDescriptionUpdateRequest
    ) -> StreamsGroupTopologyDescriptionUpdateResponse:
        if not self._allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        # Kafka 4.4 stores topology descriptions only through a StreamsGroupTopologyDescriptionPlugin, which it
        # has none of by default (and Tidelog has none): the heartbeat never asks for one, and this answers so.
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                         "The broker has no streams group topology description plugin configured.")

__all__ = ["StreamsGroupHandlers"]
