"""Produce: append each partition's records to its log, answer with the offsets (or errors).

acks=0 gets no response; acks=1 and acks=-1 are answered once the records are in the log (a single
node's ISR is itself, so its high watermark moves at once; with ``min.insync.replicas`` above the ISR
size, acks=-1 fails with NOT_ENOUGH_REPLICAS and nothing is written). Versions 0-2 carry legacy
message sets, converted to v2 batches by the storage layer. A transactional produce is refused until
transactions exist.
"""

from __future__ import annotations

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import ProduceRequest, ProduceResponse
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handler
from tidelog.server.handlers.common import partition_log, topic_name

TopicResponse = ProduceResponse.TopicProduceResponse
PartitionResponse = ProduceResponse.PartitionProduceResponse


def produce_error_response(request: ProduceRequest, code: ErrorCode, message: str | None = None) -> ProduceResponse:
    return ProduceResponse(
        responses=[
            TopicResponse(
                name=t.name,
                topic_id=t.topic_id,
                partition_responses=[
                    PartitionResponse(index=p.index, error_code=int(code), base_offset=-1, error_message=message)
                    for p in t.partition_data
                ],
            )
            for t in request.topic_data
        ]
    )


@handler(ApiKey.PRODUCE, 0, 11, produce_error_response)
def handle_produce(ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | None:
    v = ctx.api_version
    responses = []
    for t in request.topic_data:
        name = topic_name(ctx, t.name, t.topic_id, v, 13)
        parts = []
        for p in t.partition_data:
            parts.append(_append(ctx, request, name, p))
        responses.append(TopicResponse(name=t.name, topic_id=t.topic_id, partition_responses=parts))
    if request.acks == 0:
        return None
    return ProduceResponse(responses=responses)


def _append(ctx: RequestContext, request: ProduceRequest, topic: str | None, p) -> PartitionResponse:
    try:
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
        if request.transactional_id is not None:
            raise KafkaError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, "transactions are not supported yet")
        if request.acks not in (0, 1, -1):
            raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be 0, 1 or -1, not {request.acks}")
        plog = partition_log(ctx, topic, p.index)
        if request.acks == -1:
            isr = len(ctx.broker.store.image.topics[topic].partitions[p.index].isr)
            if isr < plog.config.min_insync_replicas:
                raise KafkaError(
                    ErrorCode.NOT_ENOUGH_REPLICAS,
                    f"ISR has {isr} replicas, fewer than min.insync.replicas={plog.config.min_insync_replicas}",
                )
        if p.records is None or len(p.records) == 0:
            raise KafkaError(ErrorCode.INVALID_RECORD, "no records")
        epoch = ctx.broker.store.image.topics[topic].partitions[p.index].leader_epoch
        result = plog.append_as_leader(p.records, leader_epoch=epoch)
    except KafkaError as e:
        return PartitionResponse(index=p.index, error_code=int(e.code), base_offset=-1, error_message=e.message)
    if not result.duplicate:
        ctx.broker.after_append(plog, topic, p.index)
    return PartitionResponse(
        index=p.index,
        error_code=0,
        base_offset=result.first_offset,
        log_append_time_ms=result.log_append_time,
        log_start_offset=result.log_start_offset,
    )
