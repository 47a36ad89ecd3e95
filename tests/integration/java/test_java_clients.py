"""Apache Kafka's Java client (kafka-clients 4.x: Producer, Consumer, Admin) against `tidelog serve`.

One JVM runs every scenario of tests/java's ``tidelog.oracle.Clients`` against one Tidelog broker and
prints what the clients saw; each test below checks one part of it. Scenarios (tests/java/src/...):
produce-consume (acks 0/1/all x none/gzip/snappy/lz4/zstd), idempotence (two idempotent producers,
many batches in flight), group-classic and group-consumer (two members, a leave, commits), admin
(one Admin call per step), produce-edges (records the broker must refuse or treat specially) and
fetch-edges (seeks into compressed batches, fetch limits, offset resets).
About 35 s on 2 cores.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from tests.oracle import jvm
from tests.oracle.fixtures import broker_bug

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("java-clients")]

SCENARIOS = ("produce-consume", "idempotence", "group-classic", "group-consumer", "admin", "produce-edges",
             "fetch-edges")
ACKS = ("0", "1", "all")
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RECORDS = 100  # ProduceConsume.RECORDS
IDEMPOTENT_RECORDS = 3300  # Idempotence.FIRST + SECOND
GROUP_RECORDS, GROUP_PARTITIONS = 440, 4  # GroupScenario.FIRST + SECOND, PARTITIONS


def value(i: int) -> str:
    """ProduceConsume.value(i)."""
    return f"value-{i}-" + "x" * (i % 50)


@pytest.fixture(scope="module")
def results(java_classpath, subject_broker) -> dict[str, dict]:
    done = jvm.run_java(java_classpath, "tidelog.oracle.Clients", subject_broker.bootstrap, "jc", *SCENARIOS,
                        timeout=900)
    by_name = {line["scenario"]: line for line in jvm.json_lines(done.stdout)}
    assert set(by_name) == set(SCENARIOS), f"exit {done.returncode}; stderr:\n{done.stderr[-4000:]}"
    return by_name


def result(results: dict[str, dict], scenario: str):
    line = results[scenario]
    assert "error" not in line, f"{scenario} failed: {line['error']}\n{line.get('trace', '')}"
    return line["result"]


# ----------------------------------------------------------------------------------- produce/consume

@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("acks", ACKS)
def test_produce_consume(results, acks: str, codec: str) -> None:
    case = next(c for c in result(results, "produce-consume") if c["acks"] == acks and c["codec"] == codec)
    errors = [a for a in case["acked"] if len(a) > 3]
    assert errors == [], f"sends failed: {errors[:5]}"
    consumed = case["consumed"]  # [partition, offset, key, value, header i, timestamp type]
    assert sorted(int(r[2][1:]) for r in consumed) == list(range(RECORDS)), "each key exactly once"
    for partition, offset, key, val, header, ts_type in consumed:
        i = int(key[1:])
        assert (val, header, ts_type) == (value(i), str(i), "CreateTime"), (partition, offset)
    by_partition = defaultdict(list)
    for partition, offset, key, *_ in consumed:
        by_partition[partition].append((offset, int(key[1:])))
    for partition, rows in by_partition.items():
        rows.sort()
        assert [o for o, _ in rows] == list(range(len(rows))), f"partition {partition}: offsets not dense"
        assert [i for _, i in rows] == sorted(i for _, i in rows), f"partition {partition}: send order lost"
    if acks != "0":  # with acks=0 the producer learns no offset
        placed = {int(key[1:]): [partition, offset] for partition, offset, key, *_ in consumed}
        assert {i: [p, o] for i, p, o in case["acked"]} == placed, "acknowledged offsets differ from the log"


def test_idempotent_producers_write_each_record_once_in_order(results) -> None:
    r = result(results, "idempotence")
    assert r["errors"] == []
    values = [v for _, _, v in r["consumed"]]
    assert sorted(values) == list(range(IDEMPOTENT_RECORDS)), (
        f"duplicates: {[v for v, n in Counter(values).items() if n > 1][:10]}")
    by_partition = defaultdict(list)
    for partition, offset, v in sorted(r["consumed"]):
        by_partition[partition].append((offset, v))
    assert len(by_partition) == 3
    for partition, rows in by_partition.items():
        assert [o for o, _ in rows] == list(range(len(rows))), f"partition {partition}: offsets not dense"
        assert [v for _, v in rows] == sorted(v for _, v in rows), f"partition {partition}: reordered"


# ------------------------------------------------------------------------------------------- groups

@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_group_members_share_then_hand_over_partitions(results, protocol: str) -> None:
    r = result(results, f"group-{protocol}")
    shared = r["shared_assignment"]
    assert sorted(shared["a"] + shared["b"]) == list(range(GROUP_PARTITIONS))
    assert len(shared["a"]) == len(shared["b"]) == GROUP_PARTITIONS // 2, "range and uniform split 4 as 2 + 2"
    assert r["after_leave_assignment"] == {"b": list(range(GROUP_PARTITIONS))}
    assert r["commit_errors"] == [[], []]
    values = [v for *_, v in r["consumed"]]
    assert sorted(values) == list(range(GROUP_RECORDS)), (
        f"duplicates: {[v for v, n in Counter(values).items() if n > 1][:10]}, "
        f"missing: {sorted(set(range(GROUP_RECORDS)) - set(values))[:10]}")
    assert r["committed"] == {str(p): GROUP_RECORDS // GROUP_PARTITIONS for p in range(GROUP_PARTITIONS)}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_admin_describes_and_lists_the_empty_group(results, protocol: str) -> None:
    r = result(results, f"group-{protocol}")
    kind = protocol.capitalize()
    assert r["describe"] == {"state": "Empty", "type": kind, "simple": False, "members": [], "coordinator": 0}
    assert r["listed"] == {"type": kind, "protocol": "consumer", "state": "Empty"}


# -------------------------------------------------------------------------------------------- admin

#: What Apache Kafka 4.4 answers to each step of AdminScenario (topics "jc-admin-a" and "jc-admin-b",
#: group "jc-admin-g"): the error's class, or the value returned. Config-describing steps are checked separately below.
ADMIN_EXPECTED = {
    "describe-cluster": {"ok": {"nodes": [[0, "127.0.0.1"]], "controller_in_nodes": True, "cluster_id_set": True}},
    "create-topics": {"ok": {"jc-admin-a": [3, 1, "3600000"], "jc-admin-b": [1, 1, "compact"]}},
    "create-existing-topic": {"error": "TopicExistsException"},
    "create-validate-only": {"ok": False},
    "create-invalid-config": {"error": "InvalidConfigurationException"},
    "create-unknown-config": {"error": "InvalidConfigurationException"},
    "create-zero-partitions": {"error": "InvalidPartitionsException"},
    "create-replication-3": {"error": "InvalidReplicationFactorException"},
    "create-invalid-name": {"error": "InvalidTopicException"},
    "list-topics": {"ok": ["jc-admin-a", "jc-admin-b"]},
    "describe-topic": {"ok": {"internal": False, "topic_id_set": True,
                              "partitions": [[p, 0, [0], [0]] for p in range(3)]}},
    "describe-unknown-topic": {"error": "UnknownTopicOrPartitionException"},
    "create-partitions": {"ok": {"internal": False, "topic_id_set": True,
                                 "partitions": [[p, 0, [0], [0]] for p in range(5)]}},
    "create-partitions-decrease": {"error": "InvalidPartitionsException"},
    "create-partitions-unknown-topic": {"error": "UnknownTopicOrPartitionException"},
    "alter-topic-configs-duplicate-key": {"error": "InvalidRequestException"},
    "alter-topic-configs-invalid-value": {"error": "InvalidConfigurationException"},
    "alter-topic-configs-unknown-name": {"error": "InvalidConfigurationException"},
    "alter-unknown-topic-configs": {"error": "UnknownTopicOrPartitionException"},
    "describe-unknown-topic-configs": {"error": "UnknownTopicOrPartitionException"},
    "produce": {"ok": None},
    # [offset, timestamp - base]; partition 0 holds ten one-record batches at base + i seconds
    "list-offsets": {"ok": {"earliest": [0, -1], "latest": [10, -1], "max-timestamp": [9, 9000],
                            "for-timestamp": [4, 4000], "for-exact-timestamp": [3, 3000],
                            "for-future-timestamp": [-1, -1], "empty-partition-latest": [0, -1],
                            "empty-partition-max-timestamp": [-1, -1]}},
    "delete-records": {"ok": 4},
    "list-offsets-after-delete": {"ok": {"earliest": [4, -1], "latest": [10, -1], "for-old-timestamp": [4, 4000]}},
    "delete-records-beyond-end": {"error": "OffsetOutOfRangeException"},
    "delete-records-to-end": {"ok": 10},
    "list-offsets-unknown-topic": {"error": "UnknownTopicOrPartitionException"},
    "commit-offsets": {"ok": None},
    "list-groups": {"ok": {"type": "Classic", "protocol": "", "state": "Empty", "simple": True}},
    "describe-group": {"ok": {"state": "Empty", "type": "Classic", "simple": True, "assignor": "", "members": 0}},
    "list-group-offsets": {"ok": {"jc-admin-a-0": [7, "meta"], "jc-admin-a-1": [0, ""]}},
    "alter-group-offsets": {"ok": {"jc-admin-a-0": [3, ""], "jc-admin-a-1": [0, ""]}},
    "delete-group-offsets": {"ok": {"jc-admin-a-1": [0, ""]}},
    "list-offsets-unknown-group": {"ok": {}},
    "describe-unknown-group": {"error": "GroupIdNotFoundException"},
    "delete-group": {"ok": None},
    "delete-unknown-group": {"error": "GroupIdNotFoundException"},
    "delete-topic": {"ok": ["jc-admin-a"]},
    "delete-unknown-topic": {"error": "UnknownTopicOrPartitionException"},
}


def outcome(step: dict) -> dict:
    """A step's result without the error message (clients act on the error, not its wording)."""
    return {k: v for k, v in step.items() if k != "message"}


