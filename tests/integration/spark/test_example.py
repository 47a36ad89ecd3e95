"""The example pipeline (examples/clickstream): generator -> Tidelog -> Spark job -> Tidelog topic + Parquet.

Besides the pipeline's results, what a first run from the README depends on: the example's topics are
its own (not the quick start's ``clicks``), what it writes into the checkout is git-ignored, and it says
how many records it read and where it wrote them.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from .conftest import SPARK_BROKER_OVERRIDES, consume_all

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

BROKER_OVERRIDES = SPARK_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "clickstream"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"clickstream_{name}", EXAMPLE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def quick_start_topics() -> set[str]:
    """Topics the README's "Using it" section and the CLI guide's examples use."""
    readme = (ROOT / "README.md").read_text()
    using_it = readme.split("## Using it", 1)[1].split("\n## ", 1)[0]
    text = using_it + (ROOT / "docs" / "cli.md").read_text()
    name = r"([A-Za-z0-9._-]+)"
    found = set(re.findall(rf'\.produce\(\s*"{name}"', text))
    found |= set(re.findall(rf'"(?:subscribe|topic)",\s*"{name}"', text))
    found |= set(re.findall(rf"tidelog (?:produce|consume|topics (?:create|describe|alter|trim|delete|alter-config))"
                            rf" (?:--topic )?{name}", text))
    return {t for t in found if not t.startswith("-")}


def documented_runs(script: str) -> list[list[str]]:
    """The arguments of every documented command line that runs examples/clickstream/<script>.py."""
    runs = []
    for doc in (ROOT / "README.md", ROOT / "docs" / "spark.md"):
        for line in doc.read_text().splitlines():
            match = re.search(rf"python\S* examples/clickstream/{script}\.py([^#]*)", line)
            if match:
                runs.append(shlex.split(match.group(1)))
    return runs


def test_the_examples_topics_are_its_own() -> None:
    generator, job = load("generator"), load("job")
    taken = quick_start_topics()
    assert "clicks" in taken and len(taken) >= 3  # the parsing above finds the quick start's topics
    produced = {generator.parser().parse_args(argv).topic for argv in [*documented_runs("generator"), []]}
    jobs = [job.parser().parse_args(argv) for argv in [*documented_runs("job"), []]]
    read, written = {a.input_topic for a in jobs}, {a.output_topic for a in jobs}
    assert len(documented_runs("generator")) >= 2 and len(documented_runs("job")) >= 2
    assert produced == read == {"clickstream-clicks"}  # the job reads what the generator writes
    assert not (produced | read | written) & taken


def test_the_examples_outputs_are_git_ignored(tmp_path) -> None:
    job = load("job")
    output_dir = job.parser().parse_args([]).output_dir
    assert output_dir.is_absolute() and output_dir.is_relative_to(EXAMPLE)  # wherever it is run from
    written = [output_dir / "parquet" / "part-00000-x.snappy.parquet", output_dir / "parquet" / "_spark_metadata" / "0",
               output_dir / "checkpoints" / "tidelog" / "offsets" / "0", output_dir / "checkpoints" / "parquet" / "commits" / "0"]
    if subprocess.run(["git", "rev-parse", "--git-dir"], cwd=ROOT, capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    done = subprocess.run(["git", "check-ignore", "--no-index", "--verbose", *map(str, written)], cwd=ROOT,
                          capture_output=True, text=True)
    ignored = {line.split("\t", 1)[1] for line in done.stdout.splitlines()}
    assert ignored == set(map(str, written))


def test_clickstream_example_counts_clicks_per_page_per_minute(spark, broker, tmp_path, capsys) -> None:
    generator, job = load("generator"), load("job")
    events = list(generator.clicks(3000, span_minutes=8, seed=7, page_count=6))
    generator.ensure_topic(broker.bootstrap, job.INPUT_TOPIC, 3)
    assert generator.produce(broker.bootstrap, job.INPUT_TOPIC, iter(events)) == 3000

    args = job.parser().parse_args(["--bootstrap-server", broker.bootstrap, "--output-dir", str(tmp_path),
                                    "--available-now", "--max-offsets-per-trigger", "1000"])
    counts = job.run(spark, args)
    printed = capsys.readouterr().out

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

    records = consume_all(broker.bootstrap, job.OUTPUT_TOPIC, 1)
    from_topic = {}
    for m in records:
        row = json.loads(m.value())
        assert m.key().decode() == row["page"]
        from_topic[(datetime.fromisoformat(row["window_start"]).astimezone(UTC), row["page"])] = row["views"]
    assert from_topic == closed

    # What it read and where it wrote, as printed.
    assert counts == {"clicks_to_tidelog": (3000, len(closed)), "clicks_to_parquet": (3000, 0)}
    assert (f"clicks_to_tidelog: read 3000 records from topic 'clickstream-clicks', wrote {len(closed)} finished "
            f"windows to topic 'clickstream-views-per-minute' at {broker.bootstrap}") in printed
    assert (f"clicks_to_parquet: read 3000 records from topic 'clickstream-clicks', wrote finished windows to "
            f"{tmp_path.resolve() / 'parquet'} ({len(closed)} there in all)") in printed
    assert f"checkpoints: {tmp_path.resolve() / 'checkpoints'}" in printed
