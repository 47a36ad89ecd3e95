"""``df.write.format("tidelog")`` and ``df.writeStream.format("tidelog")``: the sink.

Each Spark task gets Arrow record batches, turns every row into one produced record (value, and key,
topic, partition, headers, timestamp when those columns exist; the ``topic`` option overrides the topic
column) and, before returning its commit message, flushes its producer and checks that every record was
acknowledged: a task reports success only when all its records are in the broker. A failed delivery, a
null topic or a null value in the topic column fails the task. Delivery is at-least-once, as with Spark's
Kafka sink: a retried task or micro-batch writes its records again. ``commit``/``abort`` on the driver
have nothing to do. (``exactlyOnce=true`` streaming writes go through ``exactly_once.py`` instead, which
produces with the functions here inside a transaction.)

Save modes: Spark lets a Python data source write only in ``append`` and ``overwrite`` mode; Overwrite is
refused here as the Kafka sink refuses it. The writers keep no state between calls (picklable options
only); each ``write()`` opens and closes its own producer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import KafkaError, KafkaException
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import DoubleType, StructType

from tidelog.spark.client import create_producer, producer_config
from tidelog.spark.options import SinkOptions

#: How long the final flush of a task may wait for acknowledgements.
FLUSH_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class WriteCommit(WriterCommitMessage):
    """What a successful write task tells the driver: how many records the broker acknowledged."""

    records: int


class DeliveryError(RuntimeError):
    """The broker did not acknowledge every record of a task."""


class Deliveries:
    """Failed deliveries, reported by librdkafka (``delivery.report.only.error``: successes are silent, and
    ``flush()`` returning 0 means every record was either acknowledged or reported here). Called from the
    producing thread only, inside ``poll``/``flush``."""

    def __init__(self) -> None:
        self.failed = 0
        self.first_error: KafkaError | None = None

    def __call__(self, error: KafkaError | None, _message: Any) -> None:
        if error is not None:
            self.failed += 1
            if self.first_error is None:
                self.first_error = error

    def check(self) -> None:
        if self.first_error is not None:
            raise DeliveryError(f"{self.failed} record(s) were not written: {self.first_error.str()}")

    def refused(self, error: KafkaException, topic: str | None, partition: int | None) -> DeliveryError:
        """A record librdkafka refused in ``produce()`` itself: the same failure as one reported later (which
        of the two a bad record gets depends only on whether the producer had the topic's metadata yet)."""
        self.failed += 1
        # librdkafka's text ("Unable to produce message: Local: ...") would differ from the delivery report's
        text = KafkaError(error.args[0].code()).str() if error.args and isinstance(error.args[0], KafkaError) \
            else str(error)
        where = f"topic {topic!r}" + ("" if partition is None else f", partition {partition}")
        return DeliveryError(f"{self.failed} record(s) were not written: {text} ({where})")


def write_batches(options: SinkOptions, schema: StructType, batches: Iterator[pa.RecordBatch]) -> WriteCommit:
    """Produce every row of ``batches``; return once all are acknowledged."""
    deliveries = Deliveries()
    config = producer_config(options.kafka_config)
    config.update({"on_delivery": deliveries, "delivery.report.only.error": True})
    producer = create_producer(config)
    sent = 0
    timestamp_seconds = timestamp_in_seconds(schema)
    try:
        for batch in batches:
            sent += produce_batch(producer, options.topic, batch, timestamp_seconds, deliveries)
            deliveries.check()
        remaining = producer.flush(FLUSH_TIMEOUT_S)
        deliveries.check()
        if remaining:
            raise DeliveryError(f"{remaining} of {sent} record(s) were not acknowledged within "
                                f"{FLUSH_TIMEOUT_S:.0f} s")
    except BaseException:
        producer.purge()  # the task fails and will be retried: do not keep sending in the background
        raise
    return WriteCommit(sent)


def timestamp_in_seconds(schema: StructType) -> bool:
    """Whether the input's ``timestamp`` column is a double of epoch seconds (else a timestamp, or absent)."""
    return any(f.name == "timestamp" and isinstance(f.dataType, DoubleType) for f in schema.fields)


def produce_batch(producer: Any, topic_option: str | None, batch: pa.RecordBatch, timestamp_seconds: bool,
                   deliveries: Deliveries) -> int:
    n = batch.num_rows
    if not n:
        return 0
    names = batch.schema.names
    values = batch.column(names.index("value")).to_pylist()
    keys = batch.column(names.index("key")).to_pylist() if "key" in names else [None] * n
    if topic_option is not None:
        topics = None
    else:
        topic_column = batch.column(names.index("topic"))
        if topic_column.null_count:
            raise ValueError("null topic present in the data. Use the topic option for setting a default topic.")
        topics = topic_column.to_pylist()
    partitions = batch.column(names.index("partition")).to_pylist() if "partition" in names else None
    headers = _headers(batch.column(names.index("headers"))) if "headers" in names else None
    timestamps = _timestamps_ms(batch.column(names.index("timestamp")), timestamp_seconds) \
        if "timestamp" in names else None
    produce = producer.produce
    if topics is None and partitions is None and headers is None and timestamps is None:
        try:
            for value, key in zip(values, keys):  # the common case, without per-record keyword arguments
                try:
                    produce(topic_option, value, key)
                except BufferError:
                    _produce_when_room(producer, topic_option, value, key=key)
        except KafkaException as e:
            raise deliveries.refused(e, topic_option, None) from None
        producer.poll(0)
        return n
    for i in range(n):
        kwargs: dict[str, Any] = {"key": keys[i]}
        if partitions is not None and partitions[i] is not None:
            kwargs["partition"] = partitions[i]
        if headers is not None and headers[i] is not None:
            kwargs["headers"] = headers[i]
        if timestamps is not None and timestamps[i] is not None:
            kwargs["timestamp"] = timestamps[i]
        topic = topic_option if topics is None else topics[i]
        try:
            try:
                produce(topic, values[i], **kwargs)
            except BufferError:
                _produce_when_room(producer, topic, values[i], **kwargs)
        except KafkaException as e:
            raise deliveries.refused(e, topic, kwargs.get("partition")) from None
    producer.poll(0)
    return n


def _produce_when_room(producer: Any, topic: str | None, value: Any, **kwargs: Any) -> None:
    """The local queue is full: serve delivery reports until the record fits."""
    while True:
        producer.poll(0.05)
        try:
            producer.produce(topic, value, **kwargs)
            return
        except BufferError:
            continue


def _headers(column: pa.Array) -> list[list[tuple[str, bytes | None]] | None]:
    return [None if h is None else [(kv["key"], kv["value"]) for kv in h] for h in column.to_pylist()]


def _timestamps_ms(column: pa.Array, seconds: bool) -> list[int | None]:
    if seconds:  # a double column holds epoch seconds (Spark casts it to a timestamp)
        return [None if s is None else int(s * 1000) for s in column.to_pylist()]
    micros = column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    return pc.divide(micros, 1000).to_pylist()  # integer division truncates, as the Kafka sink does


class TidelogBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteCommit:
        return write_batches(self.options, self.schema, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Every record was acknowledged before its task succeeded; nothing is left to do."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Records already written stay written (at-least-once, as the Kafka sink)."""


class TidelogStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteCommit:
        return write_batches(self.options, self.schema, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every record was acknowledged before its task succeeded; nothing is left to do."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Records already written stay written (at-least-once, as the Kafka sink)."""


__all__ = ["Deliveries", "DeliveryError", "TidelogBatchWriter", "TidelogStreamWriter", "WriteCommit", "produce_batch",
           "timestamp_in_seconds", "write_batches"]
