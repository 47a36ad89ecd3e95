"""``exactlyOnce=true``: the streaming sink writes each task's share of a micro-batch in a Kafka transaction,
and records in that same transaction that it did, so that a replayed micro-batch is not written twice.

Spark's Python Data Source API gives a write task no way to hand a transaction over to the driver: the
driver's ``commit(messages, batchId)`` runs in another process, with a fresh writer, and gets only the
tasks' pickled commit messages. So each task commits its own transaction. What a task knows (from
``TaskContext``): its partition id, the micro-batch id (local property ``streaming.sql.batchId``) and the
query id (``sql.streaming.queryId``, kept in the checkpoint, so the same across restarts of one query).

* **Transactional id** ``<prefix>-<partition id>``: the prefix is the option ``transactionalIdPrefix``, or
  ``spark-tidelog-<query id>``. Every attempt of one task, in this run or after a restart, uses the same id.
* **Fencing.** ``init_transactions()`` bumps the id's producer epoch: an older attempt still running (a
  zombie left by a killed driver, a task retried after a lost executor) can no longer write or commit, and
  its open transaction is aborted; one that was committing is finished first.
* **Marker.** The transaction also commits, with ``send_offsets_to_transaction``, an offset for the consumer
  group named after the transactional id: partition 0 of a topic the task wrote to, offset = batch id + 1
  (like a consumer offset: the next batch to write), the batch and partition in its metadata. The records
  and the marker become visible together, or not at all.
* **Skip.** After fencing, a task reads its group's committed offsets (``require_stable``): when the highest is
  above its batch id, this task's share of the batch is already in, and the task writes nothing.
* A task with no rows opens no transaction and records nothing (a replay has no rows either).

Limits (docs/spark.md "Exactly-once writes"): exactly-once holds per task, not per micro-batch, since a
batch's tasks commit one by one; a replayed micro-batch must give each partition id the same rows (true
for Spark's replays of a checkpointed query: same offsets, same plan, fixed shuffle partitions);
one transactional id per write partition, and one consumer group per id, stay on the broker.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from tidelog.spark.client import (
    admin_config,
    consumer_config,
    create_admin,
    create_consumer,
    create_producer,
    producer_config,
)
from tidelog.spark.options import SinkOptions
from tidelog.spark.writer import (
    FLUSH_TIMEOUT_S,
    Deliveries,
    produce_batch,
    timestamp_in_seconds,
)

log = logging.getLogger(__name__)

BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
DEFAULT_PREFIX = "spark-tidelog-"
#: How long the transaction calls (init, send offsets, commit, abort) may take.
TRANSACTION_CALL_TIMEOUT_S = 60.0


class FencedError(RuntimeError):
    """A newer attempt of the same write task took over its transactional id."""


@dataclass(frozen=True)
class WriteTask:
    """Who a write task is, for the transaction: its id, the micro-batch and its partition."""

    transactional_id: str
    batch_id: int
    partition_id: int

    @property
    def group_id(self) -> str:
        """The consumer group whose committed offset records the batches this task has written."""
        return self.transactional_id

    def marker(self, topic: str) -> TopicPartition:
        """The offset committed with the transaction: batch id + 1, the next batch this task will write."""
        metadata = json.dumps({"batch": self.batch_id, "partition": self.partition_id}, separators=(",", ":"))
        return TopicPartition(topic, 0, self.batch_id + 1, metadata=metadata)

    def already_written(self, next_batch: int) -> bool:
        return self.batch_id < next_batch


def transactional_id(prefix: str, partition_id: int) -> str:
    return f"{prefix}-{partition_id}"


def write_task(prefix_option: str | None, properties: Mapping[str, str | None], partition_id: int) -> WriteTask:
    """The task's identity from its Spark local ``properties`` (batch id, query id) and partition id."""
    batch = properties.get(BATCH_ID_PROPERTY)
    if batch is None or not batch.strip().lstrip("-").isdigit():
        raise ValueError(f"exactlyOnce: Spark gave this write task no micro-batch id ({BATCH_ID_PROPERTY}="
                         f"{batch!r}); exactly-once writes need a streaming query (writeStream)")
    prefix = prefix_option
    if prefix is None:
        query = properties.get(QUERY_ID_PROPERTY)
        if not query:
            raise ValueError(f"exactlyOnce: Spark gave this write task no query id ({QUERY_ID_PROPERTY}); set "
                             "the option 'transactionalIdPrefix' to name the query's transactions")
        prefix = DEFAULT_PREFIX + query
    return WriteTask(transactional_id(prefix, partition_id), int(batch), partition_id)


def current_write_task(prefix_option: str | None) -> WriteTask:
    """The identity of the Spark task this runs in."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise RuntimeError("exactlyOnce: not running in a Spark task")
    properties = {key: context.getLocalProperty(key) for key in (BATCH_ID_PROPERTY, QUERY_ID_PROPERTY)}
    return write_task(prefix_option, properties, context.partitionId())


def next_batch(committed: Iterable[TopicPartition]) -> int:
    """The first batch id a task has not written, from its group's committed offsets (0 when none)."""
    return max((tp.offset for tp in committed if tp.error is None and tp.offset >= 0), default=0)


@dataclass(frozen=True)
class TransactionCommit(WriterCommitMessage):
    """A task's report: records committed, or ``skipped`` when an earlier attempt had committed its share."""

    records: int
    transactional_id: str
    skipped: bool = False


