"""Offset APIs: OffsetCommit, OffsetFetch, OffsetDelete. Thin: check that topics and partitions exist
(UNKNOWN_TOPIC_OR_PARTITION per partition, as Kafka's KafkaApis does), call the group coordinator,
and shape the answer for the request's version:

* OffsetCommit: per-partition codes; a group-level failure (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
  REBALANCE_IN_PROGRESS, GROUP_ID_NOT_FOUND from v9 ...) is reported on every partition.
* OffsetFetch: the coordinator answers in the v8+ per-group form; v0-v7 carry one group, with the
  group-level error at the top (v2+) or on every partition (v0-v1). ``topics`` null means every
  committed offset of the group (v2+). With ``require_stable`` (v7+) a partition whose offset a
  transaction has written but not yet committed or aborted gets UNSTABLE_OFFSET_COMMIT (the consumer
  retries until the transaction ends).
* OffsetDelete: per-partition codes, group-level errors at the top.

From OffsetCommit and OffsetFetch v10 (and TxnOffsetCommit v6) topics are named by id (KIP-848): the
handler looks each id up (:func:`name_topics_by_id`); a partition of an unknown id gets
UNKNOWN_TOPIC_ID, and the answer names topics by id (an all-topics OffsetFetch leaves out the topics
that no longer exist, which have no id).

Authorization (Kafka's): OffsetCommit needs READ on the group (GROUP_AUTHORIZATION_FAILED for every
partition) and READ on each topic (TOPIC_AUTHORIZATION_FAILED); OffsetFetch DESCRIBE on the group and
on each topic asked for (topics it may not describe are left out of an all-topics answer);
OffsetDelete DELETE on the group and READ on each topic.
"""

from __future__ import annotations

from collections.abc import Callable

from tidelog.cluster.metadata import MetadataImage
from tidelog.cluster.store import MetadataStore
from tidelog.coordinator.group import PartitionCommit
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.server.handlers.groups import request_info

#: Starts the placeholder name of a topic id that names no topic (no topic name contains "\0").
UNKNOWN_ID_MARK = "\0"


def name_topics_by_id(image: MetadataImage, topics: list) -> dict[tuple[str, int], ErrorCode]:
    """Versions that name topics by id: set each request topic's ``name`` from its ``topic_id``; a
    topic id no topic has gets a placeholder name, and each of its partitions UNKNOWN_TOPIC_ID (the
    codes returned, by (placeholder, partition))."""
    unknown: dict[tuple[str, int], ErrorCode] = {}
    for t in topics:
        found = image.topic_by_id(t.topic_id)
        t.name = found.name if found is not None else f"{UNKNOWN_ID_MARK}{t.topic_id}"
        if found is None:
            parts = t.partition_indexes if hasattr(t, "partition_indexes") else [p.partition_index for p in t.partitions]
            unknown.update({(t.name, p): ErrorCode.UNKNOWN_TOPIC_ID for p in parts})
    return unknown


