"""The web console's JSON API (docs/console.md) against a real broker, with real Kafka clients on the other
side: what the API changes, confluent-kafka and kafka-python see, and what they write, the API shows.
Hostile input gets a clear 4xx JSON answer and the broker carries on."""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ResourceType
from kafka import KafkaProducer

from tests.integration.console_http import call, ok
from tests.integration.kafka_io import create_topic, describe_configs, produce, wait_for
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("console_api")]

BROKER_OVERRIDES = {"console.read.only": "false", "console.sample.interval.ms": "300"}


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _error(broker: BrokerProcess, method: str, path: str, body=None, **kw) -> tuple[int, str]:
    status, answer = call(broker, method, path, body, **kw) if body is not None or kw else call(broker, method, path)
    assert 400 <= status < 500, (status, answer)
    assert isinstance(answer, dict) and set(answer) == {"error", "code"} and answer["error"], answer
    return status, answer["code"]


# ------------------------------------------------------------------------------------- the app


def test_the_printed_url_serves_the_console_and_every_module_it_imports(broker):
    status, html = call(broker, "GET", "//")
    assert status == 200 and '<script type="module" src="/static/js/app.js">' in html
    seen, todo = set(), ["/static/js/app.js", "/static/style.css"]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        status, text = call(broker, "GET", "/" + path)
        assert status == 200, path
        for imported in re.findall(r'^import .* from "(\.\.?/[^"]+)";', text, re.M):
            base = path.rsplit("/", 1)[0]
            while imported.startswith("../"):
                base, imported = base.rsplit("/", 1)[0], imported[3:]
            todo.append(f"{base}/{imported.removeprefix('./')}")
    assert {"/static/js/pages/topic.js", "/static/js/pages/group.js", "/static/js/chart.js"} <= seen
    info = ok(broker, "GET", "/console")
    assert info["read_only"] is False and info["principal"] == "User:ANONYMOUS" and info["authentication"] == "none"


# ----------------------------------------------------------------------------------------- topics


def test_topic_created_through_the_api_is_what_kafka_clients_see(broker):
    name = _name("created")
    created = ok(broker, "POST", "/topics", {"name": name, "partitions": 3, "replication_factor": 1,
                                             "configs": {"retention.ms": "3600000", "cleanup.policy": "compact"}})
    assert created["partitions"] == 3 and created["replication_factor"] == 1
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert len(admin.list_topics(name, timeout=10).topics[name].partitions) == 3
    configs = describe_configs(admin, ResourceType.TOPIC, name)
    assert configs["retention.ms"].value == "3600000" and configs["cleanup.policy"].value == "compact"

    topic = ok(broker, "GET", f"/topics/{name}")
    assert [(p["partition"], p["leader"], p["isr"], p["start_offset"], p["end_offset"])
            for p in topic["partition_table"]] == [(i, 0, [0], 0, 0) for i in range(3)]
    listed = ok(broker, "GET", f"/topics?search={name[-8:].upper()}")["topics"]
    assert [t["name"] for t in listed] == [name]
    assert ok(broker, "GET", "/topics?search=no-topic-has-this-name")["topics"] == []

    ok(broker, "DELETE", f"/topics/{name}")
    wait_for(lambda: name not in admin.list_topics(timeout=10).topics, 10, "the topic to go")
    assert _error(broker, "GET", f"/topics/{name}") == (404, "UNKNOWN_TOPIC_OR_PARTITION")


