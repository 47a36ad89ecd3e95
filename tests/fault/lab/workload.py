"""The fault runs' clients: each a thread writing unique values (or reading) with confluent-kafka and
recording what it does in a :class:`~tests.fault.lab.history.History`.

* :class:`IdempotentProducer` -- acks=all, ``enable.idempotence``: one ``send`` per value;
* :class:`TransactionalProducer` -- transactions of 1-4 values over the partitions, most committed,
  some aborted on purpose;
* :class:`Reader` -- a consumer (read_uncommitted or read_committed) assigned every partition from
  the start, recording what it sees (``poll``);
* :func:`final_read` -- after healing: every partition from its start up to the high watermark (or
  the last stable offset), recorded as one ``read``.

Values are ``<process>-<n>``: unique across the run, so a duplicate or a stranger is visible.
"""

from __future__ import annotations

import collections
import logging
import random
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from tests.fault.lab.history import History

#: librdkafka's log lines (brokers going away) go here, not to the terminal.
CLIENT_LOG = logging.getLogger("tests.fault.lab.workload.librdkafka")
CLIENT_LOG.addHandler(logging.NullHandler())  # not Python's last-resort handler on stderr
CLIENT_LOG.propagate = False  # pytest's log capture would keep every debug line


class ClientLog(logging.Handler):
    """The last ``limit`` lines librdkafka logged during a run (kept with a failed run's artifacts)."""

    def __init__(self, t0: float, limit: int = 50000) -> None:
        super().__init__(logging.DEBUG)
        self.lines: collections.deque[str] = collections.deque(maxlen=limit)
        self._t0 = t0  # the history's start, so that times line up with its ops

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{time.monotonic() - self._t0:9.3f} {record.getMessage()}")

    def __enter__(self) -> ClientLog:
        CLIENT_LOG.setLevel(logging.DEBUG)
        CLIENT_LOG.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        CLIENT_LOG.removeHandler(self)


def _err(e: object) -> str:
    if isinstance(e, KafkaException):
        e = e.args[0]
    if isinstance(e, KafkaError):
        return f"{e.name()}: {e.str()}"
    return f"{type(e).__name__}: {e}"


class _Client(threading.Thread):
    def __init__(self, process: str, bootstrap: str, topic: str, partitions: int, history: History,
                 stop: threading.Event, seed: int = 0) -> None:
        super().__init__(name=process, daemon=True)
        self.process = process
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.history = history
        self.stop_event = stop
        self.rng = random.Random(f"{seed}-{process}")
        self.crashed: BaseException | None = None

    def run(self) -> None:
        try:
            self.work()
        except BaseException as e:  # a client bug, not the broker's: the run reports it
            self.crashed = e
            self.history.add(self.process, "info", "crash", None, _err(e))


class IdempotentProducer(_Client):
    """Sends ``rate`` values a second, round robin over the partitions, acks=all and idempotent.
    ``message.timeout.ms`` is well above any fault: librdkafka bumps the producer epoch when
    in-flight messages time out and sends what is still queued under the new epoch, which is
    outside what idempotence promises."""

    def __init__(self, *args, rate: float = 100.0, message_timeout_ms: int = 60000, **kw) -> None:
        super().__init__(*args, **kw)
        self.interval = 1.0 / rate
        self.message_timeout_ms = message_timeout_ms
        self.fatal: str | None = None

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.fatal = _err(err)

    def _producer(self) -> Producer:
        return Producer({"error_cb": self._on_error, "bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": self.message_timeout_ms,
                         "retry.backoff.ms": 100, "topic.metadata.refresh.interval.ms": 1000,
                         # idempotence's decisions (epoch bumps and why) go to CLIENT_LOG at DEBUG
                         "debug": "eos", "client.id": self.process, "logger": CLIENT_LOG})

    def work(self) -> None:
        producer = self._producer()
        n = 0
        while not self.stop_event.is_set():
            value = f"{self.process}-{n}"
            partition = n % self.partitions
            n += 1
            self.history.add(self.process, "invoke", "send", {"value": value, "partition": partition})

            def done(err, msg, value=value, partition=partition):
                if err is None:
                    self.history.add(self.process, "ok", "send",
                                     {"value": value, "partition": partition, "offset": msg.offset()})
                else:  # timed out, purged, fatal: it may have been written anyway
                    self.history.add(self.process, "info", "send", {"value": value, "partition": partition},
                                     _err(err))

            try:
                producer.produce(self.topic, value.encode(), partition=partition, on_delivery=done)
            except (BufferError, KafkaException) as e:  # not enqueued: certainly not written
                self.history.add(self.process, "fail", "send", {"value": value, "partition": partition}, _err(e))
                if isinstance(e, KafkaException) and e.args[0].fatal():
                    self.fatal = self.fatal or _err(e)
                producer.poll(0.1)
            producer.poll(self.interval)
            if self.fatal is not None:  # the producer is unusable: what it still held is purged (info)
                self.history.add(self.process, "info", "producer-fatal", None, self.fatal)
                producer.purge()
                producer.flush(5)
                producer, self.fatal = self._producer(), None
        producer.flush(self.message_timeout_ms / 1000 + 5)
        producer.purge()
        producer.poll(0)


