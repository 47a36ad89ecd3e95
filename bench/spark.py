"""Benchmark: the ``tidelog`` Spark data source against Spark's own Kafka connector, on the same data, in one run.

Run from the repository root (needs the ``spark`` extra, a Java runtime and, the first time, Maven Central
for Spark's connector)::

    .venv/bin/python bench/spark.py            # 1,000,000 records of 100 bytes, 3 rounds (a few minutes)
    .venv/bin/python bench/spark.py --quick    # 100,000 records, 1 round
    .venv/bin/python bench/spark.py --profile  # also: cProfile of the tidelog source's read() and write()

One ``tidelog serve`` broker (a ``BrokerProcess`` on a fresh data dir) and one local SparkSession
(``local[N]``, N = ``--cores``, 2 by default) that carries Spark's Kafka connector for the installed
PySpark (``tidelog.spark.kafka_connector``: ``spark-sql-kafka-0-10_<scala>:<spark version>``, which Spark
downloads into its Ivy cache). The records go into a topic with ``--partitions`` (2) partitions through a
plain producer first; then, on the same records, each of these runs with ``format("tidelog")`` and with
``format("kafka")``, the two taking turns (rounds alternate which goes first):

* **batch read**: ``spark.read.format(...).option("subscribe", ...).load()`` written to the ``noop`` sink;
* **streaming read**: ``readStream.format(...)`` from ``earliest`` with ``trigger(availableNow=True)``
  into ``noop``, a fresh checkpoint each round (query start to termination; the rows read are checked).
  A second row counts only the micro-batches' ``addBatch`` time from the query progress: the reading,
  without starting the query (for a Python source Spark starts a fresh Python process per query run,
  which imports PySpark from its zip archive: about a second and a half on the 2-core VM);
* **write**: a DataFrame of the same number of 100-byte values (``spark.range`` in the JVM) written with
  ``write.format(...)`` into a fresh topic (the record count in the topic is checked). Each connector
  uses its own producer defaults: Spark's connector the Java client's (``linger.ms=0``,
  ``batch.size=16384``, ``acks=all``, idempotent), the tidelog sink librdkafka's with ``linger.ms=20`` and
  ``batch.size=1048576``.

For context it also times a plain confluent-kafka consumer loop and producer loop on one thread (with the
tidelog source's and sink's client settings). Every Spark figure counts the whole job (planning, task
start, Python workers), warm: one small read and write of each kind runs first. It prints rows/s (best
round, median beside), the ratio tidelog/kafka of the best rounds (above 1: the tidelog source is
faster), and the CPU seconds per million rows that every process involved spent (this script, the JVM,
Spark's Python workers, the broker; from ``/proc``), which load from other programs on the machine
does not inflate the way it inflates wall-clock figures.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
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
FORMATS = ("tidelog", "kafka")


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

    from tidelog.spark.kafka_connector import kafka_connector_conf

    builder = (SparkSession.builder.master(f"local[{cores}]").appName("tidelog-bench")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(cores)))
    for key, value in kafka_connector_conf().items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def batch_read(spark, fmt: str, bootstrap: str, topic: str) -> float:
    started = time.perf_counter()
    (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).load()
     .write.format("noop").mode("overwrite").save())
    return time.perf_counter() - started


def streaming_read(spark, fmt: str, bootstrap: str, topic: str, records: int, checkpoint: Path) -> tuple[float, float]:
    """Seconds from the query's creation to its end, and seconds its micro-batches spent reading (addBatch)."""
    started = time.perf_counter()
    query = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest").load()
             .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    read = sum(p["numInputRows"] for p in query.recentProgress)
    if read != records:
        raise RuntimeError(f"streaming {fmt} query read {read} records, expected {records}")
    return elapsed, sum(p["durationMs"].get("addBatch", 0) for p in query.recentProgress) / 1000


def write(spark, fmt: str, bootstrap: str, topic: str, records: int, cores: int) -> float:
    from pyspark.sql import functions as F

    df = spark.range(0, records, 1, cores).select(F.expr(f"cast(repeat('v', {VALUE_BYTES}) as binary)").alias("value"))
    started = time.perf_counter()
    df.write.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("topic", topic).mode("append").save()
    return time.perf_counter() - started