def committed_markers(options: SinkOptions, group_id: str) -> list[TopicPartition]:
    """Every committed offset of ``group_id``, waiting for pending transactional ones (``require_stable``)."""
    admin = create_admin(admin_config(options.kafka_config))
    request = [ConsumerGroupTopicPartitions(group_id)]
    futures = admin.list_consumer_group_offsets(request, require_stable=True,
                                                request_timeout=TRANSACTION_CALL_TIMEOUT_S)
    result = futures[group_id].result()
    return list(result.topic_partitions or [])


def _group_metadata(options: SinkOptions, group_id: str) -> Any:
    config = consumer_config(options.kafka_config, group_id)
    config["group.id"] = group_id  # even when kafka.group.id is among the options: the marker is per task
    consumer = create_consumer(config)
    try:
        return consumer.consumer_group_metadata()
    finally:
        consumer.close()


def _first_topic(batch: pa.RecordBatch) -> str | None:
    if "topic" not in batch.schema.names:
        return None
    column = batch.column(batch.schema.names.index("topic"))
    valid = column.drop_null()
    return valid[0].as_py() if len(valid) else None


def write_exactly_once(options: SinkOptions, schema: StructType, batches: Iterator[pa.RecordBatch],
                       task: WriteTask) -> TransactionCommit:
    """Write ``batches`` as ``task``'s share of its micro-batch, once: fence older attempts, skip when already
    committed, else produce everything and commit it with the marker in one transaction."""
    deliveries = Deliveries()
    config = producer_config(options.kafka_config)
    config.update({"on_delivery": deliveries, "delivery.report.only.error": True,
                   "transactional.id": task.transactional_id})
    producer = create_producer(config)
    _call(producer.init_transactions, task, "starting its transactions")
    next_to_write = next_batch(committed_markers(options, task.group_id))
    if task.already_written(next_to_write):
        for _ in batches:  # Spark streams the task's input to it: take it all, write none of it
            pass
        log.info("exactlyOnce: %s already committed batch %d (next %d): skipped", task.transactional_id,
                 task.batch_id, next_to_write)
        return TransactionCommit(0, task.transactional_id, skipped=True)
    seconds = timestamp_in_seconds(schema)
    marker_topic = options.topic
    sent = 0
    producer.begin_transaction()
    try:
        for batch in batches:
            if marker_topic is None:
                marker_topic = _first_topic(batch)
            sent += produce_batch(producer, options.topic, batch, seconds, deliveries)
            deliveries.check()
        if not sent:
            producer.abort_transaction(TRANSACTION_CALL_TIMEOUT_S)  # nothing was added to it
            return TransactionCommit(0, task.transactional_id)
        # No flush() of its own: commit_transaction() flushes, and fails when a record was refused (flush() of a
        # fenced producer raises SystemError in confluent-kafka 2.16 instead of reporting the fatal error).
        assert marker_topic is not None  # records were sent, so some had a topic
        metadata = _group_metadata(options, task.group_id)
        try:
            _call(lambda t: producer.send_offsets_to_transaction([task.marker(marker_topic)], metadata, t), task,
                  "recording its batch")
            _call(producer.commit_transaction, task, "committing", FLUSH_TIMEOUT_S)
        except FencedError:
            raise
        except RuntimeError:
            deliveries.check()  # a refused record is the reason: say which
            raise
    except BaseException:
        _abort(producer, task)
        raise
    return TransactionCommit(sent, task.transactional_id)


def _call(method: Any, task: WriteTask, doing: str, timeout_s: float = TRANSACTION_CALL_TIMEOUT_S) -> None:
    try:
        method(timeout_s)  # commit_transaction's timeout also bounds its flush of the records
    except KafkaException as e:
        error: KafkaError = e.args[0]
        if error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH):
            raise FencedError(f"exactlyOnce: {task.transactional_id} (partition {task.partition_id} of batch "
                              f"{task.batch_id}) was fenced while {doing}: a newer attempt of this task writes "
                              f"it now, and this attempt's records are discarded ({error.str()})") from None
        raise RuntimeError(f"exactlyOnce: {task.transactional_id} (partition {task.partition_id} of batch "
                           f"{task.batch_id}) failed while {doing}: {error.str()}") from None


def _abort(producer: Any, task: WriteTask) -> None:
    """Abort the open transaction if the producer still can; if not (fenced, fatal), the broker aborts it when
    the next attempt starts, or when the transaction times out."""
    try:
        producer.abort_transaction(TRANSACTION_CALL_TIMEOUT_S)
    except KafkaException as e:
        log.warning("exactlyOnce: %s could not abort its transaction: %s", task.transactional_id, e.args[0])


class TidelogExactlyOnceStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("tidelog").option("exactlyOnce", "true")``."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TransactionCommit:
        task = current_write_task(self.options.transactional_id_prefix)
        return write_exactly_once(self.options, self.schema, iterator, task)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Each task committed its own transaction; nothing is left to do."""
        skipped = [m.transactional_id for m in messages if isinstance(m, TransactionCommit) and m.skipped]
        if skipped:
            log.info("exactlyOnce: batch %d replayed; already committed by %s", batchId, ", ".join(skipped))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Committed tasks stay committed and are skipped when Spark replays the batch; the others' transactions
        were aborted (or are, when their next attempt starts)."""


__all__ = ["FencedError", "TidelogExactlyOnceStreamWriter", "TransactionCommit", "WriteTask", "committed_markers",
           "current_write_task", "next_batch", "transactional_id", "write_exactly_once", "write_task"]