class TransactionalProducer(_Client):
    """Transactions of 1-4 values; ``abort_ratio`` of them aborted on purpose. An error makes the
    outcome unknown (``info``) unless the abort that follows succeeds (then ``aborted``); after an
    unknown outcome the producer is replaced (its successor's InitProducerId fences it)."""

    def __init__(self, *args, abort_ratio: float = 0.3, txn_timeout_ms: int = 10000, flush_before_abort: bool = False,
                 **kw) -> None:
        super().__init__(*args, **kw)
        self.abort_ratio = abort_ratio
        self.flush_before_abort = flush_before_abort
        self.txn_timeout_ms = txn_timeout_ms

    def _producer(self) -> Producer:
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": self.process,
                             "transaction.timeout.ms": self.txn_timeout_ms, "acks": "all",
                             "message.timeout.ms": self.txn_timeout_ms - 1000, "linger.ms": 5,
                             "topic.metadata.refresh.interval.ms": 1000, "client.id": self.process,
                             "logger": CLIENT_LOG})
        producer.init_transactions(30)
        return producer

    def work(self) -> None:
        producer: Producer | None = None
        n = 0
        while not self.stop_event.is_set():
            if producer is None:
                try:
                    producer = self._producer()
                except KafkaException as e:
                    self.history.add(self.process, "info", "init", None, _err(e))
                    producer = None
                    self.stop_event.wait(1.0)
                    continue
            values = []
            for _ in range(self.rng.randint(1, 4)):
                values.append([self.rng.randrange(self.partitions), f"{self.process}-{n}"])
                n += 1
            intent = "abort" if self.rng.random() < self.abort_ratio else "commit"
            self.history.add(self.process, "invoke", "txn", {"values": values, "intent": intent})
            outcome, error = self._transaction(producer, values, intent)
            if outcome is None:
                self.history.add(self.process, "info", "txn", {"values": values, "intent": intent}, error)
                producer = None  # a new producer with the same transactional.id fences this one
            else:
                self.history.add(self.process, "ok", "txn", {"values": values, "intent": intent,
                                                             "outcome": outcome}, error)
            self.stop_event.wait(0.05)

    def _transaction(self, producer: Producer, values: list, intent: str) -> tuple[str | None, str | None]:
        try:
            producer.begin_transaction()
            for partition, value in values:
                producer.produce(self.topic, value.encode(), partition=partition)
            if intent == "commit":
                producer.commit_transaction(self.txn_timeout_ms / 1000)
                return "committed", None
            if self.flush_before_abort:  # the records reach the log before the abort marker
                producer.flush(self.txn_timeout_ms / 1000)
            producer.abort_transaction(self.txn_timeout_ms / 1000)
            return "aborted", None
        except KafkaException as e:
            error = _err(e)
            kerr = e.args[0]
            if isinstance(kerr, KafkaError) and kerr.txn_requires_abort():
                try:
                    producer.abort_transaction(self.txn_timeout_ms / 1000)
                    return "aborted", error
                except KafkaException as e2:
                    return None, f"{error}; then abort: {_err(e2)}"
            return None, error


class Reader(_Client):
    """Reads every partition from offset 0 while the run lasts, recording batches of what it saw."""

    def __init__(self, *args, isolation: str = "read_uncommitted", **kw) -> None:
        super().__init__(*args, **kw)
        self.isolation = isolation

    def work(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"jepsen-{self.process}",
                             "enable.auto.commit": False, "isolation.level": self.isolation,
                             "topic.metadata.refresh.interval.ms": 1000, "client.id": self.process,
                             "logger": CLIENT_LOG})
        consumer.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
        pending: list = []
        flushed = time.monotonic()
        try:
            while not self.stop_event.is_set():
                for m in consumer.consume(500, 0.2):
                    if m.error() is None:
                        pending.append([m.partition(), m.offset(), m.value().decode()])
                if pending and time.monotonic() - flushed > 0.5:
                    self._record(pending)
                    pending, flushed = [], time.monotonic()
            if pending:
                self._record(pending)
        finally:
            consumer.close()

    def _record(self, records: list) -> None:
        self.history.add(self.process, "ok", "poll", {"isolation": self.isolation, "records": records})


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """Every partition's high watermark (a read_uncommitted ListOffsets; read_committed would give
    the last stable offset)."""
    # librdkafka's default isolation.level is read_committed, whose ListOffsets answers the LSO
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "jepsen-watermarks", "logger": CLIENT_LOG,
                         "isolation.level": "read_uncommitted"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    finally:
        consumer.close()


def final_read(bootstrap: str, topic: str, partitions: int, isolation: str, history: History,
               timeout: float = 60.0) -> None:
    """Every partition from offset 0 up to its high watermark (for read_committed too: once every
    transaction has ended, the last stable offset is the high watermark), recorded as one ``read``
    op; ``info`` if the consumer's position did not get there in time (e.g. a hanging transaction
    holds the last stable offset back)."""
    process = f"final-{isolation}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"jepsen-{process}",
                         "enable.auto.commit": False, "isolation.level": isolation, "client.id": process,
                         "logger": CLIENT_LOG})
    records: list = []
    history.add(process, "invoke", "read", {"isolation": isolation})
    try:
        ends = high_watermarks(bootstrap, topic, partitions)
        positions: dict[int, int] = {}
        tps = [TopicPartition(topic, p, 0) for p in range(partitions)]
        consumer.assign(tps)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.3):
                if m.error() is None:
                    records.append([m.partition(), m.offset(), m.value().decode()])
            positions = {tp.partition: tp.offset for tp in consumer.position(tps)}
            if all(ends[p] == 0 or positions[p] >= ends[p] for p in range(partitions)):  # empty: no position
                history.add(process, "ok", "read", {"isolation": isolation, "records": records, "ends": ends})
                return
        history.add(process, "info", "read", {"isolation": isolation, "records": records, "ends": ends},
                    f"did not reach the high watermarks {ends} within {timeout:g} s (positions {positions})")
    finally:
        consumer.close()


__all__ = ["ClientLog", "IdempotentProducer", "Reader", "TransactionalProducer", "final_read"]
