"""Transactions: a transactional producer's rate against the same producer without transactions, and
read_committed against read_uncommitted, on Tidelog and on Apache Kafka in one run.

Run from the repository root::

    .venv/bin/python bench/transactions.py            # 10 s per producer run (about 3.5 minutes)
    .venv/bin/python bench/transactions.py --quick    # 3 s per run (about 2 minutes)

Each target is a fresh broker: ``tidelog serve`` (:class:`tidelog.testing.BrokerProcess`) and a one-node
KRaft Kafka from the oracle harness (:class:`tests.oracle.kafka.KafkaProcess`, the release pinned in
tests/java/pom.xml; skipped with the reason when java 17+ or mvn are missing). Both get the same
overrides: one ``__transaction_state`` partition and replication factor 1.

Producer. A confluent-kafka (librdkafka) producer with ``transactional.id``, acks=all, linger.ms=5, runs
transactions of 1, 10 and 100 records of 100 bytes to a fresh one-partition topic for ``--seconds``:
begin, produce N, commit (commit flushes and waits for the coordinator). Reported: committed
transactions/s and records/s. The baseline is the same producer configuration without
``transactional.id`` (idempotent, acks=all) sending records for the same time with a flush every N
records, the same synchronisation point without the transaction; and, on the first line, a streaming
run without any flush, the producer's ceiling. ``txn/plain`` is transactional records/s over the
baseline's.

Consumer. A topic of ``--consume-records`` records (1,000,000; --quick 200,000) written in transactions
of 1,000 records, one transaction in ten aborted (flushed first, so its records are in the log), is
read from offset 0 to its end by a consumer with ``isolation.level`` read_committed (it skips the
aborted records with the fetch's aborted-transaction list) and then by one with read_uncommitted
(assign(), no group commits): records delivered per second, timed from the first record (the
client's start-up is not counted), and their ratio.

Before measuring, each broker gets ``--warmup`` seconds (10; --quick 3) of transactional and plain
sends: it creates ``__transaction_state`` and gives Kafka's JIT compiler its warm-up.

Ratios between brokers are "tidelog / kafka" (above 1 favours Tidelog). Nothing fails when a number gets
worse; the machine may be shared, so the load average is printed first.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.oracle: the Kafka broker

from tidelog.testing import BrokerProcess

OVERRIDES = {"transaction.state.log.num.partitions": "1", "transaction.state.log.replication.factor": "1",
             "transaction.state.log.min.isr": "1"}
VALUE = b"x" * 100
CONSUME_TXN, ABORT_EVERY = 1000, 10  # the consumers' topic: 1,000-record transactions, one in ten aborted


@dataclass
class ProduceRow:
    target: str
    per_txn: int
    txn_per_s: float
    records_per_s: float
    plain_records_per_s: float


@dataclass
class ConsumeRow:
    target: str
    per_txn: int
    records: int
    committed_per_s: float
    uncommitted_per_s: float


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    # Both brokers answer CreateTopics before the partition takes writes; wait until metadata has a leader.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics[topic]
        if md.error is None and md.partitions and md.partitions[0].leader >= 0:
            return
        time.sleep(0.1)


def producer_config(bootstrap: str, transactional_id: str | None) -> dict:
    config = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
              "queue.buffering.max.messages": 1_000_000}
    if transactional_id:
        config["transactional.id"] = transactional_id
    return config


def run_transactional(bootstrap: str, topic: str, per_txn: int, seconds: float) -> tuple[int, int, float]:
    """(transactions, records, elapsed s) of begin/produce N/commit for ``seconds``."""
    producer = Producer(producer_config(bootstrap, f"bench-{topic}"))
    producer.init_transactions(30)
    txns = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        producer.begin_transaction()
        for _ in range(per_txn):
            producer.produce(topic, VALUE)
        producer.commit_transaction(30)
        txns += 1
    elapsed = time.perf_counter() - start
    return txns, txns * per_txn, elapsed


def run_plain(bootstrap: str, topic: str, per_flush: int | None, seconds: float) -> tuple[int, float]:
    """(records, elapsed s) of the idempotent producer; a flush every ``per_flush`` records (None: at the end)."""
    producer = Producer(producer_config(bootstrap, None))
    records = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for _ in range(per_flush or 10_000):
            while True:
                try:
                    producer.produce(topic, VALUE)
                    break
                except BufferError:  # the local queue is full: let librdkafka send
                    producer.poll(0.01)
        records += per_flush or 10_000
        if per_flush:
            producer.flush(30)
        else:
            producer.poll(0)
    assert producer.flush(60) == 0
    return records, time.perf_counter() - start


def consume(bootstrap: str, topic: str, isolation: str, expected: int) -> tuple[int, float]:
    """(records, elapsed s) reading ``topic`` from 0 until ``expected`` records (or its end) with ``isolation``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{isolation}", "isolation.level": isolation,
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "queued.min.messages": 1_000_000, "fetch.queue.backoff.ms": 20})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        records, first = 0, None
        deadline = time.perf_counter() + 120
        at_end = False
        while not at_end and records < expected and time.perf_counter() < deadline:
            for msg in consumer.consume(10_000, 0.5):
                if msg.error() is None:
                    if first is None:
                        first = time.perf_counter()  # timed from the first record: not the client's start-up
                    records += 1
                elif msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end = True  # the end: the high watermark, or the last stable offset for read_committed
                else:
                    raise KafkaException(msg.error())
        return records, time.perf_counter() - (first or time.perf_counter())
    finally:
        consumer.close()


