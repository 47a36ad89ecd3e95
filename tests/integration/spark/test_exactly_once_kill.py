"""The exactly-once sink under SIGKILL: a streaming query copies a Tidelog topic into another with
``exactlyOnce=true``; its Spark job (driver, JVM, Python workers) is killed at random points, several times,
and restarted from its checkpoint while more input arrives; a last run with ``availableNow`` finishes the
copy. A read_committed consumer of the output must then see every input record exactly once.

Each kill picks one of two ways: SIGKILL of the whole job (driver, JVM and Python workers at once), or SIGKILL
of the Python driver alone, which leaves the JVM to exit on its own and its Python workers to finish
whatever they were doing (zombies the restarted job's tasks must fence). Kills land at a random time
after the job planned a new micro-batch. The seed is printed; ``TIDELOG_SPARK_EOS_SEED`` replays one.
Default (CI): 2 kills, the first of the whole job and the second of the driver alone, so that every run has
both; three Spark job starts (about 2.5 minutes on the 2-core VM at a load average of 5 to 7 from other work,
where 3 kills took 3.9; each start of a Spark job is most of it). ``TIDELOG_SPARK_EOS_SOAK=<kills>`` for a
longer run, the way of each kill after the first two drawn at random (6 kills: 5.3 minutes).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from .conftest import SPARK_BROKER_OVERRIDES, _java_home, create_topic, produce
from .test_exactly_once import read

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

BROKER_OVERRIDES = SPARK_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)

JOB = Path(__file__).with_name("exactly_once_job.py")
PARTITIONS = 3


def _batches_planned(checkpoint: Path) -> int:
    offsets = checkpoint / "offsets"
    return len([p for p in offsets.iterdir() if p.name.isdigit()]) if offsets.exists() else 0


def _batches_committed(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def _log_end(bootstrap: str, topic: str) -> int:
    """The sum of the topic's end offsets: it grows as soon as a task's records are appended."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-kill-watch"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in range(PARTITIONS))
    finally:
        c.close()


