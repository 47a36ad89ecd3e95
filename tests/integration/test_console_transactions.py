"""The console's Transactions API (docs/console.md) against a real broker, with a real confluent-kafka
transactional producer: an open transaction is listed and described as Ongoing with the partitions it
wrote, after its commit as CompleteCommit; filters, an unknown id and bad filters get clear answers."""

from __future__ import annotations

import time
import urllib.parse
import uuid

import pytest
from confluent_kafka import Producer

from tests.integration.console_http import call, ok
from tests.integration.kafka_io import create_topic
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("console_transactions")]

TIMEOUT_MS = 45_000


def _listed(broker: BrokerProcess, query: str = "") -> dict[str, dict]:
    return {t["transactional_id"]: t for t in ok(broker, "GET", "/transactions" + query)["transactions"]}


def test_an_open_transaction_is_ongoing_with_its_partitions_then_complete_commit(broker):
    topic, txn_id = f"txn-{uuid.uuid4().hex[:8]}", f"console txn/{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, partitions=3)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": TIMEOUT_MS})
    producer.init_transactions(20)
    listed = _listed(broker)[txn_id]
    assert listed["state"] == "Empty" and listed["producer_id"] >= 0
    before = int(time.time() * 1000)
    producer.begin_transaction()
    producer.produce(topic, b"a", partition=2)
    producer.produce(topic, b"b", partition=0)
    assert producer.flush(10) == 0
    after = int(time.time() * 1000)

    path = "/transactions/" + urllib.parse.quote(txn_id, safe="")
    described = ok(broker, "GET", path)
    assert described["transactional_id"] == txn_id and described["state"] == "Ongoing"
    assert described["producer_id"] == listed["producer_id"] and described["producer_epoch"] >= 0
    assert described["timeout_ms"] == TIMEOUT_MS
    assert before - 1000 <= described["start_time"] <= after + 1000
    assert described["partitions"] == [{"topic": topic, "partition": 0}, {"topic": topic, "partition": 2}]
    assert _listed(broker)[txn_id]["state"] == "Ongoing"
    assert txn_id in _listed(broker, "?state=Ongoing")
    assert txn_id not in _listed(broker, "?state=CompleteCommit")
    assert list(_listed(broker, f"?producer_id={listed['producer_id']}")) == [txn_id]
    assert txn_id not in _listed(broker, f"?producer_id={listed['producer_id'] + 1000}")
    assert list(_listed(broker, f"?state=Ongoing&producer_id={listed['producer_id']}")) == [txn_id]

    producer.commit_transaction(20)
    described = ok(broker, "GET", path)
    assert described["state"] == "CompleteCommit" and described["partitions"] == []
    assert described["producer_id"] == listed["producer_id"]
    assert _listed(broker, "?state=CompleteCommit")[txn_id]["state"] == "CompleteCommit"
    assert txn_id not in _listed(broker, "?state=Ongoing")


def test_an_unknown_transactional_id_is_404_with_kafkas_error_name(broker):
    status, answer = call(broker, "GET", "/transactions/no-such-transactional-id")
    assert status == 404 and answer["code"] == "TRANSACTIONAL_ID_NOT_FOUND"
    assert "no-such-transactional-id" in answer["error"]


@pytest.mark.parametrize(("query", "named"), [
    ("state=Running", "state"), ("state=ongoing", "state"), ("producer_id=abc", "producer_id"),
    ("producer_id=-1", "producer_id"), ("producer_id=99999999999999999999", "producer_id"),
])
def test_a_bad_filter_is_a_400_that_names_it(broker, query, named):
    status, answer = call(broker, "GET", "/transactions?" + query)
    assert status == 400 and answer["code"] == "INVALID_REQUEST" and answer["error"].startswith(named), answer