def bench_target(target: str, bootstrap: str, args: argparse.Namespace) -> tuple[list[ProduceRow], list[ConsumeRow],
                                                                               float]:
    print(f"# {target} at {bootstrap}", flush=True)
    # Creates __transaction_state and loads the coordinator, and gives the JVM's JIT its warm-up.
    create_topic(bootstrap, "bench-warmup")
    run_transactional(bootstrap, "bench-warmup", 10, args.warmup)
    run_plain(bootstrap, "bench-warmup", 10, args.warmup)
    create_topic(bootstrap, "bench-stream")
    records, elapsed = run_plain(bootstrap, "bench-stream", None, args.seconds)
    stream = records / elapsed
    produce_rows, consume_rows = [], []
    for per_txn in args.records_per_txn:
        txn_topic, plain_topic = f"bench-txn-{per_txn}", f"bench-plain-{per_txn}"
        create_topic(bootstrap, txn_topic)
        create_topic(bootstrap, plain_topic)
        txns, records, elapsed = run_transactional(bootstrap, txn_topic, per_txn, args.seconds)
        plain, plain_elapsed = run_plain(bootstrap, plain_topic, per_txn, args.seconds)
        row = ProduceRow(target, per_txn, txns / elapsed, records / elapsed, plain / plain_elapsed)
        produce_rows.append(row)
        print(f"  {per_txn:>3} records/txn: {row.txn_per_s:,.0f} txn/s, {row.records_per_s:,.0f} records/s "
              f"(plain {row.plain_records_per_s:,.0f})", flush=True)
    # The consumers' topic: transactions of CONSUME_TXN records, one in ABORT_EVERY aborted.
    topic = "bench-consume"
    create_topic(bootstrap, topic)
    committed, written = fill(bootstrap, topic, args.consume_records)
    got_c, elapsed_c = consume(bootstrap, topic, "read_committed", committed)
    got_u, elapsed_u = consume(bootstrap, topic, "read_uncommitted", written)
    if (got_c, got_u) != (committed, written):
        print(f"  !! read {got_c} of {committed} committed and {got_u} of {written} records", flush=True)
    consume_rows.append(ConsumeRow(target, CONSUME_TXN, written, got_c / elapsed_c, got_u / elapsed_u))
    print(f"  consumers: read_committed {got_c / elapsed_c:,.0f} records/s, read_uncommitted "
          f"{got_u / elapsed_u:,.0f} records/s", flush=True)
    return produce_rows, consume_rows, stream


