"""Benchmark: the ``tidelog`` Spark data source against plain confluent-kafka loops, in one run.

Run from the repository root (needs the ``spark`` extra and a Java runtime)::

    .venv/bin/python bench/spark.py            # 1,000,000 records of 100 bytes, 3 rounds (a few minutes)
    .venv/bin/python bench/spark.py --quick    # 100,000 records, 1 round

One ``tidelog serve`` broker (a ``BrokerProcess`` on a fresh data dir) and one local SparkSession
(``local[N]``, N = ``--cores``, 2 by default). The records go into a topic with ``--partitions`` (2)
partitions through a plain producer first; then, on the same records:

* **consumer loop**: one confluent-kafka Consumer assigned to every partition, ``consume(10000)`` in a loop,
  touching each record's value, with the source's consumer settings (``queued.min.messages=1000000``,
  ``fetch.queue.backoff.ms=20``: with librdkafka's defaults a consumer pauses for a second whenever
  100,000 records are queued and reads about 140k records/s); the baseline for reading;
* **batch source**: ``spark.read.format("tidelog")...load()`` written to the ``noop`` sink;
* **streaming source**: ``readStream.format("tidelog")`` with ``trigger(availableNow=True)`` into ``noop``,
  a fresh checkpoint each round (query start to termination);
* **producer loop**: one confluent-kafka Producer sending the same number of 100-byte values and flushing,
  with the sink's producer settings (linger.ms=20, batch.size=1 MiB, failures reported through
  ``delivery.report.only.error``); the baseline for writing;
* **sink**: a DataFrame of the same values (``spark.range`` in the JVM) written with
  ``write.format("tidelog")``, every record acknowledged before the job ends.

Every Spark figure counts the whole job (planning, task start, Python workers), warm: one small read
and one small write run first so worker start-up is not counted. Each row shows rows/s (best round, median
beside) and the ratio to its plain-client baseline (above 1 = faster than the plain loop; Spark runs
``--cores`` tasks in parallel, the plain loop runs on one thread).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import tidelog
from tidelog.testing import BrokerProcess

VALUE_BYTES = 100


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(30)


def producer_loop(bootstrap: str, topic: str, records: int, partitions: int) -> float:
    """Seconds to send ``records`` values round-robin over the partitions and flush (failures reported)."""
    errors: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            errors.append(error)

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1024 * 1024,
                         "socket.nagle.disable": True, "on_delivery": on_delivery,
                         "delivery.report.only.error": True})
    value = b"v" * VALUE_BYTES
    produce = producer.produce
    started = time.perf_counter()
    for i in range(records):
        try:
            produce(topic, value, None, i % partitions)
        except BufferError:
            producer.poll(0.05)
            produce(topic, value, None, i % partitions)
    if producer.flush(120):
        raise RuntimeError("producer did not flush")
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} records failed: {errors[0]}")
    return elapsed


def consumer_loop(bootstrap: str, topic: str, records: int, partitions: int) -> float:
    """Seconds for one Consumer to read every record (values touched), from offset 0 to the end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "fetch.wait.max.ms": 100, "max.partition.fetch.bytes": 4 * 1024 * 1024,
                         "isolation.level": "read_uncommitted", "socket.nagle.disable": True,
                         # librdkafka's defaults pause fetching for 1 s whenever 100,000 records are queued
                         "queued.min.messages": 1_000_000, "fetch.queue.backoff.ms": 20})
    started = time.perf_counter()
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen, done, size = 0, 0, 0
    while done < partitions:
        for m in consumer.consume(10_000, 1.0):
            if m.error() is None:
                size += len(m.value())
                seen += 1
            elif m.error().code() == KafkaError._PARTITION_EOF:
                done += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    if seen != records or size != records * VALUE_BYTES:
        raise RuntimeError(f"consumer read {seen} records, expected {records}")
    return elapsed


def spark_session(cores: int):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(f"local[{cores}]").appName("tidelog-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", str(cores)).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def batch_source(spark, bootstrap: str, topic: str) -> float:
    started = time.perf_counter()
    (spark.read.format("tidelog").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).load()
     .write.format("noop").mode("overwrite").save())
    return time.perf_counter() - started


