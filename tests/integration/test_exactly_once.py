"""Exactly-once under faults: a consume-transform-produce pipeline (tests/integration/eos/app.py) is
killed with SIGKILL, and so is the broker, at random points, many times; then it runs to the end.

A read_committed reader of the output must see every input record exactly once, in order per
partition, and never a record of an aborted transaction (the application aborts every 7th
transaction on purpose, and faults abort more); a read_uncommitted reader sees those aborted records,
as with Kafka. Bounded in the default suite (6 faults, 3 x 100 records, about 40 s);
``TIDELOG_EOS_SOAK=1`` runs 40 faults over 3 x 2000 records.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.integration import kafka_io
from tidelog.testing import BrokerProcess

pytestmark = pytest.mark.integration
SOAK = os.environ.get("TIDELOG_EOS_SOAK") == "1"
PARTITIONS = 3
RECORDS = 2000 if SOAK else 100  # per partition
FAULTS = 40 if SOAK else 6
APP = Path(__file__).parent / "eos" / "app.py"


def produce_input(bootstrap: str) -> None:
    """``{partition}:{i}`` keyed ``i``, in every partition, by an idempotent producer."""
    records = [(i, part) for i in range(RECORDS) for part in range(PARTITIONS)]
    kafka_io.produce(bootstrap, "in", [f"{part}:{i:06d}" for i, part in records], key=[b"%d" % i for i, _ in records],
                     partition=[part for _, part in records], config={"enable.idempotence": True}, timeout=30)


def read(bootstrap: str, isolation: str) -> dict[int, list[bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{isolation}", "isolation.level": isolation,
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition("out", p, 0) for p in range(PARTITIONS)])
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    ended: set[int] = set()
    deadline = time.monotonic() + 60
    while len(ended) < PARTITIONS and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:
                ended.add(m.partition())
            continue
        out[m.partition()].append(m.value())
    consumer.close()
    assert len(ended) == PARTITIONS
    return out


def start_app(bootstrap: str, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(APP), bootstrap, str(PARTITIONS)], stdout=open(log, "a"),
                            stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_exactly_once_through_crashes_of_the_application_and_the_broker(tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("TIDELOG_EOS_SEED", "11")))
    log = tmp_path / "app.log"
    with BrokerProcess(tmp_path / "data") as broker:
        kafka_io.create_topics(broker, timeout=30, **{"in": PARTITIONS, "out": PARTITIONS})
        produce_input(broker.bootstrap)
        kills = {"app": 0, "broker": 0}
        for _ in range(FAULTS):
            app = start_app(broker.bootstrap, log)
            time.sleep(rng.uniform(0.5, 3.0))
            if rng.random() < 0.35:
                broker.kill()  # SIGKILL; the application lives on and must recover
                kills["broker"] += 1
                time.sleep(rng.uniform(0.0, 1.0))
                broker.start()
                time.sleep(rng.uniform(0.5, 2.0))
            stop(app)  # SIGKILL wherever it is: mid-transaction, mid-commit ...
            kills["app"] += 1
        app = start_app(broker.bootstrap, log)
        try:
            app.wait(timeout=240 if SOAK else 120)
        except subprocess.TimeoutExpired:
            stop(app)
            pytest.fail("the pipeline did not finish:\n" + log.read_text()[-3000:])
        assert app.returncode == 0, log.read_text()[-3000:]
        committed = read(broker.bootstrap, "read_committed")
        uncommitted = read(broker.bootstrap, "read_uncommitted")
    text = log.read_text()
    for part in range(PARTITIONS):
        expected = [f"{part}:{i:06d}!".encode() for i in range(RECORDS)]
        assert committed[part] == expected, f"partition {part}: exactly once, in order ({kills}, log tail:\n" \
                                            f"{text[-2000:]})"
        assert set(uncommitted[part]) == set(expected)
    # The aborted transactions' records are in the log, and only read_uncommitted sees them.
    assert sum(map(len, uncommitted.values())) > sum(map(len, committed.values()))
    assert "aborted on purpose" in text and kills["app"] == FAULTS