@pytest.mark.parametrize("step", sorted(ADMIN_EXPECTED))
def test_admin_step(results, step: str) -> None:
    assert outcome(result(results, "admin")[step]) == ADMIN_EXPECTED[step]


def test_admin_max_timestamp_within_one_batch(results) -> None:
    # partition 2 of jc-admin-a: one batch of three records stamped base+5s, base+9s, base+1s
    assert outcome(result(results, "admin")["list-offsets-within-batch"]) == {"ok": {
        "max-timestamp": [1, 9000], "for-timestamp-before-all": [0, 5000], "for-timestamp-second": [1, 9000],
        "for-timestamp-after-all": [-1, -1]}}


def test_admin_topic_configs_reflect_create_and_alter(results) -> None:
    steps = result(results, "admin")
    created = steps["describe-topic-configs"]["ok"]  # name -> [value, source, read-only, sensitive]
    assert created["retention.ms"] == ["3600000", "DYNAMIC_TOPIC_CONFIG", False, False]
    assert created["cleanup.policy"] == ["delete", "DEFAULT_CONFIG", False, False]
    assert created["segment.bytes"] == ["1073741824", "DEFAULT_CONFIG", False, False]
    altered = steps["alter-topic-configs"]["ok"]
    assert altered["retention.ms"] == ["7200000", "DYNAMIC_TOPIC_CONFIG", False, False]
    assert altered["max.message.bytes"] == ["200000", "DYNAMIC_TOPIC_CONFIG", False, False]
    after_delete = steps["alter-topic-configs-set-delete"]["ok"]
    assert after_delete["retention.ms"] == ["604800000", "DEFAULT_CONFIG", False, False]
    assert after_delete["segment.ms"] == ["3600000", "DYNAMIC_TOPIC_CONFIG", False, False]
    assert after_delete["max.message.bytes"] == ["200000", "DYNAMIC_TOPIC_CONFIG", False, False]


