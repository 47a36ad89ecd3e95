"""ShareFetch (78) and ShareAcknowledge (79): share groups' consumers fetching records as a queue (KIP-932).

Thin: the share sessions' rules are :mod:`tidelog.share.session`'s, acquisition, acknowledgement and the
wait for records :mod:`tidelog.share.manager`'s. Served at v1-v2 (Kafka 4.4's newest). Registered only
when the broker's ``share.version`` is 1 or more.

ShareFetch: acknowledgements piggy-backed on the fetch are applied first (each partition's answer in its
``acknowledge_error_code``), then the session's partitions are fetched; a request with epoch -1 only
acknowledges, closes the session and releases what the member still holds.
The records of a partition's answer are the whole batches holding its acquired records (the acquired
ranges are their own fields): a slice of the segment file when those batches follow each other, which
the network layer sends as it sends Fetch's records (sendfile on a plain TCP socket with the asyncio
loop; under TLS or uvloop it writes the bytes the share partition already read with the slice).

v2 (KIP-1206, KIP-1222), as Kafka 4.4 answers (checked against it, tests/oracle/test_share_v2_oracle.py):
ShareFetch's ``ShareAcquireMode`` (0 batch-optimized, 1 record-limit; another value is UNKNOWN_SERVER_ERROR)
and, in both requests, ``IsRenewAck``. RENEW acknowledgements (type 4: the acquisition lock starts again)
are honoured only in a request that sets it (else INVALID_REQUEST for the partition) and only when the
group's ``share.renew.acknowledge.enable`` is true (default; else INVALID_RECORD_STATE for the partition).
A ShareFetch with ``IsRenewAck`` must ask for nothing (MaxWaitMs, MinBytes, MaxBytes and MaxRecords all 0,
else INVALID_REQUEST): it only acknowledges. ShareAcknowledge v2 answers the acquisition lock timeout too.

Authorization (Kafka's): READ on the group (else GROUP_AUTHORIZATION_FAILED for the whole request), READ
on each topic (else TOPIC_AUTHORIZATION_FAILED for its partitions). Errors per partition as Kafka answers
them: UNKNOWN_TOPIC_ID for a topic id the broker does not know, NOT_LEADER_OR_FOLLOWER with the current
leader and its endpoint, INVALID_RECORD_STATE for an acknowledgement of records the member does not hold.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
)
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.share.config import AcquireMode
from tidelog.share.deliveries import AckBatch, AckType
from tidelog.share.manager import ShareFetchResult, SharePartitionManager
from tidelog.share.session import FINAL_EPOCH, INITIAL_EPOCH

TopicIdPartition = tuple[uuid.UUID, int]
_NOT_SERVED = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})
#: one DEBUG line per ShareFetch answered (bench/share_groups.py --request-log turns it on at run time)
request_log = logging.getLogger("tidelog.share.requests")
_RENEW_DISABLED = "Renewing acquisition locks is not enabled for the group."  # Kafka 4.4's words


def share_fetch_error_response(request: ShareFetchRequest, code: ErrorCode, message: str | None = None):
    return ShareFetchResponse(error_code=int(code), error_message=message)


def share_acknowledge_error_response(request: ShareAcknowledgeRequest, code: ErrorCode, message: str | None = None):
    return ShareAcknowledgeResponse(error_code=int(code), error_message=message)


def _acks(topics: Iterable) -> dict[TopicIdPartition, list[AckBatch]]:
    out: dict[TopicIdPartition, list[AckBatch]] = {}
    for t in topics:
        for p in t.partitions:
            if p.acknowledgement_batches:
                out.setdefault((t.topic_id, p.partition_index), []).extend(
                    AckBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                    for b in p.acknowledgement_batches)
    return out


class ShareHandlers:
    def __init__(self, manager: SharePartitionManager, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.manager = manager
        self.authorizer = authorizer

    # ----------------------------------------------------------------------------------- checks

    def _check_request(self, ctx: RequestContext, group_id: str | None, member_id: str | None) -> None:
        if not group_id or not member_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "a share request names its group and member")
        if not self.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
            raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED, f"not authorized to read group {group_id}")

    def _refused(self, ctx: RequestContext, partitions: Iterable[TopicIdPartition]) -> dict[TopicIdPartition, ErrorCode]:
        """Partitions answered with an error before any work: unknown topic ids, topics not readable."""
        out: dict[TopicIdPartition, ErrorCode] = {}
        allowed: dict[str, bool] = {}
        for tp in partitions:
            name = self.manager.topic_name(tp[0])
            if name is None:
                out[tp] = ErrorCode.UNKNOWN_TOPIC_ID
                continue
            if name not in allowed:
                allowed[name] = self.authorizer.authorize(ctx, AclOperation.READ, ResourceType.TOPIC, name)
            if not allowed[name]:
                out[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return out

    def _leader(self, ctx: RequestContext, tp: TopicIdPartition, endpoints: dict[int, object], factory) -> object:
        """The partition's current leader (and, in ``endpoints``, its listener endpoint) for a client that
        asked the wrong broker."""
        image = self.manager.replicas.image
        topic = image.topic_by_id(tp[0])
        if topic is None or not 0 <= tp[1] < len(topic.partitions):
            return factory.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
        pm = topic.partitions[tp[1]]
        broker = image.brokers.get(pm.leader)
        if broker is not None and pm.leader not in endpoints:
            host, port = broker.endpoint(ctx.listener_name)
            endpoints[pm.leader] = factory.NodeEndpoint(node_id=pm.leader, host=host, port=port, rack=broker.rack)
        return factory.LeaderIdAndEpoch(leader_id=pm.leader if broker is not None else -1,
                                        leader_epoch=pm.leader_epoch)

    async def _acknowledge(self, ctx: RequestContext, group_id: str, member_id: str,
                           acks: dict[TopicIdPartition, list[AckBatch]], renew: bool,
                           ) -> tuple[dict[TopicIdPartition, ErrorCode], dict[TopicIdPartition, str]]:
        """The acknowledgements' outcome per partition, and the messages of the failed ones that have one.
        ``renew``: the request's IsRenewAck (v2)."""
        refused = self._refused(ctx, acks)
        messages: dict[TopicIdPartition, str] = {}
        if renew and not self.manager.settings(group_id).renew_acknowledge_enable:
            for tp, batches in acks.items():
                if tp not in refused and any(AckType.RENEW in b.types for b in batches):
                    refused[tp] = ErrorCode.INVALID_RECORD_STATE
                    messages[tp] = _RENEW_DISABLED
        done = await self.manager.acknowledge(group_id, member_id,
                                              {tp: b for tp, b in acks.items() if tp not in refused},
                                              allow_renew=renew)
        return {**refused, **done}, messages

    # ------------------------------------------------------------------------------- ShareFetch

    @handles(ApiKey.SHARE_FETCH, 1, 2, share_fetch_error_response)
    async def handle_share_fetch(self, ctx: RequestContext, request: ShareFetchRequest) -> ShareFetchResponse:
        self._check_request(ctx, request.group_id, request.member_id)
        group_id, member_id = request.group_id, request.member_id
        assert group_id is not None and member_id is not None
        try:
            mode = AcquireMode(request.share_acquire_mode if ctx.api_version >= 2 else 0)
        except ValueError:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR,
                             f"unknown share acquire mode {request.share_acquire_mode}") from None
        renew = ctx.api_version >= 2 and request.is_renew_ack
        if renew and (request.max_wait_ms or request.min_bytes or request.max_bytes or request.max_records):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "a renewing share fetch fetches nothing")
        epoch = request.share_session_epoch
        requested = [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions]
        forgotten = [(t.topic_id, p) for t in request.forgotten_topics_data for p in t.partitions]
        acks = _acks(request.topics)
        session = self.manager.sessions.fetch_session(group_id, member_id, epoch,
                                                      requested if epoch != FINAL_EPOCH else [],
                                                      forgotten, bool(acks), ctx.connection_id)
        started = time.monotonic()
        ack_results, ack_messages = (await self._acknowledge(ctx, group_id, member_id, acks, renew)
                                     if acks else ({}, {}))
        acked = time.monotonic()
        results: dict[TopicIdPartition, ShareFetchResult] = {}
        if session is None:  # epoch -1: acknowledge, then close
            await self.manager.release_member(group_id, member_id)
        elif renew:  # a renewal only acknowledges (KIP-1222): no records, no wait
            pass
        else:
            partitions = list(session.partitions)
            refused = self._refused(ctx, partitions)
            results = {tp: ShareFetchResult(code) for tp, code in refused.items()}
            fetched = await self.manager.fetch(
                group_id, member_id, [tp for tp in partitions if tp not in refused],
                max_wait_ms=request.max_wait_ms, max_bytes=request.max_bytes, max_records=request.max_records,
                mode=mode)
            results.update(fetched)
            if epoch != INITIAL_EPOCH:  # an incremental answer names only what has news
                results = {tp: r for tp, r in results.items() if r.acquired or r.error or tp in ack_results}
        if request_log.isEnabledFor(logging.DEBUG):  # a line per ShareFetch, as Kafka's kafka.request.logger
            request_log.debug(
                "ShareFetch member=%s epoch=%d acks=%d ack_ms=%.1f acquired=%d fetch_ms=%.1f bytes=%d max_records=%d "
                "batch_size=%d max_wait_ms=%d", member_id, epoch,
                sum(b.last_offset - b.first_offset + 1 for bs in acks.values() for b in bs), (acked - started) * 1000,
                sum(r.last_offset - r.first_offset + 1 for res in results.values() for r in res.acquired),
                (time.monotonic() - acked) * 1000, sum(len(res.records) for res in results.values()),
                request.max_records, request.batch_size, request.max_wait_ms)
        return self._fetch_response(ctx, group_id, results, ack_results, ack_messages)

    def _fetch_response(self, ctx: RequestContext, group_id: str, results: dict[TopicIdPartition, ShareFetchResult],
                        ack_results: dict[TopicIdPartition, ErrorCode], ack_messages: dict[TopicIdPartition, str],
                        ) -> ShareFetchResponse:
        by_topic: dict[uuid.UUID, ShareFetchResponse.ShareFetchableTopicResponse] = {}
        endpoints: dict[int, object] = {}
        for tp in dict.fromkeys([*ack_results, *results]):
            r = results.get(tp, ShareFetchResult())
            ack = ack_results.get(tp, ErrorCode.NONE)
            topic = by_topic.get(tp[0])
            if topic is None:
                topic = by_topic[tp[0]] = ShareFetchResponse.ShareFetchableTopicResponse(topic_id=tp[0], partitions=[])
            data = ShareFetchResponse.PartitionData(
                partition_index=tp[1], error_code=int(r.error), error_message=r.error_message,
                acknowledge_error_code=int(ack), acknowledge_error_message=ack_messages.get(tp), records=r.records,
                acquired_records=[ShareFetchResponse.AcquiredRecords(first_offset=a.first_offset,
                                                                     last_offset=a.last_offset,
                                                                     delivery_count=a.delivery_count)
                                  for a in r.acquired])
            if r.error in _NOT_SERVED or ack in _NOT_SERVED:
                data.current_leader = self._leader(ctx, tp, endpoints, ShareFetchResponse)
            topic.partitions.append(data)
        return ShareFetchResponse(
            error_code=0, acquisition_lock_timeout_ms=self.manager.settings(group_id).record_lock_duration_ms,
            responses=list(by_topic.values()), node_endpoints=list(endpoints.values()))

    # ------------------------------------------------------------------------- ShareAcknowledge

    @handles(ApiKey.SHARE_ACKNOWLEDGE, 1, 2, share_acknowledge_error_response)
    async def handle_share_acknowledge(self, ctx: RequestContext,
                                       request: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
        self._check_request(ctx, request.group_id, request.member_id)
        group_id, member_id = request.group_id, request.member_id
        assert group_id is not None and member_id is not None
        renew = ctx.api_version >= 2 and request.is_renew_ack
        session = self.manager.sessions.acknowledge_session(group_id, member_id, request.share_session_epoch)
        acks = _acks(request.topics)
        results, messages = await self._acknowledge(ctx, group_id, member_id, acks, renew)
        if session is None:
            await self.manager.release_member(group_id, member_id)
        by_topic: dict[uuid.UUID, ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse] = {}
        endpoints: dict[int, object] = {}
        for tp, code in results.items():
            topic = by_topic.get(tp[0])
            if topic is None:
                topic = by_topic[tp[0]] = ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse(topic_id=tp[0],
                                                                                                partitions=[])
            data = ShareAcknowledgeResponse.PartitionData(partition_index=tp[1], error_code=int(code),
                                                          error_message=messages.get(tp))
            if code in _NOT_SERVED:
                data.current_leader = self._leader(ctx, tp, endpoints, ShareAcknowledgeResponse)
            topic.partitions.append(data)
        return ShareAcknowledgeResponse(
            error_code=0, responses=list(by_topic.values()), node_endpoints=list(endpoints.values()),
            acquisition_lock_timeout_ms=self.manager.settings(group_id).record_lock_duration_ms)


__all__ = ["ShareHandlers", "share_acknowledge_error_response", "share_fetch_error_response"]
