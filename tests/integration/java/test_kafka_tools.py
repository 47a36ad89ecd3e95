"""Apache Kafka's own command-line tools (kafka-tools 4.x) against `tidelog serve`.

Each tool runs as its bin/<tool>.sh would: its main class on the oracle's classpath, in its own JVM
(tests/oracle/jvm.py). Expected outputs are what the same commands print against Apache Kafka 4.4.
About 40 JVM runs of ~1 s each (~2 s when the machine is busy): 40-70 s on 2 cores.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration import kafka_io
from tests.oracle import jvm
from tests.oracle.fixtures import broker_bug, subject
from tests.oracle.group import commit
from tests.oracle.kafka import KafkaProcess
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kafka-tools")]


@pytest.fixture(scope="module")
def tool(java_classpath, subject_broker):
    """``tool("kafka-topics", "--list")``: run bin/kafka-topics.sh's main class with --bootstrap-server
    pointing at the module's broker; fails the test on a non-zero exit unless ``check=False``."""

    def run(name: str, *args: object, stdin: str | None = None, check: bool = True):
        done = jvm.run_tool(java_classpath, name, "--bootstrap-server", subject_broker.bootstrap, *args,
                            stdin=stdin)
        if check:
            assert done.returncode == 0, (f"{name} {' '.join(map(str, args))} exited {done.returncode}:\n"
                                          f"{done.stdout}\n{done.stderr[-3000:]}")
        return done

    return run


def produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> None:
    """Records ``k{i}``: ``v{i}`` to one partition."""
    kafka_io.produce(bootstrap, topic, [f"v{i}" for i in range(count)], key=[f"k{i}" for i in range(count)],
                     partition=partition, config={"linger.ms": 0}, timeout=30)


def table(stdout: str, first: str) -> list[list[str]]:
    """Rows of a kafka-consumer-groups table: the whitespace-split lines that start with ``first``."""
    return [line.split() for line in stdout.splitlines() if line.split()[:1] == [first]]