def streaming_source(spark, bootstrap: str, topic: str, records: int, checkpoint: Path) -> float:
    started = time.perf_counter()
    query = (spark.readStream.format("tidelog").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest").load()
             .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    read = sum(p["numInputRows"] for p in query.recentProgress)
    if read != records:
        raise RuntimeError(f"streaming query read {read} records, expected {records}")
    return elapsed


def sink(spark, bootstrap: str, topic: str, records: int, cores: int) -> float:
    from pyspark.sql import functions as F

    df = spark.range(0, records, 1, cores).select(F.expr(f"cast(repeat('v', {VALUE_BYTES}) as binary)").alias("value"))
    started = time.perf_counter()
    df.write.format("tidelog").option("kafka.bootstrap.servers", bootstrap).option("topic", topic) \
        .mode("append").save()
    return time.perf_counter() - started


def end_offsets(bootstrap: str, topic: str, partitions: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check"})
    total = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions))
    consumer.close()
    return total


def rounds(fn: Callable[[int], float], repeats: int) -> list[float]:
    return [fn(i) for i in range(repeats)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=None, help="records per measurement (default 1,000,000)")
    ap.add_argument("--repeats", type=int, default=None, help="rounds per measurement (default 3)")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2, help="Spark local[N]")
    ap.add_argument("--quick", action="store_true", help="100,000 records, 1 round")
    args = ap.parse_args()
    records = args.records or (100_000 if args.quick else 1_000_000)
    repeats = args.repeats or (1 if args.quick else 3)
    import pyarrow
    import pyspark

    print(f"Python {platform.python_version()}, tidelog {tidelog.__version__}, pyspark {pyspark.__version__}, "
          f"pyarrow {pyarrow.__version__}, confluent-kafka {confluent_kafka.__version__} "
          f"(librdkafka {confluent_kafka.libversion()[0]}), {os.cpu_count()} cpus")
    print(f"{records:,} records of {VALUE_BYTES} bytes, {args.partitions} partitions, local[{args.cores}], "
          f"{repeats} round(s)\n")
    tmp = Path(tempfile.mkdtemp(prefix="tidelog-bench-spark-"))
    results: list[tuple[str, list[float], str | None]] = []
    try:
        with BrokerProcess(tmp / "broker") as broker:
            bootstrap = broker.bootstrap
            create_topic(bootstrap, "bench-read", args.partitions)
            producer_loop(bootstrap, "bench-read", records, args.partitions)
            spark = spark_session(args.cores)
            create_topic(bootstrap, "warm", args.partitions)
            producer_loop(bootstrap, "warm", 1000, args.partitions)
            batch_source(spark, bootstrap, "warm")
            streaming_source(spark, bootstrap, "warm", 1000, tmp / "ck-warm")
            sink(spark, bootstrap, "warm", 1000, args.cores)

            results.append(("plain consumer loop", rounds(
                lambda _: consumer_loop(bootstrap, "bench-read", records, args.partitions), repeats), None))
            results.append(("tidelog batch source -> noop", rounds(
                lambda _: batch_source(spark, bootstrap, "bench-read"), repeats), "plain consumer loop"))
            results.append(("tidelog streaming availableNow -> noop", rounds(
                lambda i: streaming_source(spark, bootstrap, "bench-read", records, tmp / f"ck-{i}"), repeats),
                "plain consumer loop"))

            def produce_round(i: int) -> float:
                create_topic(bootstrap, f"bench-producer-{i}", args.partitions)
                return producer_loop(bootstrap, f"bench-producer-{i}", records, args.partitions)

            def sink_round(i: int) -> float:
                create_topic(bootstrap, f"bench-sink-{i}", args.partitions)
                elapsed = sink(spark, bootstrap, f"bench-sink-{i}", records, args.cores)
                written = end_offsets(bootstrap, f"bench-sink-{i}", args.partitions)
                if written != records:
                    raise RuntimeError(f"sink wrote {written} records, expected {records}")
                return elapsed

            results.append(("plain producer loop", rounds(produce_round, repeats), None))
            results.append(("tidelog sink (batch write)", rounds(sink_round, repeats), "plain producer loop"))
            spark.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    best_rate = {name: records / min(times) for name, times, _ in results}
    print(f"{'what':<40} {'best s':>8} {'rows/s best':>12} {'rows/s median':>14} {'vs plain':>9}")
    for name, times, baseline in results:
        rate = records / min(times)
        median = records / statistics.median(times)
        ratio = f"{rate / best_rate[baseline]:.2f}x" if baseline else ""
        print(f"{name:<40} {min(times):>8.2f} {rate:>12,.0f} {median:>14,.0f} {ratio:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
