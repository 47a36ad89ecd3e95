"""The example pipeline (examples/clickstream): generator -> Tidelog -> Spark job -> Tidelog topic + Parquet."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from .conftest import consume_all

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "clickstream"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"clickstream_{name}", EXAMPLE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_clickstream_example_counts_clicks_per_page_per_minute(spark, spark_broker, tmp_path) -> None:
    generator, job = load("generator"), load("job")
    events = list(generator.clicks(3000, span_minutes=8, seed=7, page_count=6))
    generator.ensure_topic(spark_broker.bootstrap, "clicks", 3)
    assert generator.produce(spark_broker.bootstrap, "clicks", iter(events)) == 3000

    queries = job.start(spark, bootstrap=spark_broker.bootstrap, input_topic="clicks",
                        output_topic="clicks-per-minute", output_dir=tmp_path, available_now=True,
                        max_offsets_per_trigger=1000)
    for q in queries:
        assert q.awaitTermination(180)
        assert q.exception() is None

    def minute(text: str) -> datetime:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).replace(second=0, microsecond=0)

    newest = max(datetime.fromisoformat(e["event_time"].replace("Z", "+00:00")) for e in events)
    watermark = newest - timedelta(minutes=2)
    expected = Counter((minute(e["event_time"]), e["page"]) for e in events)
    parquet = {(r.window_start.replace(tzinfo=UTC), r.page): r.views
               for r in spark.read.parquet(str(tmp_path / "parquet")).collect()}
    # Every window the watermark has closed is reported, with the exact count; open ones are not yet.
    closed = {k: v for k, v in expected.items() if k[0] + timedelta(minutes=1) <= watermark}
    assert len(closed) >= 20
    assert parquet == closed

    records = consume_all(spark_broker.bootstrap, "clicks-per-minute", 1)
    from_topic = {}
    for m in records:
        row = json.loads(m.value())
        assert m.key().decode() == row["page"]
        from_topic[(datetime.fromisoformat(row["window_start"]).astimezone(UTC), row["page"])] = row["views"]
    assert from_topic == closed
