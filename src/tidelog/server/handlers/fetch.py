"""Fetch: record data from the logs, with long polling and incremental fetch sessions.

Thin: the session rules (KIP-227) are :mod:`tidelog.server.fetch_session`'s, the reads, budgets and
the wait for data the replica manager's (:mod:`tidelog.replica.fetch`). Here: answer at once when
there is ``min_bytes`` of data, an error, or no wait asked for; otherwise wait for data or
``max_wait_ms``, then read again; build the response for the request's version. Record data is a
FileSlice of the segment file (sent with sendfile where possible); versions 0-3 (message format
v0/v1 clients) get the v2 batches down-converted.

Authorization (Kafka's): a consumer needs READ on each topic, a follower (replica id >= 0) CLUSTER_ACTION
on the cluster; partitions it may not read answer TOPIC_AUTHORIZATION_FAILED (and the response comes
at once, as for any error).
"""

from __future__ import annotations

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import FetchRequest, FetchResponse
from tidelog.protocol.primitives import ZERO_UUID
from tidelog.records import RecordsError, UnsupportedCompressionTypeError, batches_to_legacy, iter_batches
from tidelog.replica.fetch import PartitionFetch, PartitionRead
from tidelog.replica.manager import ReplicaManager
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.server.fetch_session import FetchSessionCache, SessionFetch

TopicResponse = FetchResponse.FetchableTopicResponse
PartitionData = FetchResponse.PartitionData


def fetch_error_response(request: FetchRequest, code: ErrorCode, message: str | None = None) -> FetchResponse:
    return FetchResponse(error_code=int(code), session_id=0, responses=[])