def test_topic_creation_errors_are_kafkas(broker):
    name = _name("dup")
    ok(broker, "POST", "/topics", {"name": name})
    assert _error(broker, "POST", "/topics", {"name": name}) == (409, "TOPIC_ALREADY_EXISTS")
    assert _error(broker, "POST", "/topics", {"name": "bad name!"}) == (400, "INVALID_TOPIC_EXCEPTION")
    assert _error(broker, "POST", "/topics", {"name": "x" * 300}) == (400, "INVALID_TOPIC_EXCEPTION")
    assert _error(broker, "POST", "/topics", {"name": _name("p"), "partitions": 0}) == (400, "INVALID_PARTITIONS")
    assert _error(broker, "POST", "/topics", {"name": _name("rf"), "replication_factor": 3}) == (
        400, "INVALID_REPLICATION_FACTOR")
    assert _error(broker, "POST", "/topics", {"name": _name("c"), "configs": {"retention.ms": "soon"}}) == (
        400, "INVALID_CONFIG")
    assert _error(broker, "POST", "/topics", {"name": _name("c"), "configs": {"no.such.config": "1"}}) == (
        400, "INVALID_CONFIG")
    assert _error(broker, "POST", "/topics", {"name": _name("huge"), "partitions": 1_000_000}) == (
        403, "POLICY_VIOLATION")
    assert _error(broker, "POST", "/topics", {"name": _name("v"), "validate_only": "yes"})[1] == "INVALID_REQUEST"
    assert _error(broker, "DELETE", "/topics/no-such-topic") == (404, "UNKNOWN_TOPIC_OR_PARTITION")
    assert _error(broker, "GET", "/topics/no-such-topic/configs") == (404, "UNKNOWN_TOPIC_OR_PARTITION")


@pytest.mark.parametrize("body, code", [
    ({}, "INVALID_REQUEST"),                                    # no name
    ({"name": 7}, "INVALID_REQUEST"),                           # wrong type
    ({"name": "t", "partitions": "3"}, "INVALID_REQUEST"),
    ({"name": "t", "partitions": True}, "INVALID_REQUEST"),     # a bool is not a count
    ({"name": "t", "partitions": 2**40}, "INVALID_REQUEST"),
    ({"name": "t", "configs": ["a"]}, "INVALID_REQUEST"),
    ({"name": "t", "configs": {"retention.ms": {"x": 1}}}, "INVALID_REQUEST"),
    ([1, 2], "INVALID_REQUEST"),                                # not an object
])
def test_wrong_types_are_400(broker, body, code):
    assert _error(broker, "POST", "/topics", body) == (400, code)


@pytest.mark.parametrize("raw", [b"{not json", b"", b"\xff\xfe", b"null", b'"name"'])
def test_malformed_json_is_400(broker, raw):
    status, code = _error(broker, "POST", "/topics", raw=raw)
    assert status == 400 and code in ("MALFORMED_JSON", "INVALID_REQUEST")


def test_unknown_routes_methods_and_media_types_answer_json(broker):
    assert _error(broker, "GET", "/no/such/route") == (404, "NOT_FOUND")
    assert _error(broker, "PUT", "/topics", {"name": "x"}) == (405, "METHOD_NOT_ALLOWED")
    assert _error(broker, "POST", "/topics", raw=b'{"name": "x"}', content_type="text/plain") == (
        415, "UNSUPPORTED_MEDIA_TYPE")
    assert _error(broker, "GET", "/topics/t/partitions/abc/messages") == (400, "INVALID_REQUEST")


