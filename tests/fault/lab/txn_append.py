"""The list-append transaction workload (for :mod:`tests.fault.lab.elle`).

Each :class:`AppendTransactions` client owns a transactional producer and a read_committed
consumer assigned every partition from offset 0. A transaction first polls what is new (its
*reads*: per partition, the values in the order returned), then appends 1-3 values to partitions
it owns (its *writes*: every client writes its own partitions, all of them read them), then commits
or (``abort_ratio`` of the time, on purpose) aborts -- after flushing, so that aborted
records are in the log for a read_committed reader to (wrongly) see. It is recorded as a ``txn`` op like the
:class:`~tests.fault.lab.workload.TransactionalProducer`'s (so the history checker sees its
writes), with ``reads`` added to the value.

:func:`transactions` turns a history into :class:`~tests.fault.lab.elle.Txn` s and
:func:`check_history` runs the checker against the final read_committed read.
"""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaException, TopicPartition

from tests.fault.lab.elle import AppendVerdict, Txn, check
from tests.fault.lab.history import History
from tests.fault.lab.workload import CLIENT_LOG, TransactionalProducer, _err


class AppendTransactions(TransactionalProducer):
    """Reads every partition, appends to ``keys`` (see the module docstring)."""

    def __init__(self, *args, keys: list[int], abort_ratio: float = 0.2, **kw) -> None:
        super().__init__(*args, abort_ratio=abort_ratio, flush_before_abort=True, **kw)
        self.keys = keys

    def work(self) -> None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"jepsen-{self.process}",
                             "enable.auto.commit": False, "isolation.level": "read_committed",
                             "topic.metadata.refresh.interval.ms": 1000, "client.id": f"jepsen-{self.process}-reader",
                             "logger": CLIENT_LOG})
        consumer.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
        producer = None
        n = 0
        try:
            while not self.stop_event.is_set():
                if producer is None:
                    try:
                        producer = self._producer()
                    except KafkaException as e:
                        self.history.add(self.process, "info", "init", None, _err(e))
                        self.stop_event.wait(1.0)
                        continue
                reads: dict[str, list[str]] = {}
                for m in consumer.consume(100, 0.05):
                    if m.error() is None:
                        reads.setdefault(str(m.partition()), []).append(m.value().decode())
                writes = []
                for _ in range(self.rng.randint(1, 3)):
                    writes.append([self.rng.choice(self.keys), f"{self.process}-{n}"])
                    n += 1
                intent = "abort" if self.rng.random() < self.abort_ratio else "commit"
                value = {"values": writes, "intent": intent, "reads": reads}
                self.history.add(self.process, "invoke", "txn", value)
                outcome, error = self._transaction(producer, writes, intent)
                if outcome is None:
                    self.history.add(self.process, "info", "txn", value, error)
                    producer = None
                else:
                    self.history.add(self.process, "ok", "txn", {**value, "outcome": outcome}, error)
        finally:
            consumer.close()


def transactions(history: History) -> list[Txn]:
    """Every ``txn`` op with ``reads`` (the append workload's), with its outcome."""
    open_: dict[str, dict] = {}
    txns: list[Txn] = []
    for op in history.ops:
        if op.f != "txn" or "reads" not in (op.value or {}):
            continue
        if op.type == "invoke":
            open_[op.process] = op.value
            continue
        open_.pop(op.process, None)
        status = op.value.get("outcome", "unknown") if op.type == "ok" else "unknown"
        txns.append(_txn(f"{op.process}:{len(txns)}", op.process, status, op.value))
    for process, value in open_.items():  # never completed: unknown
        txns.append(_txn(f"{process}:{len(txns)}", process, "unknown", value))
    return txns


def _txn(tid: str, process: str, status: str, value: dict) -> Txn:
    return Txn(tid, process, status, [(int(p), v) for p, v in value["values"]],
               {int(p): vs for p, vs in value["reads"].items()})


def check_history(history: History) -> AppendVerdict:
    """The checker over the history's transactions, the final read_committed read as the version
    order, and every read_committed poll of the run."""
    versions: dict[int, list[str]] = {}
    pollers = []
    for op in history.ops:
        if op.f in ("read", "poll") and op.type == "ok" and op.value["isolation"] == "read_committed":
            by_key: dict[int, list[str]] = {}
            for p, _, v in sorted(op.value["records"], key=lambda r: (r[0], r[1])):
                by_key.setdefault(p, []).append(v)
            if op.f == "read":
                versions = by_key
            else:
                pollers += [(op.process, p, vs) for p, vs in by_key.items()]
    return check(transactions(history), versions, pollers)


__all__ = ["AppendTransactions", "check_history", "transactions"]
