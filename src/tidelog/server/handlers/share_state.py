"""The share coordinator's five RPCs (KIP-932): Initialize/Read/Write/Delete ShareGroupState and
ReadShareGroupStateSummary, sent by brokers (their share-partition managers and group coordinators) to the
broker leading the key's ``__share_group_state`` partition.

Kafka's rules: CLUSTER_ACTION on the cluster, else every partition answers CLUSTER_AUTHORIZATION_FAILED; an
empty group id answers INVALID_GROUP_ID; each (topic id, partition) is one share partition, answered by the
share coordinator's service (:class:`~tidelog.coordinator.share.service.ShareCoordinatorService`) once its
write is committed: NOT_COORDINATOR when its partition is not led here, COORDINATOR_LOAD_IN_PROGRESS while it
loads, FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION. Partitions of one request are
answered concurrently, in the request's order. Registered only when ``share.version`` >= 1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from tidelog.coordinator.share.persister import (
    DeliveryState,
    SharePartitionKey,
    ShareState,
    StateBatch,
    StateWrite,
)
from tidelog.coordinator.share.service import ShareCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

_DCC = "delivery_complete_count"  # KIP-1226's field, in the v1 codecs


def _set_dcc(obj: Any, value: int) -> Any:
    if _DCC in type(obj).__slots__:
        setattr(obj, _DCC, value)
    return obj


def _error_results(response_cls: type, results_cls: type, partition_cls: type, request: Any, code: ErrorCode,
                   message: str | None, **extra: Any) -> Any:
    return response_cls(results=[results_cls(topic_id=t.topic_id, partitions=[
        partition_cls(partition=p.partition, error_code=int(code), error_message=message, **extra)
        for p in t.partitions]) for t in request.topics])


def _initialize_error(request: InitializeShareGroupStateRequest, code: ErrorCode, message: str | None):
    r = InitializeShareGroupStateResponse
    return _error_results(r, r.InitializeStateResult, r.PartitionResult, request, code, message)


def _read_error(request: ReadShareGroupStateRequest, code: ErrorCode, message: str | None):
    r = ReadShareGroupStateResponse
    return _error_results(r, r.ReadStateResult, r.PartitionResult, request, code, message, state_epoch=-1,
                          start_offset=-1, state_batches=[])


def _write_error(request: WriteShareGroupStateRequest, code: ErrorCode, message: str | None):
    r = WriteShareGroupStateResponse
    return _error_results(r, r.WriteStateResult, r.PartitionResult, request, code, message)


def _delete_error(request: DeleteShareGroupStateRequest, code: ErrorCode, message: str | None):
    r = DeleteShareGroupStateResponse
    return _error_results(r, r.DeleteStateResult, r.PartitionResult, request, code, message)


def _summary_error(request: ReadShareGroupStateSummaryRequest, code: ErrorCode, message: str | None):
    r = ReadShareGroupStateSummaryResponse
    return _error_results(r, r.ReadStateSummaryResult, r.PartitionResult, request, code, message, state_epoch=-1,
                          leader_epoch=-1, start_offset=-1)


def _batches(request_batches: list[Any]) -> tuple[StateBatch, ...]:
    try:
        return tuple(StateBatch(b.first_offset, b.last_offset, DeliveryState(b.delivery_state), b.delivery_count)
                     for b in request_batches)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "unknown delivery state") from None


class ShareStateHandlers:
    """The share-state RPCs over the local share coordinator's service."""

    def __init__(self, service: ShareCoordinatorService, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.service = service
        self.authorizer = authorizer

    def _check(self, ctx: RequestContext, group_id: str) -> None:
        if not self.authorizer.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
            raise KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        if not group_id:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID, "the group id must be specified and not empty")

    @staticmethod
    async def _each(request: Any, call: Callable[[SharePartitionKey, Any], Awaitable[Any]]) -> list[list[Any]]:
        """``call(key, partition data)`` for every partition of the request, concurrently; the answers by
        topic, in the request's order."""
        calls = [[call(SharePartitionKey(request.group_id, t.topic_id, p.partition), p) for p in t.partitions]
                 for t in request.topics]
        flat = await asyncio.gather(*(c for topic in calls for c in topic))
        out, i = [], 0
        for topic in calls:
            out.append(list(flat[i:i + len(topic)]))
            i += len(topic)
        return out

    @handles(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, InitializeShareGroupStateRequest.MAX_VERSION, _initialize_error)
    async def handle_initialize(self, ctx: RequestContext,
                                request: InitializeShareGroupStateRequest) -> InitializeShareGroupStateResponse:
        self._check(ctx, request.group_id)
        r = InitializeShareGroupStateResponse
        codes = await self._each(request, lambda key, p: self.service.initialize(key, p.state_epoch, p.start_offset))
        return r(results=[r.InitializeStateResult(topic_id=t.topic_id, partitions=[
            r.PartitionResult(partition=p.partition, error_code=int(c), error_message=None if c == 0 else c.message)
            for p, c in zip(t.partitions, topic_codes, strict=True)])
            for t, topic_codes in zip(request.topics, codes, strict=True)])

    @handles(ApiKey.READ_SHARE_GROUP_STATE, 0, ReadShareGroupStateRequest.MAX_VERSION, _read_error)
    async def handle_read(self, ctx: RequestContext, request: ReadShareGroupStateRequest) -> ReadShareGroupStateResponse:
        self._check(ctx, request.group_id)
        r = ReadShareGroupStateResponse
        states: list[list[ShareState]] = await self._each(
            request, lambda key, p: self.service.read(key, p.leader_epoch))
        return r(results=[r.ReadStateResult(topic_id=t.topic_id, partitions=[
            r.PartitionResult(partition=p.partition, error_code=int(s.error), error_message=s.error_message,
                              state_epoch=s.state_epoch, start_offset=s.start_offset, state_batches=[
                                  r.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                               delivery_state=int(b.delivery_state), delivery_count=b.delivery_count)
                                  for b in s.state_batches])
            for p, s in zip(t.partitions, topic_states, strict=True)])
            for t, topic_states in zip(request.topics, states, strict=True)])

    @handles(ApiKey.WRITE_SHARE_GROUP_STATE, 0, WriteShareGroupStateRequest.MAX_VERSION, _write_error)
    async def handle_write(self, ctx: RequestContext,
                           request: WriteShareGroupStateRequest) -> WriteShareGroupStateResponse:
        self._check(ctx, request.group_id)
        r = WriteShareGroupStateResponse

        def write(key: SharePartitionKey, p: Any) -> Awaitable[ErrorCode]:
            return self.service.write(key, StateWrite(
                state_epoch=p.state_epoch, leader_epoch=p.leader_epoch, start_offset=p.start_offset,
                state_batches=_batches(p.state_batches), delivery_complete_count=getattr(p, _DCC, -1)))

        codes = await self._each(request, write)
        return r(results=[r.WriteStateResult(topic_id=t.topic_id, partitions=[
            r.PartitionResult(partition=p.partition, error_code=int(c), error_message=None if c == 0 else c.message)
            for p, c in zip(t.partitions, topic_codes, strict=True)])
            for t, topic_codes in zip(request.topics, codes, strict=True)])

    @handles(ApiKey.DELETE_SHARE_GROUP_STATE, 0, DeleteShareGroupStateRequest.MAX_VERSION, _delete_error)
    async def handle_delete(self, ctx: RequestContext,
                            request: DeleteShareGroupStateRequest) -> DeleteShareGroupStateResponse:
        self._check(ctx, request.group_id)
        r = DeleteShareGroupStateResponse
        codes = await self._each(request, lambda key, p: self.service.delete(key))
        return r(results=[r.DeleteStateResult(topic_id=t.topic_id, partitions=[
            r.PartitionResult(partition=p.partition, error_code=int(c), error_message=None if c == 0 else c.message)
            for p, c in zip(t.partitions, topic_codes, strict=True)])
            for t, topic_codes in zip(request.topics, codes, strict=True)])

    @handles(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 0, ReadShareGroupStateSummaryRequest.MAX_VERSION, _summary_error)
    async def handle_read_summary(self, ctx: RequestContext,
                                  request: ReadShareGroupStateSummaryRequest) -> ReadShareGroupStateSummaryResponse:
        self._check(ctx, request.group_id)
        r = ReadShareGroupStateSummaryResponse
        states: list[list[ShareState]] = await self._each(
            request, lambda key, p: self.service.read_summary(key, p.leader_epoch))
        return r(results=[r.ReadStateSummaryResult(topic_id=t.topic_id, partitions=[
            _set_dcc(r.PartitionResult(partition=p.partition, error_code=int(s.error), error_message=s.error_message,
                                       state_epoch=s.state_epoch, leader_epoch=s.leader_epoch,
                                       start_offset=s.start_offset), s.delivery_complete_count)
            for p, s in zip(t.partitions, topic_states, strict=True)])
            for t, topic_states in zip(request.topics, states, strict=True)])


__all__ = ["ShareStateHandlers"]