def test_configs_altered_through_the_api_are_what_kafka_clients_see(broker):
    name = _name("cfg")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create_topic(admin, name)
    answer = ok(broker, "PATCH", f"/topics/{name}/configs", {"configs": {"retention.ms": "60000",
                                                                        "max.message.bytes": 2048}})
    by_name = {c["name"]: c for c in answer["configs"]}
    assert by_name["retention.ms"]["value"] == "60000" and by_name["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert describe_configs(admin, ResourceType.TOPIC, name)["max.message.bytes"].value == "2048"
    ok(broker, "PATCH", f"/topics/{name}/configs", {"configs": {"retention.ms": None}})
    entry = describe_configs(admin, ResourceType.TOPIC, name)["retention.ms"]
    assert entry.value == "604800000" and entry.is_default
    assert _error(broker, "PATCH", f"/topics/{name}/configs", {"configs": {"retention.ms": "x"}}) == (
        400, "INVALID_CONFIG")
    assert _error(broker, "PATCH", f"/topics/{name}/configs", {"configs": {}}) == (400, "INVALID_REQUEST")
    assert _error(broker, "PATCH", "/topics/no-such-topic/configs", {"configs": {"retention.ms": "1"}})[1] == (
        "UNKNOWN_TOPIC_OR_PARTITION")


# --------------------------------------------------------------------------------------- messages


def test_messages_written_by_kafka_python_are_browsable(broker):
    name = _name("browse")
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name, partitions=2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    base = int(time.time() * 1000) - 60_000
    sent = [(b"k-json", json.dumps({"n": 1}).encode(), [("trace", b"abc")]),
            (None, b"\x00\xff\x10", []),
            (b"k-text", "caf\u00e9".encode(), [("bin", b"\xff"), ("empty", b"")])]
    for i, (key, value, headers) in enumerate(sent):
        producer.send(name, key=key, value=value, headers=headers, partition=1, timestamp_ms=base + i * 1000)
    for i in range(20):
        producer.send(name, value=f"m{i}".encode(), partition=1, timestamp_ms=base + 10_000 + i)
    producer.flush(15)
    producer.close()

    page = ok(broker, "GET", f"/topics/{name}/partitions/1/messages?offset=0&limit=3")
    assert (page["start_offset"], page["end_offset"], page["next_offset"]) == (0, 23, 3)
    first, binary, text = page["messages"]
    assert first["key"] == {"size": 6, "format": "text", "data": "k-json"}
    assert first["value"] == {"size": 8, "format": "json", "data": {"n": 1}}
    assert first["headers"] == [{"key": "trace", "value": {"size": 3, "format": "text", "data": "abc"}}]
    assert first["timestamp"] == base
    assert binary["key"] is None and binary["value"] == {"size": 3, "format": "hex", "data": "00ff10"}
    assert text["value"]["data"] == "caf\u00e9"
    assert text["headers"][0]["value"]["format"] == "hex" and text["headers"][1]["value"] == {
        "size": 0, "format": "text", "data": ""}

    as_hex = ok(broker, "GET", f"/topics/{name}/partitions/1/messages?offset=2&limit=1&format=hex")["messages"]
    assert [m["value"]["data"] for m in as_hex] == ["caf\u00e9".encode().hex()]
    as_text = ok(broker, "GET", f"/topics/{name}/partitions/1/messages?offset=1&limit=1&format=text")["messages"]
    assert as_text[0]["value"] == {"size": 3, "format": "text", "data": "\x00\ufffd\x10"}

    by_time = ok(broker, "GET", f"/topics/{name}/partitions/1/messages?timestamp={base + 10_005}&limit=100")
    assert [m["offset"] for m in by_time["messages"]] == list(range(8, 23))
    newest = ok(broker, "GET", f"/topics/{name}/partitions/1/messages?limit=5")["messages"]
    assert [m["value"]["data"] for m in newest] == [f"m{i}" for i in range(15, 20)]
    later = ok(broker, "GET", f"/topics/{name}/partitions/1/messages?timestamp={base + 3_600_000}")
    assert later["messages"] == [] and later["from_offset"] == 23
    assert ok(broker, "GET", f"/topics/{name}/partitions/0/messages")["messages"] == []


@pytest.mark.parametrize("query, status, code", [
    ("offset=24", 400, "OFFSET_OUT_OF_RANGE"),
    ("offset=-1", 400, "INVALID_REQUEST"),
    ("offset=1e3", 400, "INVALID_REQUEST"),
    ("offset=99999999999999999999999", 400, "INVALID_REQUEST"),
    ("limit=0", 400, "INVALID_REQUEST"),
    ("limit=1000000", 400, "INVALID_REQUEST"),
    ("timestamp=-5", 400, "INVALID_REQUEST"),
    ("offset=1&timestamp=5", 400, "INVALID_REQUEST"),
    ("format=base64", 400, "INVALID_REQUEST"),
])
def test_hostile_message_reads_are_400(broker, query, status, code):
    name = "hostile-reads"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    if name not in admin.list_topics(timeout=10).topics:
        create_topic(admin, name)
        produce(broker, name, ["a", "b", "c"], partition=0)
    assert _error(broker, "GET", f"/topics/{name}/partitions/0/messages?{query}") == (status, code)


def test_large_values_are_cut_to_64_kib_and_say_their_size(broker):
    name = _name("large")
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name)
    produce(broker, name, [b"z" * 300_000, b"small"], partition=0)
    first, second = ok(broker, "GET", f"/topics/{name}/partitions/0/messages?offset=0")["messages"]
    assert first["value"]["size"] == 300_000 and first["value"]["truncated"] is True
    assert first["value"]["data"] == "z" * 65536
    assert second["value"] == {"size": 5, "format": "text", "data": "small"}


