"""DeleteRecords: move a partition's log start offset forward (Kafka's ``deleteRecordsOnLeader``).

Per partition, in Kafka's order: an internal topic -> INVALID_TOPIC_EXCEPTION; an unknown topic or
partition -> UNKNOWN_TOPIC_OR_PARTITION; a topic whose ``cleanup.policy`` lacks ``delete`` ->
POLICY_VIOLATION; offset -1 means the high watermark; a negative offset or one above the high
watermark -> OFFSET_OUT_OF_RANGE. Success answers the new low watermark (the log start offset; a
single node has no followers to wait for). Failures answer low watermark -1. Records before the new
start become unreadable at once; their segments go with the next retention pass.
"""

from __future__ import annotations

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handler
from tidelog.server.handlers.common import partition_log

HIGH_WATERMARK = -1

TopicResult = DeleteRecordsResponse.DeleteRecordsTopicResult
PartitionResult = DeleteRecordsResponse.DeleteRecordsPartitionResult


def delete_records_error_response(request: DeleteRecordsRequest, code: ErrorCode, message: str | None = None):
    return DeleteRecordsResponse(topics=[
        TopicResult(name=t.name, partitions=[
            PartitionResult(partition_index=p.partition_index, low_watermark=-1, error_code=int(code))
            for p in t.partitions
        ])
        for t in request.topics
    ])


@handler(ApiKey.DELETE_RECORDS, 0, 2, delete_records_error_response)
def handle_delete_records(ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            try:
                low_watermark = delete_records(ctx, t.name, p.partition_index, p.offset)
                parts.append(PartitionResult(partition_index=p.partition_index, low_watermark=low_watermark, error_code=0))
            except KafkaError as e:
                parts.append(PartitionResult(partition_index=p.partition_index, low_watermark=-1, error_code=int(e.code)))
        topics.append(TopicResult(name=t.name, partitions=parts))
    return DeleteRecordsResponse(topics=topics)


def delete_records(ctx: RequestContext, topic: str, partition: int, offset: int) -> int:
    """Delete the records of ``topic``-``partition`` before ``offset``; returns the low watermark."""
    meta = ctx.broker.store.image.topics.get(topic)
    if meta is not None and meta.is_internal:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete records of internal topic {topic}")
    plog = partition_log(ctx, topic, partition)
    if not plog.config.delete:
        raise KafkaError(ErrorCode.POLICY_VIOLATION,
                         f"Records of partition {topic}-{partition} can not be deleted due to the configured policy")
    target = plog.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"The offset {target} for partition {topic}-{partition} is not valid")
    return plog.delete_records_before(target)


__all__ = ["delete_records", "handle_delete_records"]
