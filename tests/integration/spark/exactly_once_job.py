"""A Spark job for tests/integration/spark/test_exactly_once_kill.py: copy one Tidelog topic into another with
the exactly-once sink, from a checkpoint, until killed (or, with --available-now, until it has copied what
is there, then exit 0). Run with the project's Python; it is killed with SIGKILL at random points."""

from __future__ import annotations

import argparse
import os
import sys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--sink", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--max-offsets", type=int, default=60, help="maxOffsetsPerTrigger")
    parser.add_argument("--available-now", action="store_true")
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("tidelog-exactly-once-kill")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.host", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    records = (spark.readStream.format("tidelog").option("kafka.bootstrap.servers", args.bootstrap)
               .option("subscribe", args.source).option("startingOffsets", "earliest")
               .option("maxOffsetsPerTrigger", str(args.max_offsets)).load())
    writer = (records.selectExpr("key", "concat(cast(value as string), '@', cast(offset as string)) as value")
              .writeStream.format("tidelog").option("kafka.bootstrap.servers", args.bootstrap)
              .option("topic", args.sink).option("exactlyOnce", "true")
              .option("checkpointLocation", args.checkpoint))
    if args.available_now:
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    print(f"started query {query.id}", flush=True)
    query.awaitTermination()
    if query.exception() is not None:
        print(f"query failed: {query.exception()}", file=sys.stderr, flush=True)
        sys.exit(1)
    spark.stop()


if __name__ == "__main__":
    main()