def test_reads_of_unknown_topics_and_partitions_are_404(broker):
    assert _error(broker, "GET", "/topics/no-such-topic/partitions/0/messages") == (404, "UNKNOWN_TOPIC_OR_PARTITION")
    name = _name("few")
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name)
    assert _error(broker, "GET", f"/topics/{name}/partitions/1/messages") == (404, "UNKNOWN_TOPIC_OR_PARTITION")
    assert _error(broker, "GET", f"/topics/{name}/partitions/-1/messages") == (400, "INVALID_REQUEST")


def test_a_message_produced_through_the_api_reaches_a_confluent_consumer(broker):
    name = _name("produced")
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name, partitions=2)
    answer = ok(broker, "POST", f"/topics/{name}/messages", {"partition": 1, "key": "user-1", "value": '{"a": 1}',
                                                             "headers": {"source": "console"}})
    assert answer == {"topic": name, "partition": 1, "offset": 0}
    ok(broker, "POST", f"/topics/{name}/messages", {"partition": 1, "value": {"b": [1, 2]}, "format": "json"})
    ok(broker, "POST", f"/topics/{name}/messages", {"partition": 1, "key": None, "value": "00ff", "format": "hex"})
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": _name("reader"),
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(name, 1, 0)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 3 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m)
    finally:
        consumer.close()
    assert [(m.key(), m.value()) for m in got] == [(b"user-1", b'{"a": 1}'), (None, b'{"b": [1, 2]}'),
                                                   (None, b"\x00\xff")]
    assert got[0].headers() == [("source", b"console")]


def test_hostile_produce_requests_are_4xx(broker):
    name = _name("hostile-produce")
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name)
    assert _error(broker, "POST", f"/topics/{name}/messages", {"partition": 3, "value": "x"}) == (
        404, "UNKNOWN_TOPIC_OR_PARTITION")
    assert _error(broker, "POST", "/topics/no-such-topic/messages", {"value": "x"}) == (
        404, "UNKNOWN_TOPIC_OR_PARTITION")
    assert _error(broker, "POST", "/topics/__consumer_offsets/messages", {"value": "x"}) == (
        400, "INVALID_TOPIC_EXCEPTION")
    assert _error(broker, "POST", f"/topics/{name}/messages", {"value": "zz", "format": "hex"})[0] == 400
    assert _error(broker, "POST", f"/topics/{name}/messages", {"value": 5})[0] == 400
    assert _error(broker, "POST", f"/topics/{name}/messages", {"value": "x", "headers": {"h": 1}})[0] == 400
    assert _error(broker, "POST", f"/topics/{name}/messages", {"value": "x", "partition": "0"})[0] == 400
    assert _error(broker, "POST", f"/topics/{name}/messages", {"value": "x", "format": "yaml"})[0] == 400
    ok(broker, "PATCH", f"/topics/{name}/configs", {"configs": {"max.message.bytes": "200"}})
    assert _error(broker, "POST", f"/topics/{name}/messages", {"value": "x" * 1000}) == (400, "MESSAGE_TOO_LARGE")
    assert ok(broker, "GET", f"/topics/{name}")["messages"] == 0


# ------------------------------------------------------------------------------------------ groups


