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
"""

from __future__ import annotations

from tidelog.cluster.store import MetadataStore
from tidelog.coordinator.group import GroupCoordinator, PartitionCommit
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
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.server.handlers.groups import request_info

# --------------------------------------------------------------------------------- OffsetCommit


def _commit_response(request: OffsetCommitRequest, codes: dict[tuple[str, int], int]) -> OffsetCommitResponse:
    Topic, Partition = OffsetCommitResponse.OffsetCommitResponseTopic, OffsetCommitResponse.OffsetCommitResponsePartition
    return OffsetCommitResponse(topics=[
        Topic(name=t.name, partitions=[Partition(partition_index=p.partition_index,
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

    def __init__(self, groups: GroupCoordinator, store: MetadataStore) -> None:
        self.groups = groups
        self.store = store

    def _partition_exists(self, topic: str, partition: int) -> bool:
        t = self.store.image.topics.get(topic)
        return t is not None and 0 <= partition < len(t.partitions)

    @handles(ApiKey.OFFSET_COMMIT, 0, 9, _commit_error)
    def handle_offset_commit(self, ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
        codes: dict[tuple[str, int], int] = {}
        commits = []
        for t in request.topics:
            for p in t.partitions:
                if not self._partition_exists(t.name, p.partition_index):
                    codes[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                commits.append(PartitionCommit(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                                               p.committed_metadata, p.commit_timestamp))
        if commits:
            try:
                codes.update(self.groups.commit_offsets(
                    request_info(ctx), request.group_id, request.member_id, request.group_instance_id,
                    request.generation_id_or_member_epoch, commits, request.retention_time_ms))
            except KafkaError as e:
                codes.update({(c.topic, c.partition): e.code for c in commits})
        return _commit_response(request, codes)

    @handles(ApiKey.OFFSET_FETCH, 0, 9, _fetch_error)
    def handle_offset_fetch(self, ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
        coordinator = self.groups
        version = ctx.api_version
        stable = version >= 7 and request.require_stable
        if version < 8:
            topics = None if request.topics is None else [(t.name, list(t.partition_indexes)) for t in request.topics]
            return _to_single_group(coordinator.fetch_offsets(request.group_id, topics, require_stable=stable), version)
        groups = []
        for g in request.groups:
            topics = None if g.topics is None else [(t.name, list(t.partition_indexes)) for t in g.topics]
            groups.append(coordinator.fetch_offsets(g.group_id, topics, g.member_id, g.member_epoch,
                                                    require_stable=stable))
        return OffsetFetchResponse(groups=groups)

    @handles(ApiKey.OFFSET_DELETE, 0, 0)
    def handle_offset_delete(self, ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
        if not request.group_id:
            return OffsetDeleteResponse(error_code=ErrorCode.INVALID_GROUP_ID)
        unknown: dict[str, list[int]] = {}
        known: list[tuple[str, list[int]]] = []
        for t in request.topics:
            valid = []
            for p in t.partitions:
                if self._partition_exists(t.name, p.partition_index):
                    valid.append(p.partition_index)
                else:
                    unknown.setdefault(t.name, []).append(p.partition_index)
            if valid:
                known.append((t.name, valid))
        try:
            response = self.groups.delete_offsets(request.group_id, known)
        except KafkaError as e:
            return OffsetDeleteResponse(error_code=int(e.code))
        Topic, Partition = OffsetDeleteResponse.OffsetDeleteResponseTopic, OffsetDeleteResponse.OffsetDeleteResponsePartition
        by_name = {t.name: t for t in response.topics}
        for name, parts in unknown.items():
            topic = by_name.get(name)
            if topic is None:
                topic = by_name[name] = Topic(name=name, partitions=[])
                response.topics.append(topic)
            topic.partitions += [Partition(partition_index=p, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                                 for p in parts]
        return response


__all__ = ["OffsetHandlers"]