def test_admin_broker_configs(results) -> None:
    broker = result(results, "admin")["describe-broker-configs"]["ok"]
    assert broker["num.partitions"][:2] == ["1", "DEFAULT_CONFIG"]
    assert broker["auto.create.topics.enable"][:2] == ["true", "DEFAULT_CONFIG"]
    assert broker["group.initial.rebalance.delay.ms"][:2] == ["0", "STATIC_BROKER_CONFIG"]


@broker_bug("broker difference: segment.bytes below 1 MiB is accepted; Kafka 4.x refuses it with "
            "INVALID_CONFIG ('Value must be at least 1048576'), Tidelog keeps Kafka 3.x's minimum of 14")
def test_admin_refuses_segments_below_one_mebibyte(results) -> None:
    assert outcome(result(results, "admin")["create-small-segment-bytes"]) == {
        "error": "InvalidConfigurationException"}


@broker_bug("broker difference: compression.zstd.level (KIP-390, Kafka 3.8) is "
                                       "rejected as an unknown topic config")
def test_admin_creates_a_topic_with_a_compression_level(results) -> None:
    assert outcome(result(results, "admin")["create-with-compression-level"]) == {"ok": "10"}


def test_every_admin_step_is_checked(results) -> None:
    checked = set(ADMIN_EXPECTED) | {"list-offsets-within-batch", "describe-topic-configs", "alter-topic-configs",
                                     "alter-topic-configs-set-delete", "describe-broker-configs",
                                     "create-with-compression-level", "create-small-segment-bytes"}
    assert set(result(results, "admin")) == checked