def test_group_members_lag_history_and_reset(broker):
    name, group = _name("lagged"), _name("group")
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name, partitions=2)
    produce(broker, name, [f"v{i}" for i in range(10)], partition=[i % 2 for i in range(10)])
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 6000})
    consumer.subscribe([name])
    try:
        first = None
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 10 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                seen += 1
                consumer.commit(m, asynchronous=False)
                if seen == 1:  # assigned partitions show before anything of theirs is committed
                    first = ok(broker, "GET", f"/groups/{group}")
        assert first is not None and {o["partition"] for o in first["offsets"]} == {0, 1}
        assert [o["lag"] for o in first["offsets"] if o["committed_offset"] is None] == [None]
        described = ok(broker, "GET", f"/groups/{group}")
        assert described["state"] == "Stable" and described["type"] == "classic"
        (member,) = described["members"]
        assert member["assignment"] == [{"topic": name, "partitions": [0, 1]}]
        assert [(o["partition"], o["committed_offset"], o["end_offset"], o["lag"], o["member_id"])
                for o in described["offsets"]] == [(p, 5, 5, 0, member["member_id"]) for p in (0, 1)]
        assert described["lag"] == 0
        assert _error(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "earliest"}) == (409, "NON_EMPTY_GROUP")

        produce(broker, name, [f"w{i}" for i in range(6)], partition=0)
        wait_for(lambda: any(p["lag"] == 6 for p in ok(broker, "GET", f"/groups/{group}/lag-history")["points"]),
                 10, "the sampled lag to grow to 6")
    finally:
        consumer.close()
    wait_for(lambda: ok(broker, "GET", f"/groups/{group}")["state"] == "Empty", 15, "the group to empty")
    listed = {g["group_id"]: g for g in ok(broker, "GET", "/groups")["groups"]}
    assert listed[group]["state"] == "Empty"

    preview = ok(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "latest", "dry_run": True})
    assert [(o["partition"], o["previous_offset"], o["offset"]) for o in preview["offsets"]] == [(0, 5, 11), (1, 5, 5)]
    assert ok(broker, "GET", f"/groups/{group}")["lag"] == 6  # a dry run changes nothing
    ok(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "latest"})
    assert ok(broker, "GET", f"/groups/{group}")["lag"] == 0
    ok(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "offset", "offset": 2, "topic": name,
                                                          "partitions": [1]})
    clamped = ok(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "offset", "offset": 10**12,
                                                                    "topic": name, "partitions": [0]})
    assert clamped["offsets"] == [{"topic": name, "partition": 0, "previous_offset": 11, "offset": 11}]
    kafka_view = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        offsets = kafka_view.committed([TopicPartition(name, 0), TopicPartition(name, 1)], timeout=10)
    finally:
        kafka_view.close()
    assert [tp.offset for tp in offsets] == [11, 2]
    wait_for(lambda: ok(broker, "GET", f"/groups/{group}/lag-history")["points"][-1]["lag"] == 3, 10,
             "the sampled lag to shrink to 3")
    history = [p["lag"] for p in ok(broker, "GET", f"/groups/{group}/lag-history")["points"]]
    assert max(history) == 6 and history[-1] == 3


def test_hostile_group_requests_are_4xx(broker):
    assert _error(broker, "GET", "/groups/no-such-group") == (404, "GROUP_ID_NOT_FOUND")
    group = _name("empty-group")
    assert _error(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "earliest"}) == (400, "INVALID_REQUEST")
    assert _error(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "sideways", "topic": "t"})[0] == 400
    assert _error(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "offset", "topic": "t"})[0] == 400
    assert _error(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "offset", "offset": -3, "topic": "t"})[0] == 400
    assert _error(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "earliest", "topic": "no-such-topic"}) == (
        404, "UNKNOWN_TOPIC_OR_PARTITION")
    name = _name("two")
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name, partitions=2)
    assert _error(broker, "POST", f"/groups/{group}/reset-offsets",
                  {"to": "earliest", "topic": name, "partitions": [0, 7]}) == (404, "UNKNOWN_TOPIC_OR_PARTITION")
    assert _error(broker, "POST", f"/groups/{group}/reset-offsets",
                  {"to": "earliest", "topic": name, "partitions": ["0"]})[0] == 400
    # A group that does not exist yet may be given offsets (Kafka's tool allows it too), whatever its id.
    for odd in (group, f"{group}/with slash", f"{group} ü?#"):
        path = "/groups/" + urllib.parse.quote(odd, safe="")
        ok(broker, "POST", f"{path}/reset-offsets", {"to": "earliest", "topic": name})
        described = ok(broker, "GET", path)
        assert (described["group_id"], described["state"], len(described["offsets"])) == (odd, "Empty", 2)


def test_reset_to_a_timestamp_picks_the_first_offset_at_or_after_it(broker):
    name, group = _name("by-time"), _name("g-time")
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name)
    base = int(time.time() * 1000) - 3_600_000
    produce(broker, name, [f"t{i}" for i in range(5)], partition=0, timestamp_ms=[base + i * 1000 for i in range(5)])
    reset = ok(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "timestamp", "timestamp": base + 2500,
                                                                  "topic": name})
    assert reset["offsets"] == [{"topic": name, "partition": 0, "previous_offset": None, "offset": 3}]
    after = ok(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "timestamp", "timestamp": base + 10**9})
    assert after["offsets"] == [{"topic": name, "partition": 0, "previous_offset": 3, "offset": 5}]
    assert ok(broker, "GET", f"/groups/{group}")["offsets"][0]["committed_offset"] == 5


