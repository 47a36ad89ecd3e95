"""What the console shows of ordinary data written by a real client (confluent-kafka): values Python's JSON
parser takes but JSON has not (NaN, Infinity), integers beyond JavaScript's 2^53, JSON header values; a
topic's partitions merged by timestamp; search by key, value and header over a bounded scan; the live
tail's cursor; the cluster id; and the lag sampler under an authorizer (a broker of its own, ~5 s)."""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.integration.console_http import add_user, call, ok
from tests.integration.kafka_io import create_topic, produce_all, producer, wait_for
from tests.integration.test_console_login import Http
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("console_data")]

BROKER_OVERRIDES = {"console.sample.interval.ms": "300"}
BIG = 2**53 + 1  # the first integer a JavaScript number cannot hold


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _refuse(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def strict(broker: BrokerProcess, path: str) -> Any:
    """GET an API path and parse the answer as strict JSON (as a browser's JSON.parse does): NaN,
    Infinity and -Infinity refused."""
    assert broker.http_url is not None
    with urllib.request.urlopen(broker.http_url + "api/v1" + path, timeout=30) as r:  # an error status raises
        return json.loads(r.read(), parse_constant=_refuse)


def _write(broker: BrokerProcess, topic: str, records: list[dict]) -> None:
    reports = produce_all(producer(broker), topic, records)
    assert [err for err, _ in reports if err is not None] == []


def _topic(broker: BrokerProcess, partitions: int = 1) -> str:
    name = _name("data")
    create_topic(broker.bootstrap, name, partitions=partitions)
    return name


def _messages(broker: BrokerProcess, topic: str, **query: Any) -> dict:
    return strict(broker, f"/topics/{topic}/messages?{urllib.parse.urlencode(query)}")


# -------------------------------------------------------------------------------------- rendering


def test_nan_and_infinity_values_are_shown_as_text_in_valid_json(broker):
    """Python's json.loads takes NaN and Infinity; the API used to send them back as bare NaN, which no
    JSON parser takes, and the whole page of messages failed."""
    name = _topic(broker)
    raws = [b"NaN", b'{"v": Infinity}', b"[-Infinity]", b"[1e400]", b'{"ok": 1}']
    _write(broker, name, [{"value": v, "partition": 0, "headers": [("h", b"NaN")]} for v in raws])
    for page in (strict(broker, f"/topics/{name}/partitions/0/messages?offset=0"),
                 _messages(broker, name, position="earliest")):
        values = [m["value"] for m in page["messages"]]
        assert [(v["format"], v["data"]) for v in values] == [
            ("text", "NaN"), ("text", '{"v": Infinity}'), ("text", "[-Infinity]"), ("text", "[1e400]"),
            ("json", {"ok": 1})]
        assert all(m["headers"][0]["value"]["data"] == "NaN" for m in page["messages"])


def test_integers_beyond_2_53_keep_every_digit(broker):
    name = _topic(broker)
    value = f'{{"id": {BIG}, "n": [{-BIG}, 3]}}'.encode()
    _write(broker, name, [{"value": value, "key": str(BIG).encode(), "partition": 0,
                           "headers": [("big", str(BIG).encode())]}])
    (m,) = _messages(broker, name)["messages"]
    assert m["value"]["data"] == {"id": BIG, "n": [-BIG, 3]}  # exact for a client that reads big integers
    assert m["value"]["exact"] == json.dumps({"id": BIG, "n": [-BIG, 3]}, indent=2)  # what the console shows
    assert str(BIG) in m["key"]["exact"] and m["headers"][0]["value"]["exact"] == str(BIG)
    small = f'{{"id": {2**53 - 1}}}'.encode()
    _write(broker, name, [{"value": small, "partition": 0}])
    assert "exact" not in _messages(broker, name, limit=1)["messages"][0]["value"]


def test_a_json_object_header_is_sent_as_json(broker):
    """Spring Kafka's spring_json_header_types header holds a JSON object (the console showed it as
    [object Object]; the page test checks what it shows now)."""
    name = _topic(broker)
    types = {"contentType": "java.lang.String", "id": "java.util.UUID"}
    _write(broker, name, [{"value": b"v", "partition": 0,
                           "headers": [("spring_json_header_types", json.dumps(types).encode())]}])
    (m,) = _messages(broker, name)["messages"]
    assert m["headers"] == [{"key": "spring_json_header_types",
                             "value": {"size": len(json.dumps(types)), "format": "json", "data": types}}]


# ------------------------------------------------------------------------- all partitions, search, tail


def test_all_partitions_in_one_view_ordered_by_timestamp(broker):
    name = _topic(broker, partitions=3)
    base = int(time.time() * 1000) - 600_000
    # Partition p holds the times p, p+3, p+6 (+ base): merged, they count 0..8.
    _write(broker, name, [{"value": f"t{p + 3 * i}".encode(), "partition": p, "timestamp": base + p + 3 * i}
                          for p in range(3) for i in range(3)])
    earliest = _messages(broker, name, position="earliest")
    assert [m["value"]["data"] for m in earliest["messages"]] == [f"t{i}" for i in range(9)]
    assert [m["partition"] for m in earliest["messages"]] == [0, 1, 2] * 3
    assert [m["timestamp"] for m in earliest["messages"]] == [base + i for i in range(9)]
    assert earliest["cursor"] == "0:3,1:3,2:3" and earliest["scan_limited"] is False
    assert [(p["partition"], p["start_offset"], p["end_offset"], p["from_offset"], p["next_offset"])
            for p in earliest["partitions"]] == [(p, 0, 3, 0, 3) for p in range(3)]

    newest = _messages(broker, name, limit=4)  # the newest 4 by timestamp, oldest first
    assert [m["value"]["data"] for m in newest["messages"]] == ["t5", "t6", "t7", "t8"]
    first_page = _messages(broker, name, position="earliest", limit=4)
    assert [m["value"]["data"] for m in first_page["messages"]] == ["t0", "t1", "t2", "t3"]
    assert first_page["cursor"] == "0:2,1:1,2:1"
    second = _messages(broker, name, cursor=first_page["cursor"], limit=4)
    assert [m["value"]["data"] for m in second["messages"]] == ["t4", "t5", "t6", "t7"]
    from_time = _messages(broker, name, timestamp=base + 6)
    assert [m["value"]["data"] for m in from_time["messages"]] == ["t6", "t7", "t8"]
    one = _messages(broker, name, partition=1, offset=1)
    assert [(m["partition"], m["offset"], m["value"]["data"]) for m in one["messages"]] == [(1, 1, "t4"), (1, 2, "t7")]


def test_search_by_key_value_and_header_over_a_bounded_scan(broker):
    name = _topic(broker, partitions=2)
    base = int(time.time() * 1000) - 600_000
    records = []
    for i in range(40):
        headers = [("trace", f"trace-{i}".encode())] + ([("tenant", b"ACME corp")] if i % 10 == 3 else [])
        records.append({"key": f"user-{i % 4}".encode(), "value": json.dumps({"n": i, "tag": "red" if i % 8 == 0
                                                                             else "blue"}).encode(),
                        "partition": i % 2, "headers": headers, "timestamp": base + i})
    _write(broker, name, records)

    def found(**query: Any) -> list[int]:
        return sorted(m["value"]["data"]["n"] for m in _messages(broker, name, position="earliest", limit=500,
                                                                 **query)["messages"])

    assert found(key="USER-1") == [i for i in range(40) if i % 4 == 1]
    assert _messages(broker, name, key="USER-1")["filters"] == {"key": "USER-1"}  # as asked
    assert found(value='"red"') == [0, 8, 16, 24, 32]
    assert found(header="tenant") == [3, 13, 23, 33]
    assert found(header="tenant=acme") == [3, 13, 23, 33]
    assert found(header="tenant=nobody") == []
    assert found(header="trace=trace-17") == [17]
    assert found(q="trace-2") == [2, *range(20, 30)]
    assert found(key="user-0", value="red") == [0, 8, 16, 24, 32]
    newest = _messages(broker, name, value="blue", limit=3)  # the newest three matches
    assert [m["value"]["data"]["n"] for m in newest["messages"]] == [37, 38, 39]
    assert newest["newest"] is True and newest["scan_limited"] is False and newest["scanned"] == 40
    # Newest with a filter searches each partition's share of max_scan, and says older ones were left.
    windowed = _messages(broker, name, value="red", max_scan=10)
    assert [m["value"]["data"]["n"] for m in windowed["messages"]] == [32]
    assert windowed["scan_limited"] is True and windowed["scanned"] == 10

    # A bounded scan says so, and its cursor goes on from where it stopped.
    page = _messages(broker, name, position="earliest", key="user-3", max_scan=10)
    assert page["scan_limited"] is True and page["scanned"] == 10 and page["max_scan"] == 10
    assert [m["value"]["data"]["n"] for m in page["messages"]] == [3, 7]
    assert page["filters"] == {"key": "user-3"} and page["newest"] is False
    seen = [m["value"]["data"]["n"] for m in page["messages"]]
    while page["scan_limited"]:
        page = _messages(broker, name, cursor=page["cursor"], key="user-3", max_scan=10)
        seen += [m["value"]["data"]["n"] for m in page["messages"]]
    assert seen == list(range(3, 40, 4))


def test_the_tail_cursor_returns_what_came_since(broker):
    name = _topic(broker, partitions=2)
    _write(broker, name, [{"value": b"old", "partition": p} for p in (0, 1)])
    first = _messages(broker, name)
    assert [m["value"]["data"] for m in first["messages"]] == ["old", "old"] and first["cursor"] == "0:1,1:1"
    assert _messages(broker, name, cursor=first["cursor"])["messages"] == []
    _write(broker, name, [{"value": f"new{i}".encode(), "partition": i % 2} for i in range(3)])
    since = _messages(broker, name, cursor=first["cursor"])
    assert sorted(m["value"]["data"] for m in since["messages"]) == ["new0", "new1", "new2"]
    assert since["cursor"] == "0:3,1:2"
    assert _messages(broker, name, cursor=since["cursor"])["messages"] == []
    filtered = _messages(broker, name, cursor=first["cursor"], value="new1")
    assert [m["value"]["data"] for m in filtered["messages"]] == ["new1"] and filtered["cursor"] == "0:3,1:2"


@pytest.mark.parametrize("query, status, code", [
    ("cursor=0", 400, "INVALID_REQUEST"),
    ("cursor=a:b", 400, "INVALID_REQUEST"),
    ("cursor=0:-1", 400, "INVALID_REQUEST"),
    ("position=middle", 400, "INVALID_REQUEST"),
    ("position=earliest&cursor=0:0", 400, "INVALID_REQUEST"),
    ("offset=0", 400, "INVALID_REQUEST"),  # an offset needs a partition
    ("partition=0&offset=9", 400, "OFFSET_OUT_OF_RANGE"),
    ("partition=5", 404, "UNKNOWN_TOPIC_OR_PARTITION"),
    ("max_scan=0", 400, "INVALID_REQUEST"),
    ("max_scan=100000000", 400, "INVALID_REQUEST"),
    pytest.param("key=" + "x" * 2000, 400, "INVALID_REQUEST", id="filter-too-long"),
    ("limit=501", 400, "INVALID_REQUEST"),
])
def test_hostile_topic_reads_are_4xx(broker, query, status, code):
    name = "data-hostile"
    if call(broker, "GET", f"/topics/{name}")[0] == 404:
        create_topic(broker.bootstrap, name, partitions=2)
    got_status, answer = call(broker, "GET", f"/topics/{name}/messages?{query}")
    assert (got_status, answer["code"]) == (status, code), answer
    assert call(broker, "GET", "/topics/no-such-topic/messages")[0] == 404


def test_the_cluster_id_is_shown(broker):
    cluster_id = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).cluster_id
    assert cluster_id
    assert ok(broker, "GET", "/console")["cluster_id"] == cluster_id
    assert ok(broker, "GET", "/cluster")["cluster_id"] == cluster_id


