"""Produce: append each partition's records to its log, answer with the offsets (or errors).

acks=0 gets no response (if a partition fails, the connection is closed instead, as Kafka does, so
the producer refreshes its metadata); acks=1 and acks=-1 are answered once the records are in the
log (a single node's ISR is itself, so its high watermark moves at once; with
``min.insync.replicas`` above the ISR size, acks=-1 fails with NOT_ENOUGH_REPLICAS and nothing is
written). Versions 0-2 carry legacy message sets, converted to v2 batches by the storage layer; from
v3 on, each partition carries exactly one magic-2 batch (ZSTD from v7). A transactional produce is
refused until transactions exist. Clients may not write to internal topics (INVALID_TOPIC_EXCEPTION,
as Kafka's ReplicaManager refuses them to a client's Produce).
"""

from __future__ import annotations

from tidelog.cluster.controller import INTERNAL_TOPICS
from tidelog.errors import ErrorCode, KafkaError, RecordValidationError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import ProduceRequest, ProduceResponse
from tidelog.records import CompressionType
from tidelog.records.batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    LOG_HEADER,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
)
from tidelog.replica.manager import ReplicaManager
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import CloseConnection, handles

TopicResponse = ProduceResponse.TopicProduceResponse
PartitionResponse = ProduceResponse.PartitionProduceResponse
BatchError = ProduceResponse.BatchIndexAndErrorMessage


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


class ProduceHandler:
    def __init__(self, replicas: ReplicaManager) -> None:
        self.replicas = replicas

    @handles(ApiKey.PRODUCE, 0, 11, produce_error_response)
    def handle_produce(self, ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | None:
        v = ctx.api_version
        responses = []
        for t in request.topic_data:
            if v >= 13:
                found = self.replicas.image.topic_by_id(t.topic_id)
                name = found.name if found else None
            else:
                name = t.name
            # Kafka reads a topic's partitions into a map: a partition named twice is appended once,
            # with the records named last, and answered once.
            last = {p.index: p for p in t.partition_data}
            parts = [self._append(v, request, name, p) for p in last.values()]
            responses.append(TopicResponse(name=t.name, topic_id=t.topic_id, partition_responses=parts))
        if request.acks == 0:
            failed = [f"{t.name}-{p.index}: {ErrorCode(p.error_code).name}"
                      for t in responses for p in t.partition_responses if p.error_code]
            if failed:
                # No response is expected, so (as Kafka does) close the connection: the producer notices
                # and refreshes its metadata.
                raise CloseConnection(f"acks=0 produce failed ({', '.join(failed)})")
            return None
        return ProduceResponse(responses=responses)

    def _append(self, version: int, request: ProduceRequest, topic: str | None, p) -> PartitionResponse:
        try:
            if topic is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
            if topic in INTERNAL_TOPICS:
                raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}")
            if request.transactional_id is not None:
                raise KafkaError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, "transactions are not supported yet")
            result = self.replicas.append_records(topic, p.index, p.records, acks=request.acks,
                                                  check=lambda records: _check_format(version, records))
        except KafkaError as e:
            response = PartitionResponse(index=p.index, error_code=int(e.code), base_offset=-1, error_message=e.message)
            if isinstance(e, RecordValidationError):  # KIP-467: the client fails only these records
                response.record_errors = [BatchError(batch_index=i, batch_index_error_message=m)
                                          for i, m in e.record_errors]
            return response
        return PartitionResponse(
            index=p.index,
            error_code=0,
            base_offset=result.first_offset,
            log_append_time_ms=result.log_append_time,
            log_start_offset=result.log_start_offset,
        )


def _check_format(version: int, records) -> None:
    """Kafka's ProduceRequest.validateRecords: some records; from v3 on, exactly one magic-2 batch per partition
    (INVALID_RECORD otherwise), and ZSTD only from v7 (UNSUPPORTED_COMPRESSION_TYPE). Only header
    bytes are looked at; the log validates the rest. Versions 0-2 are not checked, as in Kafka."""
    if records is None or len(records) == 0:
        raise KafkaError(ErrorCode.INVALID_RECORD, "no records")
    if version < 3:
        return
    mv = memoryview(records).cast("B")
    if len(mv) <= ATTRIBUTES_OFFSET + 1:
        return  # too short to be a batch: the log rejects it
    if mv[MAGIC_OFFSET] != 2:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Produce v{version} may only carry record batches with magic 2, not {mv[MAGIC_OFFSET]}")
    if LOG_OVERHEAD + LOG_HEADER.unpack_from(mv)[1] < len(mv):
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Produce v{version} must carry exactly one record batch per partition")
    if version < 7 and mv[ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK == CompressionType.ZSTD:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Produce v{version} cannot carry ZSTD batches (v7+)")


__all__ = ["ProduceHandler", "produce_error_response"]