def commits_to_write(ctx: RequestContext, authorizer: Authorizer, topics: list,
                     exists: Callable[[str, int], bool], codes: dict[tuple[str, int], ErrorCode]
                     ) -> list[PartitionCommit]:
    """The partitions of an OffsetCommit or TxnOffsetCommit request the coordinator is asked to write; the
    others get their code in ``codes``: TOPIC_AUTHORIZATION_FAILED without READ on the topic,
    UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist (a topic named by an unknown id, see
    :func:`name_topics_by_id`, has its codes already)."""
    commits = []
    for t in topics:
        if t.name.startswith(UNKNOWN_ID_MARK):
            continue
        denied = not authorizer.authorize(ctx, AclOperation.READ, ResourceType.TOPIC, t.name)
        for p in t.partitions:
            if denied:
                codes[(t.name, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                continue
            if not exists(t.name, p.partition_index):
                codes[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            # TxnOffsetCommit has no commit timestamp: the broker's clock (-1), as OffsetCommit v2+
            commits.append(PartitionCommit(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                                           p.committed_metadata, getattr(p, "commit_timestamp", -1)))
    return commits


# --------------------------------------------------------------------------------- OffsetCommit


def _commit_response(request: OffsetCommitRequest, codes: dict[tuple[str, int], int]) -> OffsetCommitResponse:
    Topic, Partition = OffsetCommitResponse.OffsetCommitResponseTopic, OffsetCommitResponse.OffsetCommitResponsePartition
    return OffsetCommitResponse(topics=[
        Topic(name=t.name, topic_id=t.topic_id,
              partitions=[Partition(partition_index=p.partition_index,
                                    error_code=int(codes.get((t.name, p.partition_index), 0)))
                          for p in t.partitions])
        for t in request.topics])


def _commit_error(request: OffsetCommitRequest, code: ErrorCode, message: str | None) -> OffsetCommitResponse:
    return _commit_response(request, {(t.name, p.partition_index): code for t in request.topics for p in t.partitions})


# ---------------------------------------------------------------------------------- OffsetFetch

FetchGroup = OffsetFetchResponse.OffsetFetchResponseGroup


def _to_single_group(group: FetchGroup, version: int) -> OffsetFetchResponse:
    """The v0-v7 form of one group's answer (Kafka's OffsetFetchResponse(groups, version))."""
    Topic, Partition = OffsetFetchResponse.OffsetFetchResponseTopic, OffsetFetchResponse.OffsetFetchResponsePartition
    error = group.error_code
    topics = []
    for t in group.topics:
        parts = []
        for p in t.partitions:
            if version < 2 and error:
                parts.append(Partition(partition_index=p.partition_index, committed_offset=-1, metadata="",
                                       committed_leader_epoch=-1, error_code=error))
            else:
                parts.append(Partition(partition_index=p.partition_index, committed_offset=p.committed_offset,
                                       committed_leader_epoch=p.committed_leader_epoch, metadata=p.metadata,
                                       error_code=p.error_code))
        topics.append(Topic(name=t.name, partitions=parts))
    return OffsetFetchResponse(topics=topics, error_code=error if version >= 2 else 0)


def _fetch_error(request: OffsetFetchRequest, code: ErrorCode, message: str | None) -> OffsetFetchResponse:
    if request.groups:
        return OffsetFetchResponse(groups=[FetchGroup(group_id=g.group_id, error_code=int(code)) for g in request.groups])
    # v0-v7: the code at the top (v2+) and on every partition asked for (what v0-v1 read).
    Topic, Partition = OffsetFetchResponse.OffsetFetchResponseTopic, OffsetFetchResponse.OffsetFetchResponsePartition
    return OffsetFetchResponse(error_code=int(code), topics=[
        Topic(name=t.name, partitions=[Partition(partition_index=p, committed_offset=-1, error_code=int(code))
                                       for p in t.partition_indexes])
        for t in request.topics or []])


# --------------------------------------------------------------------------------- OffsetDelete


class OffsetHandlers:
    """OffsetCommit, OffsetFetch, OffsetDelete."""

    def __init__(self, groups: GroupCoordinatorService, store: MetadataStore, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.groups = groups
        self.store = store
        self.authorizer = authorizer

    def _may(self, ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return self.authorizer.authorize(ctx, operation, resource_type, name)

    async def _fetch_group(self, ctx: RequestContext, group_id: str, topics: list[tuple[str, list[int]]] | None,
                     *args, **kwargs) -> FetchGroup:
        """One group's committed offsets, as far as the requester may describe the group and topics."""
        if not self._may(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            return FetchGroup(group_id=group_id, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        if not self.authorizer.enabled:
            return await self.groups.offset_fetch(group_id, topics, *args, **kwargs)
        denied = [] if topics is None else [t for t in topics
                                             if not self._may(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t[0])]
        allowed = None if topics is None else [t for t in topics if t not in denied]
        group = await self.groups.offset_fetch(group_id, allowed, *args, **kwargs)
        if topics is None:
            group.topics = [t for t in group.topics if self._may(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)]
        Topic, Partition = OffsetFetchResponse.OffsetFetchResponseTopics, OffsetFetchResponse.OffsetFetchResponsePartitions
        group.topics += [Topic(name=name, partitions=[
            Partition(partition_index=p, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                      error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)) for p in parts])
            for name, parts in denied]
        return group

    def _partition_exists(self, topic: str, partition: int) -> bool:
        t = self.store.image.topics.get(topic)
        return t is not None and 0 <= partition < len(t.partitions)

    @handles(ApiKey.OFFSET_COMMIT, 0, 10, _commit_error)
    async def handle_offset_commit(self, ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
        if not self._may(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        codes: dict[tuple[str, int], int] = {}
        if ctx.api_version >= 10:
            codes.update(name_topics_by_id(self.store.image, request.topics))
        commits = commits_to_write(ctx, self.authorizer, request.topics, self._partition_exists, codes)
        if commits:
            try:
                codes.update(await self.groups.offset_commit(
                    request_info(ctx), request.group_id, request.member_id, request.group_instance_id,
                    request.generation_id_or_member_epoch, commits, request.retention_time_ms))
            except KafkaError as e:
                codes.update({(c.topic, c.partition): e.code for c in commits})
        return _commit_response(request, codes)

    @handles(ApiKey.OFFSET_FETCH, 0, 10, _fetch_error)
    async def handle_offset_fetch(self, ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
        version = ctx.api_version
        stable = version >= 7 and request.require_stable
        if version < 8:
            topics = None if request.topics is None else [(t.name, list(t.partition_indexes)) for t in request.topics]
            return _to_single_group(await self._fetch_group(ctx, request.group_id, topics, require_stable=stable),
                                    version)
        groups = []
        for g in request.groups:
            unknown = {} if version < 10 or g.topics is None else name_topics_by_id(self.store.image, g.topics)
            topics = None if g.topics is None else [(t.name, list(t.partition_indexes)) for t in g.topics
                                                    if not t.name.startswith(UNKNOWN_ID_MARK)]
            group = await self._fetch_group(ctx, g.group_id, topics, g.member_id, g.member_epoch,
                                            require_stable=stable)
            if version >= 10:
                self._by_id(group, g, unknown)
            groups.append(group)
        return OffsetFetchResponse(groups=groups)

    def _by_id(self, group: FetchGroup, asked, unknown: dict[tuple[str, int], ErrorCode]) -> None:
        """v10: the group's topics named by id; UNKNOWN_TOPIC_ID for the ids asked for that name no topic
        (in the order asked), and, for all topics, none of those that no longer exist."""
        image = self.store.image
        Topic, Partition = OffsetFetchResponse.OffsetFetchResponseTopics, OffsetFetchResponse.OffsetFetchResponsePartitions
        by_name = {t.name: t for t in group.topics}
        if asked.topics is not None and not group.error_code:
            ordered = []
            for t in asked.topics:
                if t.name.startswith(UNKNOWN_ID_MARK):
                    ordered.append(Topic(name="", topic_id=t.topic_id, partitions=[
                        Partition(partition_index=p, committed_offset=-1, committed_leader_epoch=-1, metadata="",
                                  error_code=int(unknown[(t.name, p)])) for p in t.partition_indexes]))
                elif t.name in by_name:
                    ordered.append(by_name.pop(t.name))
            group.topics = ordered + list(by_name.values())
        kept = []
        for t in group.topics:
            if t.name:
                meta = image.topics.get(t.name)
                if meta is None:
                    continue
                t.topic_id = meta.topic_id
            kept.append(t)
        group.topics = kept

    @handles(ApiKey.OFFSET_DELETE, 0, 0)
    async def handle_offset_delete(self, ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
        if not self._may(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
            return OffsetDeleteResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if not request.group_id:
            return OffsetDeleteResponse(error_code=ErrorCode.INVALID_GROUP_ID)
        unknown: dict[str, list[int]] = {}
        known: list[tuple[str, list[int]]] = []
        denied: dict[str, list[int]] = {}
        for t in request.topics:
            valid = []
            for p in t.partitions:
                if not self._may(ctx, AclOperation.READ, ResourceType.TOPIC, t.name):
                    denied.setdefault(t.name, []).append(p.partition_index)
                elif self._partition_exists(t.name, p.partition_index):
                    valid.append(p.partition_index)
                else:
                    unknown.setdefault(t.name, []).append(p.partition_index)
            if valid:
                known.append((t.name, valid))
        try:
            response = await self.groups.offset_delete(request.group_id, known)
        except KafkaError as e:
            return OffsetDeleteResponse(error_code=int(e.code))
        Topic, Partition = OffsetDeleteResponse.OffsetDeleteResponseTopic, OffsetDeleteResponse.OffsetDeleteResponsePartition
        by_name = {t.name: t for t in response.topics}
        for errors, code in ((unknown, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                             (denied, ErrorCode.TOPIC_AUTHORIZATION_FAILED)):
            for name, parts in errors.items():
                topic = by_name.get(name)
                if topic is None:
                    topic = by_name[name] = Topic(name=name, partitions=[])
                    response.topics.append(topic)
                topic.partitions += [Partition(partition_index=p, error_code=code) for p in parts]
        return response


__all__ = ["OffsetHandlers"]
