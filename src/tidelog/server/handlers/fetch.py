"""Fetch: record data from the logs, with long polling and incremental fetch sessions.

* Each partition returns whole batches from the one holding ``fetch_offset``, at most
  ``partition_max_bytes`` (but at least one batch), and the response at most ``max_bytes`` (v3+; the
  first partition with data always gets at least one batch, KIP-74).
* If the data found is less than ``min_bytes`` and no partition has an error, the request waits in
  the purgatory until an append brings enough data or ``max_wait_ms`` passes (then it answers with
  what there is).
* Record data is a FileSlice of the segment file (sent with sendfile where possible). Versions 0-3
  (message format v0/v1 clients) get the v2 batches down-converted.
* Sessions (v7+): see :mod:`tidelog.server.fetch_session`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import FetchRequest, FetchResponse
from tidelog.protocol.primitives import ZERO_UUID
from tidelog.records import RecordsError, UnsupportedCompressionTypeError, batches_to_legacy, iter_batches
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handler
from tidelog.server.fetch_session import FINAL_EPOCH, INITIAL_EPOCH, FetchSession, SessionPartition
from tidelog.server.handlers.common import check_leader_epoch, partition_log
from tidelog.server.purgatory import DelayedOperation

TopicResponse = FetchResponse.FetchableTopicResponse
PartitionData = FetchResponse.PartitionData
READ_COMMITTED = 1


@dataclass(slots=True)
class Wanted:
    topic: str | None  # None: unknown topic id
    topic_id: object
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int
    state: SessionPartition | None = None  # the session's entry, updated with what we answer


def fetch_error_response(request: FetchRequest, code: ErrorCode, message: str | None = None) -> FetchResponse:
    return FetchResponse(error_code=int(code), session_id=0, responses=[])


@handler(ApiKey.FETCH, 0, 17, fetch_error_response)
def handle_fetch(ctx: RequestContext, request: FetchRequest):
    try:
        wanted, session, incremental = _resolve(ctx, request)
    except KafkaError as e:
        return FetchResponse(error_code=int(e.code), session_id=0)
    response, total, has_error = _read_all(ctx, request, wanted, session, incremental)
    if request.max_wait_ms <= 0 or total >= max(request.min_bytes, 1) or has_error or not wanted:
        return response
    return _wait(ctx, request, wanted, session, incremental)


async def _wait(ctx, request, wanted, session, incremental) -> FetchResponse:
    broker = ctx.broker
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()
    thresholds = {}
    for w in wanted:
        if w.topic is not None:
            plog = broker.logs.get_log(w.topic, w.partition)
            if plog is not None:
                thresholds[(w.topic, w.partition)] = plog

    def available() -> bool:
        # Enough new bytes? Cheap test: any partition whose readable end moved past the fetch offset
        # counts its new bytes by the log sizes; min_bytes is a hint, so one new batch is enough
        # unless min_bytes is large, in which case we re-read.
        total = 0
        topics = broker.store.image.topics
        for w in wanted:
            if w.topic is not None and w.topic not in topics:
                return True  # the topic was deleted meanwhile: answer now (with its error)
            plog = thresholds.get((w.topic, w.partition))
            if plog is None:
                continue
            end = _readable_end(plog, request.isolation_level)
            if end > w.fetch_offset:
                if request.min_bytes <= 1:
                    return True
                result = plog.read(w.fetch_offset, w.max_bytes, max_offset=end)
                total += result.records.size if result.records is not None else 0
                if total >= request.min_bytes:
                    return True
        return False

    def complete(timed_out: bool) -> None:
        if not done.done():
            done.set_result(timed_out)

    op = DelayedOperation(broker.clock.monotonic_ms() + request.max_wait_ms, available, complete)
    broker.purgatory.watch(op, list(thresholds))
    await done
    response, _, _ = _read_all(ctx, request, wanted, session, incremental)
    return response


def _readable_end(plog, isolation_level: int) -> int:
    return plog.high_watermark  # the last stable offset equals it until transactions exist


# ----------------------------------------------------------------------------------- sessions


def _resolve(ctx: RequestContext, request: FetchRequest) -> tuple[list[Wanted], FetchSession | None, bool]:
    """The partitions to read, the session (if any) and whether the response is incremental."""
    v = ctx.api_version
    cache = ctx.broker.fetch_sessions
    image = ctx.broker.store.image

    def name_of(t) -> str | None:
        if v >= 13:
            found = image.topic_by_id(t.topic_id)
            return found.name if found else None
        return t.topic

    requested = [
        Wanted(name_of(t), t.topic_id, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch)
        for t in request.topics
        for p in t.partitions
    ]
    if v < 7 or request.session_epoch == FINAL_EPOCH:
        if v >= 7 and request.session_id:
            cache.close(request.session_id)
        return requested, None, False
    if request.session_epoch == INITIAL_EPOCH:
        if request.session_id:
            cache.close(request.session_id)
        session = cache.create()
        if session is not None:
            for w in requested:
                if w.topic is not None:
                    w.state = session.partitions[(w.topic, w.partition)] = SessionPartition(
                        w.fetch_offset, w.max_bytes, w.current_leader_epoch
                    )
        return requested, session, False
    session = cache.get(request.session_id, request.session_epoch)
    for t in request.forgotten_topics_data:
        topic = name_of(t)
        for p in t.partitions:
            session.partitions.pop((topic, p), None)
    for w in requested:
        if w.topic is None:
            continue
        state = session.partitions.get((w.topic, w.partition))
        if state is None:
            state = session.partitions[(w.topic, w.partition)] = SessionPartition(w.fetch_offset, w.max_bytes)
        state.fetch_offset, state.max_bytes, state.current_leader_epoch = (
            w.fetch_offset, w.max_bytes, w.current_leader_epoch
        )
    session.epoch = session.epoch + 1 if session.epoch < 0x7FFFFFFF else 1
    wanted = []
    for (topic, partition), state in session.partitions.items():
        t = image.topics.get(topic)
        wanted.append(
            Wanted(topic, t.topic_id if t else None, partition, state.fetch_offset, state.max_bytes,
                   state.current_leader_epoch, state)
        )
    return wanted, session, True


# -------------------------------------------------------------------------------------- reads


def _read_all(ctx, request: FetchRequest, wanted: list[Wanted], session, incremental: bool):
    v = ctx.api_version
    budget = request.max_bytes if v >= 3 else 2**31 - 1
    by_topic: dict[object, TopicResponse] = {}
    order: list[object] = []
    total = 0
    has_error = False
    for w in wanted:
        pd = _read_one(ctx, request, w, budget, first=total == 0)
        size = len(pd.records) if pd.records is not None else 0
        budget -= size
        total += size
        if pd.error_code:
            has_error = True
        if incremental and not _has_news(pd, w.state, size):
            continue
        if w.state is not None:
            w.state.high_watermark = pd.high_watermark
            w.state.last_stable_offset = pd.last_stable_offset
            w.state.log_start_offset = pd.log_start_offset
        key = w.topic_id if v >= 13 else w.topic
        if key not in by_topic:
            by_topic[key] = TopicResponse(topic=w.topic or "", topic_id=w.topic_id if v >= 13 else ZERO_UUID, partitions=[])
            order.append(key)
        by_topic[key].partitions.append(pd)
    response = FetchResponse(
        error_code=0,
        session_id=session.session_id if session is not None else 0,
        responses=[by_topic[k] for k in order],
    )
    return response, total, has_error


def _has_news(pd, state: SessionPartition | None, size: int) -> bool:
    if state is None or size or pd.error_code:
        return True
    return (pd.high_watermark, pd.last_stable_offset, pd.log_start_offset) != (
        state.high_watermark, state.last_stable_offset, state.log_start_offset
    )


def _read_one(ctx, request: FetchRequest, w: Wanted, budget: int, first: bool) -> PartitionData:
    v = ctx.api_version
    if w.topic is None:
        return PartitionData(partition_index=w.partition, error_code=int(ErrorCode.UNKNOWN_TOPIC_ID), high_watermark=-1,
                             records=b"")
    try:
        plog = partition_log(ctx, w.topic, w.partition)
        check_leader_epoch(ctx, w.topic, w.partition, w.current_leader_epoch)
        end = _readable_end(plog, request.isolation_level)
        max_bytes = min(w.max_bytes, budget) if not first else w.max_bytes
        if max_bytes <= 0 and not first:
            result = plog.read(w.fetch_offset, 0, max_offset=end, min_one_batch=False)
        else:
            result = plog.read(w.fetch_offset, max(max_bytes, 1), max_offset=end, min_one_batch=first or max_bytes >= 1)
    except KafkaError as e:
        hw = -1
        log_start = -1
        try:
            plog = partition_log(ctx, w.topic, w.partition)
            hw, log_start = plog.high_watermark, plog.log_start_offset
        except KafkaError:
            pass
        return PartitionData(partition_index=w.partition, error_code=int(e.code), high_watermark=hw,
                             last_stable_offset=hw, log_start_offset=log_start, records=b"")
    records = result.records
    data = records if records is not None else b""
    if v <= 3 and records is not None:
        data, code = _down_convert(records.read(), 0 if v <= 1 else 1)
        if code:
            return PartitionData(partition_index=w.partition, error_code=int(code),
                                 high_watermark=result.high_watermark, last_stable_offset=result.high_watermark,
                                 log_start_offset=result.log_start_offset, records=b"")
    return PartitionData(
        partition_index=w.partition,
        error_code=0,
        high_watermark=result.high_watermark,
        last_stable_offset=result.high_watermark,
        log_start_offset=result.log_start_offset,
        aborted_transactions=[] if request.isolation_level == READ_COMMITTED else None,
        preferred_read_replica=-1,
        records=data,
    )


def _down_convert(raw: bytes, magic: int) -> tuple[bytes, ErrorCode | None]:
    """v2 batches -> a v0/v1 message set, batch by batch. A batch that cannot be expressed below
    magic 2 (ZSTD) ends the data before it; if it is the first one, the partition gets
    UNSUPPORTED_COMPRESSION_TYPE (CORRUPT_MESSAGE for unreadable data), not the whole response."""
    parts: list[bytes] = []
    try:
        for entry in iter_batches(raw):
            parts.append(batches_to_legacy(entry.buffer, magic))
    except RecordsError as e:
        if not parts:
            unsupported = isinstance(e, UnsupportedCompressionTypeError)
            return b"", ErrorCode.UNSUPPORTED_COMPRESSION_TYPE if unsupported else ErrorCode.CORRUPT_MESSAGE
    return b"".join(parts), None