def end_offsets(bootstrap: str, topic: str, partitions: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check"})
    total = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions))
    consumer.close()
    return total


def tree_cpu_seconds(root: int) -> float | None:
    """User + system CPU seconds of ``root`` and every process under it, counting exited children their
    parents have reaped (Linux ``/proc``; None elsewhere). A difference of two readings is the CPU the
    whole tree spent in between (this script, the JVM, Spark's Python workers, the broker), which another
    load on the machine does not inflate the way it inflates wall-clock time."""
    stats: dict[int, tuple[int, int]] = {}
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                # after the command: state ppid ... utime(12) stime(13) cutime(14) cstime(15)
                stats[int(entry)] = (int(fields[1]), sum(int(v) for v in fields[11:15]))
    except OSError:
        return None
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0))[1]
        todo.extend(children.get(pid, []))
    return total / os.sysconf("SC_CLK_TCK")


def alternate(measure: Callable[[str, int], float], repeats: int,
              cpu: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """``repeats`` rounds of ``measure(fmt, round)`` for both formats, alternating which goes first; the CPU
    seconds of each round go to ``cpu``."""
    times: dict[str, list[float]] = {fmt: [] for fmt in FORMATS}
    for i in range(repeats):
        for fmt in (FORMATS if i % 2 == 0 else FORMATS[::-1]):
            before = tree_cpu_seconds(os.getpid())
            times[fmt].append(measure(fmt, i))
            after = tree_cpu_seconds(os.getpid())
            if cpu is not None and before is not None and after is not None:
                cpu.setdefault(fmt, []).append(after - before)
    return times


def profile_tidelog(spark, bootstrap: str, topic: str, records: int, partitions: int) -> None:
    """cProfile of the source's read() and the sink's write() on their own, in this process (no Spark job)."""
    from tidelog.spark.options import parse_sink_options, parse_source_options
    from tidelog.spark.reader import TidelogBatchReader, read_range
    from tidelog.spark.schema import source_schema
    from tidelog.spark.writer import write_batches

    options = parse_source_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic}, streaming=False)
    part = TidelogBatchReader(options, source_schema(False)).partitions()[0]
    profile = cProfile.Profile()
    profile.enable()
    rows = sum(b.num_rows for b in read_range(part))
    profile.disable()
    print(f"\n--- cProfile: read() of partition {part.partition} ({rows:,} rows) ---")
    pstats.Stats(profile).sort_stats("tottime").print_stats(12)

    import pyarrow as pa
    from pyspark.sql.types import BinaryType, StructField, StructType

    create_topic(bootstrap, "bench-profile-write", partitions)
    value = pa.array([b"v" * VALUE_BYTES] * 10_000, pa.binary())
    batches = [pa.RecordBatch.from_arrays([value], names=["value"])] * (records // partitions // 10_000)
    sink_options = parse_sink_options({"kafka.bootstrap.servers": bootstrap, "topic": "bench-profile-write"})
    profile = cProfile.Profile()
    profile.enable()
    written = write_batches(sink_options, StructType([StructField("value", BinaryType())]), iter(batches)).records
    profile.disable()
    print(f"\n--- cProfile: write() of {written:,} rows ---")
    pstats.Stats(profile).sort_stats("tottime").print_stats(12)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=None, help="records per measurement (default 1,000,000)")
    ap.add_argument("--repeats", type=int, default=None, help="rounds per measurement (default 3)")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2, help="Spark local[N]")
    ap.add_argument("--quick", action="store_true", help="100,000 records, 1 round")
    ap.add_argument("--profile", action="store_true", help="also profile the tidelog source's read() and write()")
    args = ap.parse_args()
    records = args.records or (100_000 if args.quick else 1_000_000)
    repeats = args.repeats or (1 if args.quick else 3)
    import pyarrow
    import pyspark

    from tidelog.spark.kafka_connector import kafka_connector_coordinate

    print(f"Python {platform.python_version()}, tidelog {tidelog.__version__}, pyspark {pyspark.__version__}, "
          f"pyarrow {pyarrow.__version__}, confluent-kafka {confluent_kafka.__version__} "
          f"(librdkafka {confluent_kafka.libversion()[0]}), {kafka_connector_coordinate()}, {os.cpu_count()} cpus")
    print(f"{records:,} records of {VALUE_BYTES} bytes, {args.partitions} partitions, local[{args.cores}], "
          f"{repeats} round(s)\n")
    tmp = Path(tempfile.mkdtemp(prefix="tidelog-bench-spark-"))
    rows: list[tuple[str, dict[str, list[float]], list[float], dict[str, list[float]]]] = []
    try:
        with BrokerProcess(tmp / "broker") as broker:
            bootstrap = broker.bootstrap
            create_topic(bootstrap, "bench-read", args.partitions)
            producer_loop(bootstrap, "bench-read", records, args.partitions)
            spark = spark_session(args.cores)
            create_topic(bootstrap, "warm", args.partitions)
            producer_loop(bootstrap, "warm", 1000, args.partitions)
            for fmt in FORMATS:
                batch_read(spark, fmt, bootstrap, "warm")
                streaming_read(spark, fmt, bootstrap, "warm", 1000, tmp / f"ck-warm-{fmt}")
                write(spark, fmt, bootstrap, "warm-out", 1000, args.cores)

            plain_read = [consumer_loop(bootstrap, "bench-read", records, args.partitions) for _ in range(repeats)]
            cpu: dict[str, list[float]] = {}
            rows.append(("batch read -> noop", alternate(
                lambda fmt, _i: batch_read(spark, fmt, bootstrap, "bench-read"), repeats, cpu), plain_read, cpu))
            reading: dict[str, list[float]] = {fmt: [] for fmt in FORMATS}

            def streaming_round(fmt: str, i: int) -> float:
                elapsed, add_batch = streaming_read(spark, fmt, bootstrap, "bench-read", records, tmp / f"ck-{fmt}-{i}")
                reading[fmt].append(add_batch)
                return elapsed

            cpu = {}
            rows.append(("streaming availableNow -> noop", alternate(streaming_round, repeats, cpu), plain_read, cpu))
            rows.append(("  of which micro-batches (addBatch)", reading, plain_read, {}))

            def plain_write(i: int) -> float:
                create_topic(bootstrap, f"bench-producer-{i}", args.partitions)
                return producer_loop(bootstrap, f"bench-producer-{i}", records, args.partitions)

            def spark_write(fmt: str, i: int) -> float:
                topic = f"bench-write-{fmt}-{i}"
                create_topic(bootstrap, topic, args.partitions)
                elapsed = write(spark, fmt, bootstrap, topic, records, args.cores)
                written = end_offsets(bootstrap, topic, args.partitions)
                if written != records:
                    raise RuntimeError(f"{fmt} sink wrote {written} records, expected {records}")
                return elapsed

            cpu = {}
            rows.append(("write", alternate(spark_write, repeats, cpu), [plain_write(i) for i in range(repeats)], cpu))
            if args.profile:
                profile_tidelog(spark, bootstrap, "bench-read", records, args.partitions)
            spark.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def rate(times: list[float]) -> float:
        return records / min(times)

    def median(times: list[float]) -> float:
        return records / statistics.median(times)

    def cpu_per_million(seconds: list[float]) -> str:
        return f"{statistics.median(seconds) * 1_000_000 / records:.1f}" if seconds else ""

    print(f"\n{'what':<36} {'tidelog rows/s':>15} {'(median)':>10} {'kafka rows/s':>13} {'(median)':>10} "
          f"{'tidelog/kafka':>14} {'plain client':>13} {'CPU s/1M rows tidelog':>22} {'kafka':>6}")
    for name, times, plain, cpu in rows:
        print(f"{name:<36} {rate(times['tidelog']):>15,.0f} {median(times['tidelog']):>10,.0f} "
              f"{rate(times['kafka']):>13,.0f} {median(times['kafka']):>10,.0f} "
              f"{rate(times['tidelog']) / rate(times['kafka']):>13.2f}x {rate(plain):>13,.0f} "
              f"{cpu_per_million(cpu.get('tidelog', [])):>22} {cpu_per_million(cpu.get('kafka', [])):>6}")
    print("\nrows/s: best round (median beside); tidelog/kafka: ratio of the best rounds; CPU: median over the "
          "rounds of the CPU seconds of every process involved (driver, JVM, Python workers, broker)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