def fill(bootstrap: str, topic: str, records: int) -> tuple[int, int]:
    """Write ``records`` in transactions of CONSUME_TXN, every ABORT_EVERY-th aborted: (committed, written)."""
    producer = Producer(producer_config(bootstrap, f"bench-fill-{topic}"))
    producer.init_transactions(30)
    committed = written = 0
    for n in range(records // CONSUME_TXN):
        producer.begin_transaction()
        for _ in range(CONSUME_TXN):
            while True:
                try:
                    producer.produce(topic, VALUE)
                    break
                except BufferError:
                    producer.poll(0.01)
        written += CONSUME_TXN
        if n % ABORT_EVERY == ABORT_EVERY - 1:
            producer.flush(30)  # in the log, then aborted: read_uncommitted sees it, read_committed skips it
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
            committed += CONSUME_TXN
    return committed, written


def print_tables(produce_rows: list[ProduceRow], consume_rows: list[ConsumeRow], streams: dict[str, float]) -> None:
    targets = list(streams)
    print("\nStreaming idempotent producer (no flush), records/s: "
          + ", ".join(f"{t} {streams[t]:,.0f}" for t in targets))
    print("\nProducer            rec/txn      txn/s     records/s  plain rec/s  txn/plain")
    for r in produce_rows:
        print(f"{r.target:<19} {r.per_txn:>7} {r.txn_per_s:>10,.0f} {r.records_per_s:>13,.0f} "
              f"{r.plain_records_per_s:>12,.0f} {r.records_per_s / r.plain_records_per_s:>10.2f}")
    print(f"\nConsumer            rec/txn   records  read_committed/s  read_uncommitted/s  rc/ru   "
          f"(1 transaction in {ABORT_EVERY} aborted)")
    for c in consume_rows:
        print(f"{c.target:<19} {c.per_txn:>7} {c.records:>9,} {c.committed_per_s:>17,.0f} "
              f"{c.uncommitted_per_s:>19,.0f} {c.committed_per_s / c.uncommitted_per_s:>6.2f}")
    if len(targets) == 2:
        a, b = targets
        print(f"\n{a} / {b}      rec/txn   txn/s  records/s  plain rec/s")
        for per_txn in sorted({r.per_txn for r in produce_rows}):
            pa, pb = (next(r for r in produce_rows if r.target == t and r.per_txn == per_txn) for t in targets)
            print(f"{'':<19}{per_txn:>8} {pa.txn_per_s / pb.txn_per_s:>7.2f} "
                  f"{pa.records_per_s / pb.records_per_s:>10.2f} {pa.plain_records_per_s / pb.plain_records_per_s:>12.2f}")
        ca, cb = (next(c for c in consume_rows if c.target == t) for t in targets)
        print(f"{'':<19}consumers: read_committed {ca.committed_per_s / cb.committed_per_s:.2f}, "
              f"read_uncommitted {ca.uncommitted_per_s / cb.uncommitted_per_s:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 s per producer run")
    ap.add_argument("--seconds", type=float, help="seconds per producer run (default 10; --quick 3)")
    ap.add_argument("--warmup", type=float, help="seconds of warm-up per broker (default 10; --quick 3)")
    ap.add_argument("--consume-records", type=int,
                    help="records of the consumers' topic (default 1,000,000; --quick 200,000)")
    ap.add_argument("--records-per-txn", type=lambda s: [int(x) for x in s.split(",")], default=[1, 10, 100],
                    help="comma-separated transaction sizes (default 1,10,100)")
    ap.add_argument("--targets", default="tidelog,kafka", help="tidelog, kafka or both (default)")
    args = ap.parse_args(argv)
    if args.seconds is None:
        args.seconds = 3.0 if args.quick else 10.0
    if args.warmup is None:
        args.warmup = 3.0 if args.quick else 10.0
    if args.consume_records is None:
        args.consume_records = 200_000 if args.quick else 1_000_000
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs; "
          f"{args.seconds:g} s per producer run", flush=True)
    produce_rows: list[ProduceRow] = []
    consume_rows: list[ConsumeRow] = []
    streams: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="tidelog-bench-txn-") as tmp:
        for target in targets:
            if target == "tidelog":
                with BrokerProcess(Path(tmp) / "tidelog", overrides=OVERRIDES) as broker:
                    p, c, streams[target] = bench_target(target, broker.bootstrap, args)
            elif target == "kafka":
                try:
                    from tests.oracle import maven
                    from tests.oracle.kafka import KafkaProcess
                    classpath = maven.build()
                except Exception as e:  # no java/mvn: Kafka is skipped, Tidelog still measured
                    print(f"# kafka skipped: {e}", flush=True)
                    continue
                with KafkaProcess(Path(tmp) / "kafka", classpath=classpath, overrides=OVERRIDES) as broker:
                    try:
                        p, c, streams[target] = bench_target(target, broker.bootstrap, args)
                    except Exception:
                        print(f"# kafka failed (alive: {broker.alive}); the end of its log:", flush=True)
                        print("".join(broker.log_file.read_text(errors="replace").splitlines(True)[-30:]))
                        raise
            else:
                ap.error(f"unknown target {target!r}")
            produce_rows += p
            consume_rows += c
    print_tables(produce_rows, consume_rows, streams)
    return 0


if __name__ == "__main__":
    sys.exit(main())
