"""The benchmark scripts keep working as the code under them changes (they are not run by tests
otherwise): the null broker serves real clients, and the codec benchmark completes its smoke run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def null_broker(tmp_path: Path):
    proc = subprocess.Popen([sys.executable, str(BENCH / "null_broker.py"), "--data-dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        m = re.search(r"listening on (\S+:\d+)", line)
        assert m, f"null broker did not start: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"  # type: ignore[union-attr]
        yield m.group(1)
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_null_broker_serves_a_real_producer_and_consumer(null_broker: str) -> None:
    producer = Producer({"bootstrap.servers": null_broker, "linger.ms": 1})
    for i in range(100):
        producer.produce("bench-smoke", value=b"v%d" % i)
    assert producer.flush(15) == 0
    consumer = Consumer({"bootstrap.servers": null_broker, "group.id": "bench-smoke",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("bench-smoke", 0, 0)])
    values = []
    for _ in range(100):
        for message in consumer.consume(100, 0.5):
            assert message.error() is None, message.error()
            values.append(message.value())
        if len(values) >= 100:
            break
    consumer.close()
    assert values == [b"v%d" % i for i in range(100)]


def test_the_codec_benchmark_runs() -> None:
    done = subprocess.run([sys.executable, str(BENCH / "codec.py"), "--quick"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "tidelog decode" in done.stdout


def test_the_metrics_cost_benchmark_runs_its_in_process_path() -> None:
    done = subprocess.run([sys.executable, str(BENCH / "metrics_cost.py"), "--workloads", "path-10,path-1000",
                           "--rounds", "2", "--path-requests", "50"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"path-10 +paired +\d", done.stdout), done.stdout[-2000:]
    assert re.search(r"path-1000 +paired +\d", done.stdout), done.stdout[-2000:]


@pytest.mark.xdist_group("cluster")
def test_the_cluster_benchmark_runs_its_quick_tidelog_part() -> None:
    """bench/cluster.py --quick on three Tidelog brokers only (ZooKeeper needs java and mvn), with fewer
    records and bytes to catch up: every phase prints its figures. About 30 s (a minute at load 10)."""
    from tests import toolchain

    toolchain.require_command("java+maven", "java", "mvn")
    done = subprocess.run([sys.executable, str(BENCH / "cluster.py"), "--quick", "--targets", "tidelog",
                           "--records", "5000", "--catch-up-bytes", "8MiB", "--failover-timeout", "30"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for workload in ("RF=1", "RF=3 acks=1", "RF=3 acks=all"):
        # produce rec/s (median) MB/s, consume rec/s (median) MB/s: every figure there, no error column
        assert re.search(rf"^{re.escape(workload)} +tidelog +[\d,]+ +\([\d,]+\) +[\d.]+ +[\d,]+ +\([\d,]+\) +[\d.]+$",
                         out, re.M), out[-3000:]
    assert re.search(r"^tidelog, session 4000 ms +1 +[\d.]+ \([\d.]+-[\d.]+\) +[\d.]+ \([\d.]+-[\d.]+\)$", out, re.M), \
        out[-3000:]
    # runs, missed MiB, serving s, in ISR s (median (min-max)), catch-up MB/s, CPU s of the brokers (Linux)
    span = r"[\d.]+ \([\d.]+-[\d.]+\)"
    assert re.search(rf"^tidelog +1 +8 +{span} +{span} +[\d.]+ +{span} +{span}$", out, re.M), out[-3000:]


@pytest.mark.xdist_group("cluster")
def test_the_cluster_benchmark_alternates_recovery_runs_with_the_baseline() -> None:
    """bench/cluster.py --baseline: the baseline's lines are labelled tidelog-baseline (not tidelog), and
    the recovery runs of the two clusters alternate (ABBA), both up at once. The baseline here is this
    tree's own src. About a minute (two minutes at load 10)."""
    from tests import toolchain

    toolchain.require_command("java+maven", "java", "mvn")
    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run([sys.executable, str(BENCH / "cluster.py"), "--quick", "--targets", "tidelog",
                           "--baseline", str(src), "--phases", "recovery", "--catch-up-bytes", "4MiB",
                           "--recovery-runs", "2"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    runs = re.findall(r"^  (tidelog|tidelog-baseline) +recovery run (\d):", out, re.M)
    assert runs == [("tidelog", "1"), ("tidelog-baseline", "1"), ("tidelog-baseline", "2"), ("tidelog", "2")], \
        out[-3000:]
    span = r"[\d.]+ \([\d.]+-[\d.]+\)"
    for target in ("tidelog", "tidelog-baseline"):
        assert re.search(rf"^{target} +2 +4 +{span} +{span} +[\d.]+ +{span} +{span}$", out, re.M), out[-3000:]
    assert re.search(r"^tidelog / tidelog-baseline \(medians.*\): serving [\d.]+, in ISR [\d.]+, "
                     r"CPU restarted [\d.]+, CPU others [\d.]+$", out, re.M), out[-3000:]


def test_the_startup_benchmark_runs_both_modes() -> None:
    done = subprocess.run([sys.executable, str(BENCH / "startup.py"), "--quick"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {line.split("  ")[0].strip(): line.split()[-3:] for line in done.stdout.splitlines()
            if line.startswith("tidelog.Broker()")}
    assert set(rows) == {"tidelog.Broker() thread", "tidelog.Broker() subprocess"}, done.stdout
    assert all(float(seconds) > 0 and float(rss) > 0 for seconds, _cpu, rss in rows.values()), done.stdout


def test_the_share_groups_benchmark_runs_its_tidelog_part() -> None:
    """bench/share_groups.py on Tidelog only (Kafka needs java and mvn), 2,000 records: every consumer count
    and the redelivery after a 15 s lock print their figures. About 60 s (the lock expiry is 15 of them)."""
    done = subprocess.run([sys.executable, str(BENCH / "share_groups.py"), "--quick", "--targets", "tidelog",
                           "--records", "2000", "--no-warmup"], capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for count in (1, 2, 4):
        assert re.search(rf"^ +{count} +[\d,]+ +\S+ +[\d,]+$", out, re.M), out[-3000:]
    m = re.search(r"^tidelog +[\d.]+ +([\d.]+) +([\d.]+)$", out, re.M)
    assert m, out[-3000:]
    assert float(m.group(1)) >= 14.0, "redelivered only once the 15 s lock expired"