def _shares_ahead_of_spark(bootstrap: str, checkpoint: Path) -> int:
    """How many write tasks have committed (marker) a micro-batch that Spark's commit log does not have yet:
    Spark replays that batch on restart, and an at-least-once sink would write those shares twice."""
    from tidelog.spark.exactly_once import DEFAULT_PREFIX, committed_markers, next_batch, transactional_id
    from tidelog.spark.options import parse_sink_options

    metadata = checkpoint / "metadata"
    if not metadata.exists():
        return 0
    query = json.loads(metadata.read_text())["id"]
    options = parse_sink_options({"kafka.bootstrap.servers": bootstrap, "exactlyOnce": "true"})
    committed = _batches_committed(checkpoint)
    groups = [transactional_id(DEFAULT_PREFIX + query, p) for p in range(PARTITIONS)]
    return sum(1 for g in groups if next_batch(committed_markers(options, g)) > committed)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Job:
    """One run of exactly_once_job.py in its own process group (so that everything it started can be killed)."""

    def __init__(self, args: list[str], log: Path) -> None:
        env = {**os.environ, "JAVA_HOME": _java_home() or ""}
        self.log = log.open("ab")
        self.proc = subprocess.Popen([sys.executable, str(JOB), *args], stdout=self.log, stderr=self.log,
                                     env=env, start_new_session=True)
        self.pgid = self.proc.pid  # the session leader's pid is the group id

    def kill(self, whole_job: bool) -> None:
        if whole_job:
            _kill_group(self.pgid)
        else:
            self.proc.send_signal(signal.SIGKILL)  # the driver alone; the JVM exits when its stdin closes
        self.proc.wait(30)
        deadline = time.monotonic() + 30
        while _group_alive(self.pgid) and time.monotonic() < deadline:
            time.sleep(0.2)  # left-over Python workers finish (or fail) the task they had
        _kill_group(self.pgid)
        deadline = time.monotonic() + 10
        while _group_alive(self.pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.log.close()


def test_killed_and_restarted_the_query_writes_every_record_once(broker, topic_name, tmp_path) -> None:
    java_home = _java_home()
    from tests import toolchain

    toolchain.require("java", java_home is not None, "no Java runtime (JAVA_HOME or java on PATH) for Spark")
    kills = int(os.environ.get("TIDELOG_SPARK_EOS_SOAK", "2"))
    seed = int(os.environ.get("TIDELOG_SPARK_EOS_SEED", str(random.randrange(1 << 30))))
    print(f"TIDELOG_SPARK_EOS_SEED={seed}")
    rng = random.Random(seed)
    bootstrap = broker.bootstrap
    source, sink = topic_name("eos-in"), topic_name("eos-out")
    create_topic(bootstrap, source, PARTITIONS)
    create_topic(bootstrap, sink, PARTITIONS)
    expected: list[str] = []
    produced = [0] * PARTITIONS

    def add_input(per_partition: int) -> None:
        for p in range(PARTITIONS):
            values = [f"p{p}-{produced[p] + i}" for i in range(per_partition)]
            produce(bootstrap, source, [v.encode() for v in values], partition=p, key=b"k%d" % p)
            expected.extend(f"{v}@{produced[p] + i}" for i, v in enumerate(values))
            produced[p] += per_partition

    checkpoint, log = tmp_path / "checkpoint", tmp_path / "job.log"
    args = ["--bootstrap", bootstrap, "--source", source, "--sink", sink, "--checkpoint", str(checkpoint), "--max-offsets", "240"]
    add_input(300)
    started = time.monotonic()
    replayed_shares = 0
    for kill in range(kills):
        planned = _batches_planned(checkpoint)
        job = Job(args, log)
        deadline = time.monotonic() + 120
        while _batches_planned(checkpoint) <= planned and job.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert job.proc.poll() is None, f"the job ended by itself (exit {job.proc.returncode}); see {log}"
        assert _batches_planned(checkpoint) > planned, f"no micro-batch planned within 120 s; see {log}"
        if rng.random() < 0.5:
            when = "while its tasks write"  # output moving: transactions open, committing or just committed
            written = _log_end(bootstrap, sink)
            deadline = time.monotonic() + 60
            while _log_end(bootstrap, sink) == written and time.monotonic() < deadline:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.3))
        else:
            when = "at a random time"
            time.sleep(rng.uniform(0.0, 3.0))
        whole_job = rng.random() < 0.5 if kill >= 2 else kill == 0  # both ways in every run
        job.kill(whole_job)
        ahead = _shares_ahead_of_spark(bootstrap, checkpoint)
        replayed_shares += ahead
        print(f"kill {kill + 1} at {time.monotonic() - started:.0f} s: {'whole job' if whole_job else 'driver only'} {when}, after "
              f"{_batches_planned(checkpoint)} planned and {_batches_committed(checkpoint)} committed batches; "
              f"{ahead} task share(s) of an uncommitted batch already written")
        add_input(rng.randrange(50, 150))  # more input arrives while the job is down
    final = Job([*args, "--available-now"], log)
    try:
        assert final.proc.wait(180) == 0, f"the last run failed; see {log}:\n{log.read_text()[-4000:]}"
    finally:
        final.kill(True)
    print(f"{kills} kills, {len(expected)} records, {time.monotonic() - started:.0f} s; {replayed_shares} "
          "already written task share(s) replayed (an at-least-once sink would have written them twice)")

    committed = read(bootstrap, sink, "read_committed", PARTITIONS)
    duplicates = len(committed) - len(set(committed))
    assert duplicates == 0, f"read_committed sees {duplicates} duplicate(s); seed {seed}"
    assert sorted(committed) == sorted(expected), f"seed {seed}"
    uncommitted = read(bootstrap, sink, "read_uncommitted", PARTITIONS)
    assert set(uncommitted) == set(expected)  # aborted records are copies of real ones, never anything else
    print(f"read_uncommitted sees {len(uncommitted) - len(expected)} aborted record(s) besides them")