# ------------------------------------------------------------------------------- lag under an authorizer

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret"}


@pytest.fixture
def secured(tmp_path) -> Iterator[BrokerProcess]:
    """An authorizer where nobody but User:admin is a super user, and ANONYMOUS may do nothing."""
    for user, password in PASSWORDS.items():
        add_user(tmp_path / "data", user, password)
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "sasl.enabled.mechanisms": "SCRAM-SHA-256", "authorizer.class.name": STANDARD,
                 "allow.everyone.if.no.acl.found": "false", "super.users": "User:admin",
                 "console.sample.interval.ms": "200"}
    with BrokerProcess(tmp_path / "data", overrides=overrides) as broker:
        yield broker


def test_lag_history_under_an_authorizer(secured):
    """The lag sampler used to read as User:ANONYMOUS, whom the authorizer lets describe no group: the
    history (and the groups list's lag) stayed empty for every user."""
    sasl = {"bootstrap.servers": f"127.0.0.1:{secured.listener_port('SASL_PLAINTEXT')}",
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "admin", "sasl.password": PASSWORDS["admin"]}
    name, group = _name("secured"), _name("group")
    admin = AdminClient(sasl)
    create_topic(admin, name)
    assert produce_all(Producer(sasl), name, [{"value": f"v{i}".encode(), "partition": 0} for i in range(5)])
    consumer = Consumer({**sasl, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(name, 0, 2)], asynchronous=False)
    finally:
        consumer.close()
    granted = [AclBinding(rtype, rname, ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.DESCRIBE,
                          AclPermissionType.ALLOW) for rtype, rname in ((ResourceType.GROUP, group),
                                                                        (ResourceType.TOPIC, name))]
    for future in admin.create_acls(granted).values():
        future.result(timeout=10)

    alice = Http(secured)
    alice.login("alice", PASSWORDS["alice"])
    status, described = alice.call("GET", f"/groups/{group}")
    assert status == 200 and described["lag"] == 3  # the live figure

    def sampled() -> list:
        status, answer = alice.call("GET", f"/groups/{group}/lag-history")
        assert status == 200, answer
        return answer["points"]

    wait_for(lambda: sampled(), 15, "a sampled lag point")
    assert sampled()[-1]["lag"] == 3 and sampled()[-1]["partitions"] == {f"{name}-0": 3}
    status, listed = alice.call("GET", "/groups")
    assert status == 200 and [(g["group_id"], g["lag"]) for g in listed["groups"]] == [(group, 3)]
