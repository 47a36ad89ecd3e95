"""``tidelog transactions`` against a real broker, run as ``python -m tidelog`` subprocesses: list,
describe, describe-producers, and recovering from a hanging transaction with find-hanging and abort.
What the commands print is checked against state read independently (a confluent-kafka transactional
producer and consumer, Tidelog's test wire client)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tidelog.protocol.messages import CreateTopicsRequest, InitProducerIdRequest, ProduceRequest
from tidelog.records import RecordBatchBuilder
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = pytest.mark.integration
TOPIC = "cli-txn"


# Verification off: a write can open a transaction its coordinator does not know (a hanging one).
BROKER_OVERRIDES = {"transaction.partition.verification.enable": "false"}


def on_broker_started(b: BrokerProcess) -> None:
    with WireClient.connect(b.bootstrap) as c:
        topic = CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=2, replication_factor=1)
        assert c.request(CreateTopicsRequest(topics=[topic], timeout_ms=5000), 5).topics[0].error_code == 0


def tidelog(b: BrokerProcess | None, *args: str) -> subprocess.CompletedProcess[str]:
    bootstrap = ["--bootstrap-server", b.bootstrap] if b is not None else ["--bootstrap-server", "127.0.0.1:1"]
    return subprocess.run([sys.executable, "-m", "tidelog", "transactions", *args, *bootstrap],
                          capture_output=True, text=True, timeout=60)


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()[1:] if line.strip()]


def last_stable_offset(b: BrokerProcess, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "lso", "isolation.level": "read_committed"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=10)[1]
    finally:
        consumer.close()


def test_list_describe_and_describe_producers_of_an_open_transaction(broker: BrokerProcess) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "cli-open"})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce(TOPIC, b"x", partition=1)
    p.flush(10)
    listed = rows(tidelog(broker, "list").stdout)
    assert ["cli-open", "0", listed[0][2], "Ongoing"] in listed
    pid = next(r[2] for r in listed if r[0] == "cli-open")
    assert rows(tidelog(broker, "list", "--state", "CompleteCommit").stdout) == []
    (described,) = rows(tidelog(broker, "describe", "--transactional-id", "cli-open").stdout)
    assert described[:6] == ["0", "cli-open", pid, "0", "Ongoing", "60000"] and described[-1] == f"{TOPIC}-1"
    (state,) = rows(tidelog(broker, "describe-producers", "--topic", TOPIC, "--partition", "1").stdout)
    assert state[0] == pid and state[5] == "0"  # its transaction starts at offset 0
    assert rows(tidelog(broker, "find-hanging", "--topic", TOPIC, "--max-transaction-timeout", "0").stdout) == []
    p.commit_transaction(10)
    assert rows(tidelog(broker, "list", "--producer-id", pid).stdout)[0][3] == "CompleteCommit"
    missing = tidelog(broker, "describe", "--transactional-id", "no-such-id")
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_find_and_abort_a_hanging_transaction(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as c:
        r = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4)
        # A transactional batch of a producer no coordinator knows, written five minutes "ago".
        builder = RecordBatchBuilder(producer_id=r.producer_id, producer_epoch=r.producer_epoch, base_sequence=0,
                                     is_transactional=True)
        builder.append(int(time.time() * 1000) - 300_000, b"k", b"hanging")
        produce = ProduceRequest(transactional_id="cli-ghost", acks=-1, timeout_ms=5000, topic_data=[
            ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=builder.build())])])
        assert c.request(produce, 9).responses[0].partition_responses[0].error_code == 0
    assert last_stable_offset(broker, 0) == 0  # read_committed readers are stuck before it
    found = rows(tidelog(broker, "find-hanging", "--topic", TOPIC, "--max-transaction-timeout", "1").stdout)
    assert [[*row[:3], row[5]] for row in found] == [[TOPIC, "0", str(r.producer_id), "0"]]
    assert int(found[0][7]) >= 4  # minutes open
    assert rows(tidelog(broker, "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "10").stdout) == []
    aborted = tidelog(broker, "abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "0")
    assert aborted.returncode == 0, aborted.stderr
    assert last_stable_offset(broker, 0) == 2  # the data and the ABORT marker
    assert rows(tidelog(broker, "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "1").stdout) == []
    again = tidelog(broker, "abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "0")
    assert again.returncode == 1 and "no open transaction starts at offset 0" in again.stderr


@pytest.mark.parametrize("args", [
    ["find-hanging"],
    ["find-hanging", "--partition", "0"],
    ["abort", "--topic", TOPIC, "--partition", "0"],
    ["abort", "--topic", TOPIC, "--partition", "0", "--producer-id", "5"],
    ["describe"],
])
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = tidelog(None, *args)
    assert result.returncode == 2 and "error:" in result.stderr and "Traceback" not in result.stderr


def test_an_unreachable_broker_is_one_line_and_exit_1() -> None:
    result = tidelog(None, "list")
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "cannot reach" in result.stderr