# ----------------------------------------------------------------------------------- produce edges

#: What Apache Kafka 4.4 answers to each step of ProduceEdges (tests/java/.../ProduceEdges.java).
EDGES_EXPECTED = {
    "record-larger-than-message-max-bytes": {"error": "RecordTooLargeException"},
    "record-larger-than-topic-max-message-bytes": {"error": "RecordTooLargeException"},
    "record-within-topic-max-message-bytes": {"ok": 0},
    "timestamp-two-hours-ahead": {"error": "InvalidTimestampException"},
    "timestamp-two-hours-old-default-topic": {"ok": 0},
    "timestamp-two-hours-old-recent-topic": {"error": "InvalidTimestampException"},
    "no-key-to-compacted-topic": {"error": "InvalidRecordException"},
    "tombstone-to-compacted-topic": {"ok": 0},
    "log-append-time": {"ok": [0, True]},  # [offset, the broker's time within a minute of now]
    "empty-key-and-value": {"ok": 1},
    # per record: [offset, key, value length, header h, timestamp type, timestamp within a minute of now]
    "read-back": {"ok": {"plain": [[0, "k", 1, "x", "CreateTime", False], [1, "", 0, "x", "CreateTime", True]],
                         "small": [[0, "k", 500, "x", "CreateTime", True]],
                         "compact": [[0, "k", None, "x", "CreateTime", True]],
                         "append": [[0, "k", 1, "x", "LogAppendTime", True]]}},
}


def test_every_produce_edge_is_checked(results) -> None:
    assert list(result(results, "produce-edges")) == list(EDGES_EXPECTED)


@pytest.mark.parametrize("step", list(EDGES_EXPECTED))
def test_produce_edge(results, step: str) -> None:
    assert outcome(result(results, "produce-edges")[step]) == EDGES_EXPECTED[step]


# ------------------------------------------------------------------------------------- fetch edges

#: What Apache Kafka 4.4 answers to each step of FetchEdges: one partition holding offsets 0-99 (value =
#: offset, one gzip batch, timestamps base + offset s) and offset 100 (20,000 bytes). Records: [offset, size].
FETCH_EXPECTED = {
    "seek-into-compressed-batch": {"ok": [[50, 2], [51, 2], [52, 2]]},
    "record-larger-than-fetch-limits": {"ok": [[100, 20000]]},  # KIP-74: the first batch comes anyway
    "small-fetch-limits-from-start": {"ok": [101, [100, 20000]]},
    "offsets-for-times": {"ok": [42, 42000, None]},
    "beginning-and-end-offsets": {"ok": [0, 101]},
    "read-committed-without-transactions": {"ok": [[[98, 2], [99, 2], [100, 20000]], 101]},
    "delete-records": {"ok": 60},
    "seek-below-log-start-reset-earliest": {"ok": [[60, 2]]},
    "seek-below-log-start-reset-latest": {"ok": 101},
    "seek-below-log-start-reset-none": {"error": "OffsetOutOfRangeException"},
    "seek-beyond-end-reset-earliest": {"ok": [[60, 2]]},
}


def test_every_fetch_edge_is_checked(results) -> None:
    assert list(result(results, "fetch-edges")) == list(FETCH_EXPECTED)


@pytest.mark.parametrize("step", list(FETCH_EXPECTED))
def test_fetch_edge(results, step: str) -> None:
    assert outcome(result(results, "fetch-edges")[step]) == FETCH_EXPECTED[step]