class FetchHandler:
    def __init__(self, replicas: ReplicaManager, sessions: FetchSessionCache,
                 authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.replicas = replicas
        self.sessions = sessions
        self.authorizer = authorizer

    @handles(ApiKey.FETCH, 0, 18, fetch_error_response)  # v18: a follower's high watermark (KIP-1166), unused
    def handle_fetch(self, ctx: RequestContext, request: FetchRequest):
        v = ctx.api_version
        image = self.replicas.image

        def topic_name(t) -> str | None:
            if v >= 13:
                found = image.topic_by_id(t.topic_id)
                return found.name if found else None
            return t.topic

        def name_of(topic_id) -> str | None:
            found = image.topic_by_id(topic_id)
            return found.name if found else None

        def id_of(name: str):
            t = image.topics.get(name)
            return t.topic_id if t else None

        replica_id = request.replica_state.replica_id if v >= 15 else request.replica_id
        if replica_id >= 0 and self.replicas.replication is not None:  # a follower (cluster mode)
            return self._follower_fetch(ctx, v, request, replica_id, topic_name)
        try:
            fetch = self.sessions.resolve(v, request, name_of, id_of)
        except KafkaError as e:
            return FetchResponse(error_code=int(e.code), session_id=0)
        reads = self._read(ctx, v, request, fetch.partitions)
        total = sum(r.size for r in reads)
        has_error = any(r.error for r in reads)
        if request.max_wait_ms <= 0 or total >= max(request.min_bytes, 1) or has_error or not fetch.partitions:
            self.replicas.count_sent(fetch.partitions, reads)
            return _response(v, request, fetch, reads)
        return self._wait(ctx, v, request, fetch)

    def _denied(self, ctx: RequestContext, version: int, request: FetchRequest,
                partitions: list[PartitionFetch]) -> set[str]:
        """The topics of ``partitions`` the requester may not fetch from."""
        auth = self.authorizer
        replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
        if replica_id >= 0:
            allowed = auth.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
            return set() if allowed else {pf.topic for pf in partitions if pf.topic is not None}
        return {topic for topic in {pf.topic for pf in partitions if pf.topic is not None}
                if not auth.authorize(ctx, AclOperation.READ, ResourceType.TOPIC, topic)}

    def _read(self, ctx: RequestContext, version: int, request: FetchRequest,
              partitions: list[PartitionFetch]) -> list[PartitionRead]:
        max_bytes = request.max_bytes if version >= 3 else None  # v0-2 have no response limit
        denied = self._denied(ctx, version, request, partitions) if self.authorizer.enabled else set()
        refused = {i: ErrorCode.TOPIC_AUTHORIZATION_FAILED for i, pf in enumerate(partitions) if pf.topic in denied}
        if version >= 13:  # a session's partition by id whose name is now another topic's (deleted, created again)
            topics = self.replicas.image.topics
            refused.update({i: ErrorCode.INCONSISTENT_TOPIC_ID for i, pf in enumerate(partitions)
                            if i not in refused and pf.topic is not None and pf.topic in topics
                            and topics[pf.topic].topic_id != pf.topic_id})
        if not refused:
            return self.replicas.read_partitions(partitions, max_bytes, request.isolation_level)
        reads = iter(self.replicas.read_partitions([pf for i, pf in enumerate(partitions) if i not in refused],
                                                   max_bytes, request.isolation_level))
        return [PartitionRead(refused[i]) if i in refused else next(reads) for i, pf in enumerate(partitions)]

    def _follower_fetch(self, ctx: RequestContext, version: int, request: FetchRequest, replica_id: int, topic_name):
        """A follower's fetch: no session; reads go to the log end, with the divergence check
        (:mod:`tidelog.replica.replication`), and wait for the log to grow, not for the high watermark.
        With an authorizer, the follower needs CLUSTER_ACTION on the cluster (as in Kafka)."""
        partitions = [PartitionFetch(topic_name(t), t.topic_id, p.partition, p.fetch_offset, p.partition_max_bytes,
                                     p.current_leader_epoch, p.last_fetched_epoch)
                      for t in request.topics for p in t.partitions]
        if self.authorizer.enabled and self._denied(ctx, version, request, partitions):
            return _follower_response(version, partitions,
                                      [PartitionRead(ErrorCode.TOPIC_AUTHORIZATION_FAILED) for _ in partitions])
        reads = self.replicas.read_for_follower(replica_id, partitions, request.max_bytes)
        if (request.max_wait_ms <= 0 or sum(r.size for r in reads) > 0 or not partitions
                or any(r.error or r.diverging_epoch for r in reads)):
            return _follower_response(version, partitions, reads)
        return self._follower_wait(version, request, replica_id, partitions)

    async def _follower_wait(self, version: int, request: FetchRequest, replica_id: int,
                             partitions: list[PartitionFetch]) -> FetchResponse:
        await self.replicas.wait_for_follower_data(partitions, request.max_wait_ms)
        return _follower_response(version, partitions,
                                  self.replicas.read_for_follower(replica_id, partitions, request.max_bytes))

    async def _wait(self, ctx: RequestContext, version: int, request: FetchRequest, fetch: SessionFetch) -> FetchResponse:
        await self.replicas.wait_for_data(fetch.partitions, request.min_bytes, request.max_wait_ms,
                                          request.isolation_level)
        reads = self._read(ctx, version, request, fetch.partitions)
        self.replicas.count_sent(fetch.partitions, reads)
        return _response(version, request, fetch, reads)


def _response(version: int, request: FetchRequest, fetch: SessionFetch, reads: list[PartitionRead]) -> FetchResponse:
    by_topic: dict[object, TopicResponse] = {}
    for i, (pf, read) in enumerate(zip(fetch.partitions, reads)):
        if not fetch.include(i, read):
            continue
        key = pf.topic_id if version >= 13 else pf.topic
        topic = by_topic.get(key)
        if topic is None:
            topic = by_topic[key] = TopicResponse(topic=pf.topic or "", topic_id=pf.topic_id if version >= 13 else ZERO_UUID,
                                                  partitions=[])
        topic.partitions.append(_partition_data(version, request, pf, read))
    return FetchResponse(error_code=0, session_id=fetch.session_id, responses=list(by_topic.values()))


def _follower_response(version: int, partitions: list[PartitionFetch], reads: list[PartitionRead]) -> FetchResponse:
    """What a follower gets: offsets even with an error (OFFSET_OUT_OF_RANGE tells it the leader's log
    start), and the diverging epoch (v12+)."""
    by_topic: dict[object, TopicResponse] = {}
    for pf, read in zip(partitions, reads):
        key = pf.topic_id if version >= 13 else pf.topic
        topic = by_topic.get(key)
        if topic is None:
            topic = by_topic[key] = TopicResponse(topic=pf.topic or "", topic_id=pf.topic_id if version >= 13
                                                  else ZERO_UUID, partitions=[])
        data = PartitionData(partition_index=pf.partition, error_code=int(read.error),
                             high_watermark=read.high_watermark, last_stable_offset=read.last_stable_offset,
                             log_start_offset=read.log_start_offset, aborted_transactions=None,
                             preferred_read_replica=-1, records=read.records if read.records is not None else b"")
        if read.diverging_epoch is not None:
            data.diverging_epoch = FetchResponse.EpochEndOffset(epoch=read.diverging_epoch[0],
                                                                end_offset=read.diverging_epoch[1])
        topic.partitions.append(data)
    return FetchResponse(error_code=0, session_id=0, responses=list(by_topic.values()))


#: Fetch errors Kafka answers from its request checks, before reading (the partition is not its to read).
_REFUSED_BEFORE_READ = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID,
                                  ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.TOPIC_AUTHORIZATION_FAILED})


