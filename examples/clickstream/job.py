"""Clicks per page per minute: a Spark Structured Streaming job on Tidelog.

Reads the click stream the generator writes (topic ``clickstream-clicks``), counts page views per page in
one-minute event-time windows with a two-minute watermark (clicks up to two minutes late still count),
and writes every finished window both back to Tidelog (topic ``clickstream-views-per-minute``, one JSON
record per window and page, keyed by page) and to Parquet files (``examples/clickstream/out/parquet``).
Each sink is its own streaming query with its own checkpoint under ``examples/clickstream/out/checkpoints``
(the ``out`` directory is git-ignored): stop the job at any time and start it again, and it carries on
where it stopped. When it ends it prints how many records each query read and where it wrote.

    python examples/clickstream/job.py                     # runs until Ctrl-C
    python examples/clickstream/job.py --available-now     # processes what is there, then exits

The only thing that differs from the same job on Spark's Kafka connector is ``format("tidelog")``.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections import Counter
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery, StreamingQueryListener
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

import tidelog.spark

#: The example's own topics and output directory (not those of the README's quick start).
INPUT_TOPIC = "clickstream-clicks"
OUTPUT_TOPIC = "clickstream-views-per-minute"
OUTPUT_DIR = Path(__file__).resolve().parent / "out"

CLICK = StructType([
    StructField("user_id", StringType()),
    StructField("page", StringType()),
    StructField("referrer", StringType()),
    StructField("event_time", TimestampType()),
])
WATERMARK = "2 minutes"
WINDOW = "1 minute"


def clicks_per_minute(spark: SparkSession, bootstrap: str, topic: str, starting_offsets: str = "earliest",
                      max_offsets_per_trigger: int | None = None) -> DataFrame:
    """The aggregated stream: one row per (window, page) once the watermark has passed the window."""
    reader = (spark.readStream.format("tidelog")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic)
              .option("startingOffsets", starting_offsets))
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", max_offsets_per_trigger)
    clicks = (reader.load()
              .select(F.from_json(F.col("value").cast("string"), CLICK).alias("click"))
              .select("click.*")
              .where(F.col("event_time").isNotNull()))
    return (clicks.withWatermark("event_time", WATERMARK)
            .groupBy(F.window("event_time", WINDOW).alias("window"), "page")
            .agg(F.count("*").alias("views"), F.approx_count_distinct("user_id").alias("approx_users"))
            .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    "page", "views", "approx_users"))


def start(spark: SparkSession, *, bootstrap: str, input_topic: str, output_topic: str, output_dir: Path,
          available_now: bool = False, starting_offsets: str = "earliest",
          max_offsets_per_trigger: int | None = None) -> list[StreamingQuery]:
    """Start the two sink queries (Tidelog topic and Parquet)."""
    counts = clicks_per_minute(spark, bootstrap, input_topic, starting_offsets, max_offsets_per_trigger)
    checkpoints = output_dir / "checkpoints"

    def trigger(writer):
        return writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="5 seconds")

    to_tidelog = (counts.select(F.col("page").alias("key"),
                                F.to_json(F.struct("window_start", "window_end", "page", "views", "approx_users"))
                                .alias("value"))
                  .writeStream.format("tidelog")
                  .option("kafka.bootstrap.servers", bootstrap)
                  .option("topic", output_topic)
                  .option("checkpointLocation", str(checkpoints / "tidelog"))
                  .outputMode("append"))
    to_parquet = (counts.writeStream.format("parquet")
                  .option("path", str(output_dir / "parquet"))
                  .option("checkpointLocation", str(checkpoints / "parquet"))
                  .outputMode("append"))
    return [trigger(to_tidelog).queryName("clicks_to_tidelog").start(),
            trigger(to_parquet).queryName("clicks_to_parquet").start()]


class Tally(StreamingQueryListener):
    """Records read and rows written per query, summed over every micro-batch of this run."""

    def __init__(self) -> None:
        self.read: Counter[str] = Counter()
        self.written: Counter[str] = Counter()
        self.ended: set[str] = set()
        self.changed = threading.Condition()

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        progress = event.progress
        with self.changed:
            self.read[progress.name] += progress.numInputRows
            self.written[progress.name] += max(progress.sink.numOutputRows, 0)  # -1: the sink does not count

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        with self.changed:
            self.ended.add(str(event.id))
            self.changed.notify_all()

    def wait_for(self, queries: list[StreamingQuery], timeout_s: float = 30.0) -> None:
        """Spark delivers the last progress events after the queries stop: wait for their end events."""
        with self.changed:
            self.changed.wait_for(lambda: {str(q.id) for q in queries} <= self.ended, timeout_s)


def session(master: str) -> SparkSession:
    # Spark's Python workers must import tidelog: run them on this interpreter (the project's venv). Only
    # the environment variable reaches them; register() checks it and says what to fix if it is wrong.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(master).appName("tidelog-clickstream")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")  # not WARN: register() replacing the auto-registered source warns
    tidelog.spark.register(spark)
    return spark


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap-server", default="localhost:9092")
    p.add_argument("--input-topic", default=INPUT_TOPIC)
    p.add_argument("--output-topic", default=OUTPUT_TOPIC)
    p.add_argument("--output-dir", type=Path, default=OUTPUT_DIR, help="Parquet files and checkpoints")
    p.add_argument("--starting-offsets", default="earliest", help="for a new job only")
    p.add_argument("--max-offsets-per-trigger", type=int, default=None)
    p.add_argument("--available-now", action="store_true", help="process what is there, then exit")
    p.add_argument("--master", default="local[*]")
    return p


def run(spark: SparkSession, args: argparse.Namespace) -> dict[str, tuple[int, int]]:
    """Run both queries until they end (or Ctrl-C), print what they did; returns {query: (read, written)}."""
    output_dir = args.output_dir.resolve()
    tally = Tally()
    spark.streams.addListener(tally)
    try:
        queries = start(spark, bootstrap=args.bootstrap_server, input_topic=args.input_topic,
                        output_topic=args.output_topic, output_dir=output_dir, available_now=args.available_now,
                        starting_offsets=args.starting_offsets, max_offsets_per_trigger=args.max_offsets_per_trigger)
        try:
            for q in queries:
                q.awaitTermination()
        except KeyboardInterrupt:
            for q in queries:
                q.stop()
        tally.wait_for(queries)
    finally:
        spark.streams.removeListener(tally)
    parquet = output_dir / "parquet"
    stored = spark.read.parquet(str(parquet)).count() if parquet.exists() else 0
    print(f"clicks_to_tidelog: read {tally.read['clicks_to_tidelog']} records from topic '{args.input_topic}', "
          f"wrote {tally.written['clicks_to_tidelog']} finished windows to topic '{args.output_topic}' "
          f"at {args.bootstrap_server}")
    print(f"clicks_to_parquet: read {tally.read['clicks_to_parquet']} records from topic '{args.input_topic}', "
          f"wrote finished windows to {parquet} ({stored} there in all)")
    print(f"checkpoints: {output_dir / 'checkpoints'} (delete {output_dir} to start again from the beginning)")
    if stored:
        latest = spark.read.parquet(str(parquet)).orderBy(F.desc("window_start"), F.desc("views")).limit(10)
        print("latest finished windows (most viewed first):")
        latest.show(truncate=False)
    return {name: (tally.read[name], tally.written[name]) for name in ("clicks_to_tidelog", "clicks_to_parquet")}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    spark = session(args.master)
    try:
        run(spark, args)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
