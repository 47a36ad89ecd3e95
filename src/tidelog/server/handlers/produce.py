"""Produce: append each partition's records to its log, answer with the offsets (or errors).

acks=0 gets no response (if a partition fails, the connection is closed instead, as Kafka does, so
the producer refreshes its metadata); acks=1 is answered once the records are in the leader's log,
acks=-1 in a cluster once every in-sync replica has them (:mod:`tidelog.replica.replication`; a
single node's ISR is itself, so it answers at once; with
``min.insync.replicas`` above the ISR size, acks=-1 fails with NOT_ENOUGH_REPLICAS and nothing is
written). Versions 0-2 carry legacy message sets, converted to v2 batches by the storage layer; from
v3 on, each partition carries exactly one magic-2 batch (ZSTD from v7). Clients may not write to
internal topics (INVALID_TOPIC_EXCEPTION, as Kafka's ReplicaManager refuses them to a client's
Produce), and a partition named twice in one request is appended once, with the records named last
(Kafka reads them into a map).

Transactional batches need the request's transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED
without one, as Kafka answers) and one producer id and epoch for the whole request
(INVALID_PRODUCER_ID_MAPPING otherwise). The first transactional batch of a producer in a partition
is checked with the transaction coordinator first (KIP-890, :mod:`tidelog.server.txn_verification`):
v0-v11 verify that the partition is in the transaction, v12 adds it (transaction version 2); a
partition that fails gets the error and nothing is written to it.

A producer's requests are appended in the order they arrive, as Kafka (which reads a connection's next
request only once the previous one is answered) does. Requests are handled as they arrive here, and a
check with the coordinator may wait (CONCURRENT_TRANSACTIONS while the previous transaction's markers
are written is retried for ``add.partitions.to.txn.retry.backoff.max.ms``): so a transactional request
of a producer that still has an earlier one waiting waits behind it, and decides what it must check only
once that one is appended or refused. Without this, a producer pipelining the first batches of a new
transaction (sequence 0, then 5 ...) could see the later request pass the check first and be refused
with OUT_OF_ORDER_SEQUENCE_NUMBER (the new epoch must start at sequence 0) while the earlier one
succeeded: a fatal error for the client.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable

from tidelog.config import TopicConfig
from tidelog.coordinator.internal_topics import INTERNAL_TOPIC_NAMES
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
from tidelog.schema_registry.validation import SchemaIdValidation, validates
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import CloseConnection, handles
from tidelog.server.txn_verification import (
    TransactionSupportedOperation,
    TransactionVerifier,
    produce_error,
    transactional_producers,
)

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


Refusals = dict[tuple[str, int], tuple[ErrorCode, str | None]]


class ProduceHandler:
    def __init__(self, replicas: ReplicaManager, verifier: TransactionVerifier,
                 authorizer: Authorizer = NO_AUTHORIZER, schema_ids: SchemaIdValidation | None = None) -> None:
        self.replicas = replicas
        self.verifier = verifier
        self.authorizer = authorizer
        #: broker-side schema id validation of the topics that ask for it (confluent.*.schema.validation)
        self.schema_ids = schema_ids
        #: producer id -> done once the producer's latest request waiting for the coordinator is appended
        #: (or refused); the producer's next transactional request waits for it
        self._in_order: dict[int, asyncio.Future[None]] = {}

    @handles(ApiKey.PRODUCE, 0, 13, produce_error_response)
    def handle_produce(self, ctx: RequestContext, request: ProduceRequest):
        v = ctx.api_version
        names = [self._topic_name(v, t) for t in request.topic_data]
        # WRITE on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions); transactional records also
        # need WRITE on the transactional id (checked with the transaction, below)
        denied: Refusals = {(name, p.index): (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
                            for t, name in zip(request.topic_data, names) if name is not None
                            and not self.authorizer.authorize(ctx, AclOperation.WRITE, ResourceType.TOPIC, name)
                            for p in t.partition_data}
        allowed = [None if name is not None and any(k[0] == name for k in denied) else name for name in names]
        check = self._transaction_check(ctx, request, allowed, v)
        if check is None:
            return self._produce(v, request, names, denied)
        producer_id = check[0]
        earlier = self._in_order.get(producer_id)
        if earlier is None and not self._unchecked(*check):
            return self._produce(v, request, names, denied)
        # Wait for the coordinator, or behind this producer's earlier request that does (module docstring).
        appended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._in_order[producer_id] = appended

        def release(_: object = None) -> None:
            if not appended.done():
                appended.set_result(None)
            if self._in_order.get(producer_id) is appended:
                del self._in_order[producer_id]

        task = asyncio.ensure_future(self._verify_then_produce(v, request, names, denied, earlier, release, *check))
        task.add_done_callback(release)  # also when it failed or was cancelled before appending
        return task

    def _topic_name(self, version: int, t) -> str | None:
        if version >= 13:
            found = self.replicas.image.topic_by_id(t.topic_id)
            return found.name if found else None
        return t.name

    def _transaction_check(self, ctx: RequestContext, request: ProduceRequest, names: list[str | None], version: int):
        """(producer id, epoch, partitions with transactional batches, operation) for a request with
        transactional batches; None otherwise. KafkaError fails the whole request."""
        producers: set[tuple[int, int]] = set()
        partitions = []
        for t, name in zip(request.topic_data, names):
            for p in t.partition_data:
                found = transactional_producers(p.records)
                if found and name is not None:
                    producers |= found
                    partitions.append((name, p.index))
        if not producers:
            return None
        if request.transactional_id is None:
            raise KafkaError(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                             "transactional records need the request's transactional id")
        if not self.authorizer.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                         request.transactional_id):
            raise KafkaError(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if len(producers) > 1:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                             "Transactional records contained more than one producer ID")
        ((producer_id, epoch),) = producers
        return producer_id, epoch, partitions, TransactionSupportedOperation.for_produce(version)

    def _unchecked(self, producer_id: int, epoch: int, partitions: list[tuple[str, int]],
                   operation: TransactionSupportedOperation) -> list[tuple[str, int]]:
        """The partitions whose transactional batches must be checked with the coordinator first."""
        return [tp for tp in partitions if self.verifier.needs_check(*tp, producer_id, epoch, operation)]

    async def _verify_then_produce(self, version: int, request: ProduceRequest, names: list[str | None],
                                   denied: Refusals, earlier: asyncio.Future[None] | None,
                                   release: Callable[[], None], producer_id: int, epoch: int,
                                   partitions: list[tuple[str, int]],
                                   operation: TransactionSupportedOperation) -> ProduceResponse | None:
        try:
            if earlier is not None:
                await asyncio.wait([earlier])  # never cancels the earlier request's future
            unchecked = self._unchecked(producer_id, epoch, partitions, operation)
            errors = (await self.verifier.verify(request.transactional_id or "", producer_id, epoch, unchecked,
                                                 operation) if unchecked else {})
            response = self._produce(version, request, names,
                                     {**denied, **{tp: produce_error(code, operation) for tp, code in errors.items()}})
        finally:
            release()  # appended or refused: the producer's next request may go
        return await response if inspect.isawaitable(response) else response  # acks=all in a cluster waits

    def _produce(self, v: int, request: ProduceRequest, names: list[str | None], refused: Refusals):
        responses = []
        waits: list[tuple[PartitionResponse, str, int, int]] = []
        for t, name in zip(request.topic_data, names):
            parts = []
            for p in {p.index: p for p in t.partition_data}.values():
                if name is not None and (name, p.index) in refused:
                    code, message = refused[(name, p.index)]
                    parts.append(PartitionResponse(index=p.index, error_code=int(code), base_offset=-1,
                                                   error_message=message))
                else:
                    parts.append(self._append(v, request, name, p, waits))
            responses.append(TopicResponse(name=t.name, topic_id=t.topic_id, partition_responses=parts))
        if request.acks == 0:
            failed = [f"{t.name}-{p.index}: {ErrorCode(p.error_code).name}"
                      for t in responses for p in t.partition_responses if p.error_code]
            if failed:
                # No response is expected, so (as Kafka does) close the connection: the producer notices
                # and refreshes its metadata.
                raise CloseConnection(f"acks=0 produce failed ({', '.join(failed)})")
            return None
        if waits:
            return self._wait_for_acks(ProduceResponse(responses=responses), waits, request.timeout_ms)
        return ProduceResponse(responses=responses)

    async def _wait_for_acks(self, response: ProduceResponse, waits: list[tuple[PartitionResponse, str, int, int]],
                             timeout_ms: int) -> ProduceResponse:
        """acks=all in a cluster: answer once every ISR member has the records (or with the error that
        ended the wait: NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER)."""
        codes = await asyncio.gather(*(self.replicas.wait_for_acks(topic, partition, required, timeout_ms)
                                       for _, topic, partition, required in waits))
        for (part, _, _, _), code in zip(waits, codes):
            if code != ErrorCode.NONE:
                part.error_code = int(code)
                part.base_offset = -1
                part.error_message = f"acks=all: {code.name}"
        return response

    def _append(self, version: int, request: ProduceRequest, topic: str | None, p,
                waits: list[tuple[PartitionResponse, str, int, int]]) -> PartitionResponse:
        checked: list[None] = []  # non-empty once the request-level format checks passed
        try:
            if topic is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
            if topic in INTERNAL_TOPIC_NAMES:
                raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic}")
            schema_ids = self.schema_ids

            def check(records, config: TopicConfig) -> None:
                checked.append(_check_format(version, records))
                # broker-side schema id validation: a topic without it costs two booleans of its config
                if schema_ids is not None and validates(config):
                    schema_ids.check(topic, config, records)

            result = self.replicas.append_records(topic, p.index, p.records, acks=request.acks, check=check)
        except KafkaError as e:
            response = PartitionResponse(index=p.index, error_code=int(e.code), base_offset=-1, error_message=e.message)
            if topic is not None and e.code not in _NO_LOG_START_OFFSET and (checked or e.code == ErrorCode.NOT_ENOUGH_REPLICAS):
                # As Kafka's ReplicaManager: a partition that refuses an append names its log start offset
                response.log_start_offset = self.replicas.leader_offsets(topic, p.index).log_start_offset
            if isinstance(e, RecordValidationError):  # KIP-467: the client fails only these records
                response.record_errors = [BatchError(batch_index=i, batch_index_error_message=m)
                                          for i, m in e.record_errors]
            return response
        response = PartitionResponse(
            index=p.index,
            error_code=0,
            base_offset=result.first_offset,
            log_append_time_ms=result.log_append_time,
            log_start_offset=result.log_start_offset,
        )
        if self.replicas.needs_acks_wait(topic, p.index, request.acks):
            waits.append((response, topic, p.index, result.last_offset + 1))
        return response


#: Errors Kafka answers without the partition's log start offset (the append never reached the log, or the
#: batch is refused as a whole before its records are looked at).
_NO_LOG_START_OFFSET = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                  ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
                                  ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR})


#: The smallest message Kafka's log input stream accepts (a legacy v0 record's overhead).
LEGACY_RECORD_OVERHEAD_V0 = 14


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
    length = LOG_HEADER.unpack_from(mv)[1]
    if length < LEGACY_RECORD_OVERHEAD_V0 or mv[MAGIC_OFFSET] > 2:  # not a batch at all (Kafka's log input stream)
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"Record size {length} is less than the minimum record overhead "
                         f"({LEGACY_RECORD_OVERHEAD_V0})" if length < LEGACY_RECORD_OVERHEAD_V0
                         else f"Invalid magic {mv[MAGIC_OFFSET]}")
    if LOG_OVERHEAD + length > len(mv):  # the batch is cut short: Kafka sees no batch in the records
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Produce requests with version {version} must have at least one record batch per partition")
    if mv[MAGIC_OFFSET] != 2:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Produce v{version} may only carry record batches with magic 2, not {mv[MAGIC_OFFSET]}")
    if LOG_OVERHEAD + length < len(mv):
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Produce v{version} must carry exactly one record batch per partition")
    codec = mv[ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK
    if version < 7 and codec > CompressionType.ZSTD:  # Kafka reads the codec here, and fails on an unknown one
        raise KafkaError(ErrorCode.INVALID_RECORD, f"Unknown compression type id {codec}")
    if version < 7 and codec == CompressionType.ZSTD:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Produce v{version} cannot carry ZSTD batches (v7+)")


__all__ = ["ProduceHandler", "produce_error_response"]