def test_a_kip848_consumer_group_is_described(broker):
    name, group = _name("kip848"), _name("g848")
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name, partitions=2)
    produce(broker, name, ["a", "b", "c"], partition=0)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([name])
    try:
        got = 0
        deadline = time.monotonic() + 30
        while got < 3 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got += 1
                consumer.commit(m, asynchronous=False)
        described = ok(broker, "GET", f"/groups/{group}")
        assert described["type"] == "consumer"
        (member,) = described["members"]
        assert member["assignment"] == [{"topic": name, "partitions": [0, 1]}]
        assert {(o["partition"], o["committed_offset"], o["lag"]) for o in described["offsets"]} == {(0, 3, 0), (1, None, None)}
        assert _error(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "earliest"}) == (409, "NON_EMPTY_GROUP")
    finally:
        consumer.close()


# --------------------------------------------------------------------------------- cluster overview


def test_overview_counts_disk_use_and_rates(broker):
    name = _name("rates")
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name, partitions=4)
    produce(broker, name, [b"x" * 100] * 200)
    overview = ok(broker, "GET", "/cluster")
    admin_topics = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).topics
    assert overview["topics"] == len(admin_topics)
    assert overview["partitions"] == sum(len(t.partitions) for t in admin_topics.values())
    assert overview["under_replicated_partitions"] == 0 and overview["offline_partitions"] == 0
    assert [b["id"] for b in overview["brokers"]] == [0]
    (log_dir,) = overview["log_dirs"]
    assert log_dir["size_bytes"] > 200 * 100 and log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
    wait_for(lambda: any(s["topics"].get(name, {}).get("records_per_sec", 0) > 0
                         for s in ok(broker, "GET", "/cluster/rates")["samples"]), 10, "a sampled rate")
    samples = ok(broker, "GET", "/cluster/rates")["samples"]
    assert len(samples) <= ok(broker, "GET", "/console")["history"]
    assert _error(broker, "GET", "/cluster/rates?since=yesterday") == (400, "INVALID_REQUEST")


def test_the_broker_survives_the_hostile_inputs(broker):
    """Run last in the module: after everything above, the broker still serves Kafka and HTTP, and no
    request made it fail inside (a 500 or a traceback in its log)."""
    assert call(broker, "GET", "//readyz")[0] == 200
    name = _name("after")
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name)
    produce(broker, name, ["still here"])
    assert ok(broker, "GET", f"/topics/{name}/partitions/0/messages")["messages"][0]["value"]["data"] == "still here"
    assert "Traceback" not in broker.stderr_text()
    assert "console API" not in broker.stderr_text()


# ------------------------------------------------------------------------------- read-only / disabled


def test_read_only_by_default_every_change_is_403(tmp_path):
    with BrokerProcess(tmp_path / "data", overrides={"auto.create.topics.enable": "true"}) as broker:
        assert ok(broker, "GET", "/console")["read_only"] is True
        produce(broker, "existing", ["a"])
        changes = [("POST", "/topics", {"name": "new-topic"}),
                   ("DELETE", "/topics/existing", None),
                   ("PATCH", "/topics/existing/configs", {"configs": {"retention.ms": "1"}}),
                   ("POST", "/topics/existing/messages", {"value": "x"}),
                   ("POST", "/groups/g/reset-offsets", {"to": "earliest", "topic": "existing"}),
                   ("DELETE", "/groups/g", None)]
        for method, path, body in changes:
            status, answer = call(broker, method, path, body) if body is not None else call(broker, method, path)
            assert status == 403 and answer["code"] == "CONSOLE_READ_ONLY", (method, path, answer)
            assert "console.read.only=false" in answer["error"]
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        assert "new-topic" not in admin.list_topics(timeout=10).topics
        assert ok(broker, "GET", "/topics/existing")["messages"] == 1
        assert ok(broker, "GET", "/topics/existing/partitions/0/messages")["messages"][0]["value"]["data"] == "a"


def test_console_enable_false_serves_no_console(tmp_path):
    with BrokerProcess(tmp_path / "data", overrides={"console.enable": "false"}) as broker:
        assert call(broker, "GET", "//healthz")[0] == 200
        assert call(broker, "GET", "//")[0] == 404
        assert call(broker, "GET", "/console")[0] == 404