def config_lines(stdout: str) -> dict[str, str]:
    """``name=value`` of the indented lines kafka-configs --describe prints."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("  ") and "=" in line:
            name, _, rest = line.strip().partition("=")
            out[name] = rest.split(" sensitive=")[0]
    return out


# ------------------------------------------------------------------------------------- kafka-topics

def test_kafka_topics_create_alter_describe_delete(tool) -> None:
    created = tool("kafka-topics", "--create", "--topic", "tl-topics", "--partitions", 3,
                   "--config", "retention.ms=100000")
    assert "Created topic tl-topics." in created.stdout
    tool("kafka-topics", "--alter", "--topic", "tl-topics", "--partitions", 4)
    described = tool("kafka-topics", "--describe", "--topic", "tl-topics").stdout.splitlines()
    assert re.search(r"Topic: tl-topics\tTopicId: \S+\tPartitionCount: 4\tReplicationFactor: 1\tConfigs: .*"
                     r"retention\.ms=100000", described[0]), described[0]
    partitions = [re.findall(r"(Partition|Leader|Replicas|Isr): (\S+)", line) for line in described[1:]]
    assert partitions == [[("Partition", str(p)), ("Leader", "0"), ("Replicas", "0"), ("Isr", "0")]
                          for p in range(4)]
    tool("kafka-topics", "--delete", "--topic", "tl-topics")
    assert "tl-topics" not in tool("kafka-topics", "--list").stdout.split()


def test_kafka_topics_reports_an_existing_topic(tool) -> None:
    tool("kafka-topics", "--create", "--topic", "tl-twice")
    again = tool("kafka-topics", "--create", "--topic", "tl-twice", check=False)
    assert again.returncode == 1
    assert "Topic 'tl-twice' already exists." in again.stdout + again.stderr


# ------------------------------------------------------------------------------------ kafka-configs

def test_kafka_configs_topic(tool) -> None:
    tool("kafka-topics", "--create", "--topic", "tl-configs")
    topic = ("--entity-type", "topics", "--entity-name", "tl-configs")
    tool("kafka-configs", *topic, "--alter", "--add-config", "retention.ms=200000,cleanup.policy=compact")
    assert config_lines(tool("kafka-configs", *topic, "--describe").stdout) == {
        "retention.ms": "200000", "cleanup.policy": "compact"}
    tool("kafka-configs", *topic, "--alter", "--delete-config", "cleanup.policy")
    assert config_lines(tool("kafka-configs", *topic, "--describe").stdout) == {"retention.ms": "200000"}
    everything = config_lines(tool("kafka-configs", *topic, "--describe", "--all").stdout)
    assert everything["cleanup.policy"] == "delete"
    assert everything["segment.bytes"] == "1073741824"


def test_kafka_configs_broker(tool) -> None:
    broker = ("--entity-type", "brokers", "--entity-name", "0")
    tool("kafka-configs", *broker, "--alter", "--add-config", "log.cleaner.threads=2")
    assert config_lines(tool("kafka-configs", *broker, "--describe").stdout) == {"log.cleaner.threads": "2"}
    tool("kafka-configs", *broker, "--alter", "--delete-config", "log.cleaner.threads")


@broker_bug("broker difference: the cluster-default broker configs (resource name '') "
                                       "and broker 0's own dynamic configs are one set in Tidelog, two in Kafka")
def test_kafka_configs_broker_default_is_not_broker_0(tool) -> None:
    default = ("--entity-type", "brokers", "--entity-default")
    broker = ("--entity-type", "brokers", "--entity-name", "0")
    tool("kafka-configs", *default, "--alter", "--add-config", "log.cleaner.io.max.bytes.per.second=1000000")
    tool("kafka-configs", *broker, "--alter", "--add-config", "log.cleaner.backoff.ms=20000")
    try:
        cluster_wide = set(config_lines(tool("kafka-configs", *default, "--describe").stdout))
        assert "log.cleaner.io.max.bytes.per.second" in cluster_wide  # (Kafka also has min.insync.replicas here)
        assert "log.cleaner.backoff.ms" not in cluster_wide
        assert set(config_lines(tool("kafka-configs", *broker, "--describe").stdout)) == {"log.cleaner.backoff.ms"}
    finally:
        tool("kafka-configs", *default, "--alter", "--delete-config", "log.cleaner.io.max.bytes.per.second")
        tool("kafka-configs", *broker, "--alter", "--delete-config", "log.cleaner.backoff.ms")


def test_kafka_configs_group(tool) -> None:
    group = ("--entity-type", "groups", "--entity-name", "tl-configs-group")
    tool("kafka-configs", *group, "--alter", "--add-config", "consumer.session.timeout.ms=50000")
    assert config_lines(tool("kafka-configs", *group, "--describe").stdout) == {
        "consumer.session.timeout.ms": "50000"}


# ---------------------------------------------------------------------- console producer and consumer

def test_console_producer_then_console_consumer(tool) -> None:
    tool("kafka-topics", "--create", "--topic", "tl-console", "--partitions", 2)
    lines = [f"h:v{i}\tkey{i % 3}:line {i}" for i in range(30)]
    tool("kafka-console-producer", "--topic", "tl-console", "--command-property", "compression.type=zstd",
         "--reader-property", "parse.key=true", "--reader-property", "key.separator=:",
         "--reader-property", "parse.headers=true", stdin="\n".join(lines) + "\n")
    consumed = tool("kafka-console-consumer", "--topic", "tl-console", "--from-beginning", "--max-messages", 30,
                    "--timeout-ms", 30000, "--group", "tl-console-group",
                    "--formatter-property", "print.key=true", "--formatter-property", "print.partition=true",
                    "--formatter-property", "print.offset=true", "--formatter-property", "print.headers=true")
    rows = [line.split("\t") for line in consumed.stdout.splitlines() if line.startswith("Partition:")]
    assert "Processed a total of 30 messages" in consumed.stderr + consumed.stdout
    got = sorted((key, value, headers) for _, _, headers, key, value in rows)
    assert got == sorted((f"key{i % 3}", f"line {i}", f"h:v{i}") for i in range(30))
    by_key_partition = {}
    for partition, _, _, key, _ in rows:
        assert by_key_partition.setdefault(key, partition) == partition, "one key, one partition"
    for p in {partition for partition, *_ in rows}:  # offsets of each partition are 0, 1, 2 ... in order
        offsets = [int(offset.split(":")[1]) for partition, offset, *_ in rows if partition == p]
        assert offsets == list(range(len(offsets)))
    # the console consumer committed what it read: the group's lag is 0 on both partitions
    described = tool("kafka-consumer-groups", "--describe", "--group", "tl-console-group").stdout
    lags = {int(row[2]): (int(row[3]), int(row[4]), row[5]) for row in table(described, "tl-console-group")}
    assert sorted(lags) == [0, 1]
    assert sum(current for current, _, _ in lags.values()) == 30
    assert all(current == end and lag == "0" for current, end, lag in lags.values())


# --------------------------------------------------------------------------- kafka-consumer-groups

def test_kafka_consumer_groups_list_describe_reset_delete(tool, subject_broker) -> None:
    kafka_io.create_topic(subject_broker.bootstrap, "tl-groups", 1, timeout=30)
    produce(subject_broker.bootstrap, "tl-groups", 10)
    tool("kafka-console-consumer", "--topic", "tl-groups", "--group", "tl-groups-g", "--from-beginning",
         "--max-messages", 10, "--timeout-ms", 30000)
    assert "tl-groups-g" in tool("kafka-consumer-groups", "--list").stdout.split()
    state = table(tool("kafka-consumer-groups", "--describe", "--group", "tl-groups-g", "--state").stdout,
                  "tl-groups-g")
    assert [row[-2:] for row in state] == [["Empty", "0"]]
    offsets = table(tool("kafka-consumer-groups", "--describe", "--group", "tl-groups-g").stdout, "tl-groups-g")
    assert [row[1:6] for row in offsets] == [["tl-groups", "0", "10", "10", "0"]]

    reset = ("--reset-offsets", "--group", "tl-groups-g", "--topic", "tl-groups")
    planned = table(tool("kafka-consumer-groups", *reset, "--to-earliest", "--dry-run").stdout, "tl-groups-g")
    assert [row[1:] for row in planned] == [["tl-groups", "0", "0"]]
    tool("kafka-consumer-groups", *reset, "--to-offset", 3, "--execute")
    tool("kafka-consumer-groups", *reset, "--shift-by", 2, "--execute")
    offsets = table(tool("kafka-consumer-groups", "--describe", "--group", "tl-groups-g").stdout, "tl-groups-g")
    assert [row[1:6] for row in offsets] == [["tl-groups", "0", "5", "10", "5"]]

    deleted = tool("kafka-consumer-groups", "--delete", "--group", "tl-groups-g")
    assert "Deletion of requested consumer groups ('tl-groups-g') was successful." in deleted.stdout


# --------------------------------------------------------------------- get-offsets, delete-records

def test_kafka_get_offsets_and_delete_records(tool, subject_broker, tmp_path) -> None:
    kafka_io.create_topic(subject_broker.bootstrap, "tl-offsets", 2, timeout=30)
    produce(subject_broker.bootstrap, "tl-offsets", 8, partition=0)

    def offsets(*time: object) -> list[str]:
        return tool("kafka-get-offsets", "--topic", "tl-offsets", *time).stdout.split()

    assert offsets() == ["tl-offsets:0:8", "tl-offsets:1:0"]
    assert offsets("--time", -2) == ["tl-offsets:0:0", "tl-offsets:1:0"]
    spec = tmp_path / "delete.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [{"topic": "tl-offsets", "partition": 0, "offset": 5}]}))
    deleted = tool("kafka-delete-records", "--offset-json-file", spec)
    assert "partition: tl-offsets-0\tlow_watermark: 5" in deleted.stdout
    assert offsets("--time", -2) == ["tl-offsets:0:5", "tl-offsets:1:0"]
    assert offsets("--time", "latest", "--partitions", 0) == ["tl-offsets:0:8"]


# ------------------------------------------------------------------------------------- perf tests

def test_producer_and_consumer_perf_test(tool) -> None:
    tool("kafka-topics", "--create", "--topic", "tl-perf", "--partitions", 2)
    produced = tool("kafka-producer-perf-test", "--topic", "tl-perf", "--num-records", 20000, "--record-size", 200,
                    "--throughput", -1, "--command-property", "acks=all", "--command-property", "compression.type=lz4")
    assert re.search(r"^20000 records sent, ", produced.stdout, re.MULTILINE), produced.stdout
    consumed = tool("kafka-consumer-perf-test", "--topic", "tl-perf", "--num-records", 20000, "--timeout", 30000)
    header, values = consumed.stdout.strip().splitlines()[-2:]
    stats = dict(zip([h.strip() for h in header.split(",")], [v.strip() for v in values.split(",")]))
    assert stats["data.consumed.in.nMsg"] == "20000"
    assert float(stats["data.consumed.in.MB"]) == pytest.approx(20000 * 200 / 1024 / 1024, rel=1e-3)


# ------------------------------------------------------------------------------------ kafka-dump-log

def java_string_hash(s: str) -> int:
    """Java's String.hashCode (as a signed 32-bit int)."""
    h = 0
    for ch in s.encode("utf-16-be").decode("utf-16-be"):
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def test_kafka_dump_log_reads_the_data_files(java_classpath, broker_overrides, tmp_path) -> None:
    """Tidelog lays out its log dirs as Kafka does: Kafka's kafka-dump-log reads its segments,
    checks its offset and time indexes against them, and decodes its __consumer_offsets records."""
    if subject() == "kafka":
        broker = KafkaProcess(tmp_path / "broker", classpath=java_classpath, overrides=broker_overrides)
    else:
        broker = BrokerProcess(tmp_path / "broker", overrides=broker_overrides)
    topic, group = "tl-dump", "tl-dump-group"
    with broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": "1048576"})])[topic].result(30)
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "batch.size": 16384})
        for i in range(3000):
            p.produce(topic, os.urandom(1000), key=str(i).encode())  # incompressible: 3 MB on disk
        assert p.flush(30) == 0
        commit(broker.bootstrap, group, [TopicPartition(topic, 0, 42)])
    # after a clean shutdown every file is complete
    log_dir = getattr(broker, "log_dir", broker.data_dir)
    files = sorted(str(f) for f in (log_dir / f"{topic}-0").iterdir() if f.suffix in (".log", ".index", ".timeindex"))
    assert len([f for f in files if f.endswith(".log")]) >= 3, "3 MB in 1 MiB segments"
    dumped = jvm.run_tool(java_classpath, "kafka-dump-log", "--files", ",".join(files), "--deep-iteration",
                          "--index-sanity-check")
    assert dumped.returncode == 0, dumped.stderr
    out = dumped.stdout
    batches = [line for line in out.splitlines() if line.startswith("baseOffset:")]
    assert batches and all("isvalid: true" in b for b in batches)
    offsets = [int(m) for m in re.findall(r"^\| offset: (\d+)", out, re.MULTILINE)]
    assert offsets == list(range(3000))
    checked = re.findall(r"^(\S+) passed sanity check\.$", out, re.MULTILINE)
    assert sorted(checked) == sorted(f for f in files if not f.endswith(".log")), out[-2000:]
    verified = jvm.run_tool(java_classpath, "kafka-dump-log", "--verify-index-only",
                            "--files", ",".join(f for f in files if not f.endswith(".log")))
    assert verified.returncode == 0, verified.stderr
    assert not re.search(r"[Mm]ismatch|out of order", verified.stdout), verified.stdout[-2000:]
    entries = [line for line in jvm.run_tool(java_classpath, "kafka-dump-log", "--files",
                                             ",".join(f for f in files if f.endswith(".index"))).stdout.splitlines()
               if line.startswith("offset:")]
    assert len(entries) >= 3_000_000 // 16384 // 2, "an offset-index entry per batch once 4 kB passed"

    partition = abs(java_string_hash(group)) % 50
    segment = log_dir / f"__consumer_offsets-{partition}" / "00000000000000000000.log"
    decoded = jvm.run_tool(java_classpath, "kafka-dump-log", "--files", segment, "--offsets-decoder").stdout
    commit_key = json.dumps({"type": "1", "data": {"group": group, "topic": topic, "partition": 0}},
                            separators=(",", ":"))
    commits = re.findall(r"key: (\S+) payload: (\S+)", decoded)
    assert [json.loads(v)["data"]["offset"] for k, v in commits if k == commit_key] == [42]