def _partition_data(version: int, request: FetchRequest, pf: PartitionFetch, read: PartitionRead) -> PartitionData:
    if read.error:
        # As Kafka: a partition that fails carries no offsets; one refused before the read (Kafka's request
        # checks) has an empty aborted-transactions list, one whose read failed a null one
        return PartitionData(partition_index=pf.partition, error_code=int(read.error), high_watermark=-1,
                             last_stable_offset=-1, log_start_offset=-1,
                             aborted_transactions=[] if read.error in _REFUSED_BEFORE_READ else None,
                             preferred_read_replica=-1, records=b"")
    records = read.records
    data = records if records is not None else b""
    if version <= 3 and records is not None:
        data, code = _down_convert(records.read(), 0 if version <= 1 else 1)
        if code:
            return PartitionData(partition_index=pf.partition, error_code=int(code),
                                 high_watermark=read.high_watermark, last_stable_offset=read.high_watermark,
                                 log_start_offset=read.log_start_offset, records=b"")
    return PartitionData(
        partition_index=pf.partition,
        error_code=0,
        high_watermark=read.high_watermark,
        last_stable_offset=read.last_stable_offset,
        log_start_offset=read.log_start_offset,
        aborted_transactions=None if read.aborted is None else [
            FetchResponse.AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
            for t in read.aborted],
        preferred_read_replica=-1,
        records=data,
    )


def _down_convert(raw: bytes, magic: int) -> tuple[bytes, ErrorCode | None]:
    """v2 batches -> a v0/v1 message set, batch by batch. A batch that cannot be expressed below
    magic 2 (ZSTD) ends the data before it; if it is the first one, the partition gets
    UNSUPPORTED_COMPRESSION_TYPE (CORRUPT_MESSAGE for unreadable data), not the whole response."""
    parts: list[bytes] = []
    try:
        for batch in iter_batches(raw):
            parts.append(batches_to_legacy(batch.buffer, magic))
    except RecordsError as e:
        if not parts:
            unsupported = isinstance(e, UnsupportedCompressionTypeError)
            return b"", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE if unsupported else ErrorCode.CORRUPT_MESSAGE
    return b"".join(parts), None


__all__ = ["FetchHandler", "fetch_error_response"]
