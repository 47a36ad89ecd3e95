"""The operator commands of ``tidelog`` against a real broker: ``topics alter | trim | delete-records |
describe | list``, ``configs``, ``offsets`` and ``cluster info``, run as ``python -m tidelog``
subprocesses. What they print is checked against the broker's state read independently (confluent-kafka's
admin client, the data files, Tidelog's test wire client), never against the CLI's own code."""

from __future__ import annotations

import logging
import subprocess
import sys
from datetime import UTC, datetime

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    OffsetSpec,
    ResourceType,
)

from tests.integration import kafka_io
from tidelog.protocol.messages import ApiVersionsRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

BASE_MS = int(datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC).timestamp() * 1000)  # record i: BASE_MS + i s
_QUIET = logging.getLogger("test_cli_admin.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def tidelog(b: BrokerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", *args, "--bootstrap-server", b.bootstrap],
                          capture_output=True, text=True, timeout=60)


def table(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def admin(b: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap, "logger": _QUIET})


def create(b: BrokerProcess, topic: str, partitions: int, records: dict[int, int] | None = None,
           config: dict[str, str] | None = None) -> None:
    """Create ``topic`` and write ``records[p]`` records to partition p, record i stamped BASE_MS + i s."""
    kafka_io.create_topic(admin(b), topic, partitions, config)
    written = [(partition, i) for partition, count in (records or {}).items() for i in range(count)]
    kafka_io.produce(b, topic, [f"{partition}-{i}" for partition, i in written],
                     partition=[partition for partition, _ in written],
                     timestamp_ms=[BASE_MS + i * 1000 for _, i in written], config={"logger": _QUIET})


def earliest(b: BrokerProcess, topic: str, partitions: int) -> dict[int, int]:
    client = admin(b)
    futures = client.list_offsets({TopicPartition(topic, p): OffsetSpec.earliest() for p in range(partitions)})
    return {tp.partition: f.result(15).offset for tp, f in futures.items()}


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


# ------------------------------------------------------------------------------------------ topics alter


def test_alter_adds_partitions(broker: BrokerProcess) -> None:
    create(broker, "grow", 2)
    out = tidelog(broker, "topics", "alter", "--topic", "grow", "--partitions", "5")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Topic grow now has 5 partitions (was 2)."
    assert len(admin(broker).list_topics("grow", timeout=10).topics["grow"].partitions) == 5
    out = tidelog(broker, "topics", "alter", "grow", "--partitions", "3")
    assert out.returncode == 1 and "has 5 partition(s)" in out.stderr and out.stdout == ""
    out = tidelog(broker, "topics", "alter", "no-such-topic", "--partitions", "3")
    assert out.returncode == 1 and "topic 'no-such-topic' does not exist" in out.stderr


# ------------------------------------------------------------------------------------------ trim


def test_trim_and_delete_records_move_the_low_watermark(broker: BrokerProcess) -> None:
    create(broker, "trimmed", 3, {0: 10, 1: 10, 2: 10})

    out = tidelog(broker, "topics", "trim", "trimmed", "--offset", "4", "--partitions", "0")
    assert out.returncode == 0, out.stderr
    assert table(out.stdout) == [["TOPIC", "PARTITION", "LOW-WATERMARK"], ["trimmed", "0", "4"]]

    out = tidelog(broker, "topics", "delete-records", "--topic", "trimmed", "--offset", "1:7,2:end")
    assert out.returncode == 0, out.stderr
    assert table(out.stdout)[1:] == [["trimmed", "1", "7"], ["trimmed", "2", "10"]]

    # Before a time: the first record stamped at or after BASE + 6 s is offset 6.
    out = tidelog(broker, "topics", "trim", "trimmed", "--before", iso(BASE_MS + 6000), "--partitions", "0")
    assert out.returncode == 0, out.stderr
    assert table(out.stdout)[1:] == [["trimmed", "0", "6"]]
    assert earliest(broker, "trimmed", 3) == {0: 6, 1: 7, 2: 10}

    # Readers start at the new low watermark.
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "trim-reader", "logger": _QUIET,
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("trimmed", 1, -2)])  # OFFSET_BEGINNING
        m = c.poll(10)
        assert m is not None and m.error() is None and (m.offset(), m.value()) == (7, b"1-7")
    finally:
        c.close()

    out = tidelog(broker, "topics", "trim", "trimmed", "--offset", "99", "--partitions", "1")
    assert out.returncode == 1 and out.stdout == ""
    assert "cannot delete the records of trimmed-1 before 99" in out.stderr and "OFFSET_OUT_OF_RANGE" in out.stderr
    out = tidelog(broker, "topics", "trim", "trimmed", "--offset", "1", "--partitions", "3")
    assert out.returncode == 1 and "there is no partition 3" in out.stderr

    # A time after every record: everything goes.
    out = tidelog(broker, "topics", "trim", "trimmed", "--before", iso(BASE_MS + 3_600_000))
    assert out.returncode == 0, out.stderr
    assert earliest(broker, "trimmed", 3) == {0: 10, 1: 10, 2: 10}


# ------------------------------------------------------------------------------------------ describe


def test_describe_shows_offsets_sizes_and_configs(broker: BrokerProcess) -> None:
    create(broker, "described", 2, {0: 5, 1: 3}, config={"retention.ms": "3600000"})
    assert tidelog(broker, "topics", "trim", "described", "--offset", "0:2").returncode == 0

    out = tidelog(broker, "topics", "describe", "--topic", "described")
    assert out.returncode == 0, out.stderr
    head, *partitions = out.stdout.splitlines()
    assert head.startswith("Topic: described\t") and head.endswith("Configs: retention.ms=3600000")
    fields = [dict(f.split(": ", 1) for f in line.strip().split("\t")) for line in partitions]
    assert [(f["Partition"], f["Leader"], f["LogStartOffset"], f["HighWatermark"]) for f in fields] == [
        ("0", "0", "2", "5"), ("1", "0", "0", "3")]
    for f in fields:  # bytes on disk: the partition's segment files
        on_disk = sum(p.stat().st_size for p in (broker.data_dir / f"described-{f['Partition']}").glob("*.log"))
        assert int(f["Size"]) == on_disk > 0

    out = tidelog(broker, "topics", "describe", "described", "--all")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:3] == [head, *partitions]
    header, *rows = [line.split() for line in lines[3:]]
    assert header == ["NAME", "VALUE", "SOURCE", "DEFAULT", "READ-ONLY"]
    shown = {r[0]: r for r in rows}
    client = admin(broker)
    resource = ConfigResource(ResourceType.TOPIC, "described")
    entries = client.describe_configs([resource])[resource].result(15)
    assert set(shown) == set(entries)  # every effective config
    for name, entry in entries.items():
        assert shown[name][1] == entry.value, name
        assert shown[name][2] == ConfigSource(entry.source).name, name
    assert shown["retention.ms"][1:4] == ["3600000", "DYNAMIC_TOPIC_CONFIG", "log.retention.hours=168"]
    assert shown["cleanup.policy"][1:4] == ["delete", "DEFAULT_CONFIG", "delete"]

    out = tidelog(broker, "topics", "describe", "described", "no-such-topic")
    assert out.returncode == 1 and "topic 'no-such-topic' does not exist" in out.stderr and out.stdout == ""


def test_topics_list_and_describe_mark_or_exclude_internal_topics(broker: BrokerProcess) -> None:
    create(broker, "plain", 1, {0: 1})
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "makes-offsets-topic", "logger": _QUIET})
    try:  # a commit creates __consumer_offsets
        c.commit(offsets=[TopicPartition("plain", 0, 1)], asynchronous=False)
    finally:
        c.close()
    listed = tidelog(broker, "topics", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert "__consumer_offsets (internal)" in lines and "plain" in lines
    excluded = tidelog(broker, "topics", "list", "--exclude-internal").stdout.splitlines()
    assert "plain" in excluded and not any(name.startswith("__consumer_offsets") for name in excluded)
    assert excluded == [line for line in lines if not line.endswith(" (internal)")]
    described = tidelog(broker, "topics", "describe", "--exclude-internal")
    assert described.returncode == 0 and "Topic: plain\t" in described.stdout
    assert "__consumer_offsets" not in described.stdout


# ------------------------------------------------------------------------------------------ configs


def broker_config(b: BrokerProcess, name: str) -> tuple[str | None, int]:
    client = admin(b)
    resource = ConfigResource(ResourceType.BROKER, "0")
    entry = client.describe_configs([resource])[resource].result(15)[name]
    return entry.value, int(entry.source)


def test_configs_describe_and_alter_brokers_and_topics(broker: BrokerProcess) -> None:
    out = tidelog(broker, "configs", "alter", "--entity-type", "brokers", "--entity-name", "0",
                  "--add-config", "log.retention.ms=7200000,log.cleanup.policy=[delete,compact]")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("Updated the configs of broker 0: set log.retention.ms=7200000, "
                                  "set log.cleanup.policy=delete,compact.")
    assert broker_config(broker, "log.retention.ms") == ("7200000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    try:
        out = tidelog(broker, "configs", "describe", "--broker", "0")
        assert out.returncode == 0, out.stderr
        assert table(out.stdout) == [
            ["Dynamic", "configs", "for", "broker", "0:"],
            ["NAME", "VALUE", "SOURCE", "DEFAULT", "READ-ONLY"],
            ["log.cleanup.policy", "compact,delete", "DYNAMIC_BROKER_CONFIG", "delete", "false"],
            ["log.retention.ms", "7200000", "DYNAMIC_BROKER_CONFIG", "log.retention.hours=168", "false"],
        ]
        every = {r[0]: r for r in table(tidelog(broker, "configs", "describe", "--broker", "0", "--all").stdout)[2:]}
        assert every["num.partitions"][1:] == ["1", "DEFAULT_CONFIG", "1", "true"]
        assert every["log.retention.ms"][1:3] == ["7200000", "DYNAMIC_BROKER_CONFIG"]
    finally:
        out = tidelog(broker, "configs", "alter", "--broker", "0", "--delete-config", "log.retention.ms,log.cleanup.policy")
        assert out.returncode == 0, out.stderr
    assert broker_config(broker, "log.retention.ms")[1] != ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert "log.retention.ms" not in tidelog(broker, "configs", "describe", "--broker", "0").stdout

    create(broker, "configured", 1)
    out = tidelog(broker, "configs", "alter", "--topic", "configured", "--add-config", "segment.bytes=1048576",
                  "--add-config", "cleanup.policy=[compact,delete]")
    assert out.returncode == 0, out.stderr
    rows = table(tidelog(broker, "configs", "describe", "--entity-type", "topics", "--entity-name", "configured").stdout)
    assert rows[2:] == [["cleanup.policy", "compact,delete", "DYNAMIC_TOPIC_CONFIG", "log.cleanup.policy=delete", "false"],
                        ["segment.bytes", "1048576", "DYNAMIC_TOPIC_CONFIG", "log.segment.bytes=1073741824", "false"]]

    bad = tidelog(broker, "configs", "alter", "--topic", "configured", "--add-config", "segment.bytes=banana")
    assert bad.returncode == 1 and "segment.bytes" in bad.stderr and bad.stdout == ""
    missing = tidelog(broker, "configs", "describe", "--topic", "no-such-topic")
    assert missing.returncode == 1 and "topic 'no-such-topic' does not exist" in missing.stderr
    stranger = tidelog(broker, "configs", "describe", "--broker", "7")
    assert stranger.returncode == 1 and "broker 7 is not in the cluster (brokers: 0)" in stranger.stderr


# ------------------------------------------------------------------------------------------ offsets


def test_offsets_like_kafka_get_offsets(broker: BrokerProcess) -> None:
    create(broker, "offsets-a", 2, {0: 4, 1: 2})
    create(broker, "offsets-b", 1, {0: 1})

    def offsets(*args: str) -> list[str]:
        out = tidelog(broker, "offsets", *args)
        assert out.returncode == 0, (args, out.stderr)
        return out.stdout.splitlines()

    assert offsets("--topic", "offsets-a") == ["offsets-a:0:4", "offsets-a:1:2"]
    assert offsets("offsets-a", "--time", "earliest") == offsets("--topic", "offsets-a", "--time", "-2") == [
        "offsets-a:0:0", "offsets-a:1:0"]
    # The first record at or after BASE + 1.5 s: offset 2 in partition 0; none in partition 1 (left out).
    assert offsets("--topic", "offsets-a", "--time", str(BASE_MS + 1500)) == ["offsets-a:0:2"]
    assert offsets("--topic", "offsets-a", "--time", "max-timestamp") == ["offsets-a:0:3", "offsets-a:1:1"]
    assert offsets("--topic", "offsets-.*", "--partitions", "0") == ["offsets-a:0:4", "offsets-b:0:1"]
    assert offsets("--topic", "offsets-a", "--partitions", "1-5") == ["offsets-a:1:2"]
    everything = offsets()
    assert {"offsets-a:0:4", "offsets-b:0:1"} <= set(everything)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "offsets-internal", "logger": _QUIET})
    try:
        c.commit(offsets=[TopicPartition("offsets-b", 0, 1)], asynchronous=False)
    finally:
        c.close()
    assert any(line.startswith("__consumer_offsets:") for line in offsets())
    assert not any(line.startswith("__consumer_offsets:") for line in offsets("--exclude-internal-topics"))

    out = tidelog(broker, "offsets", "--topic", "no-such-.*")
    assert out.returncode == 1 and "no topic matching 'no-such-.*' exists" in out.stderr


# ------------------------------------------------------------------------------------------ cluster info


def test_cluster_info_names_the_cluster_its_brokers_and_their_apis(broker: BrokerProcess) -> None:
    out = tidelog(broker, "cluster", "info")
    assert out.returncode == 0, out.stderr
    client = admin(broker)  # the future needs its client alive
    described = client.describe_cluster().result(15)
    head, api_part = out.stdout.split("\n\n", 1)
    assert head.splitlines() == [
        f"Cluster ID: {described.cluster_id}",
        f"Controller: 0 ({broker.bootstrap})",
        "ID  HOST:PORT" + " " * (len(broker.bootstrap) - len("HOST:PORT") + 2) + "RACK",
        f"0   {broker.bootstrap}  -",
    ]
    title, *apis = api_part.splitlines()
    assert title == f"API versions of broker 0 at {broker.bootstrap}:"
    with WireClient.connect(broker.bootstrap) as client:  # what the broker says, asked independently
        response = client.request(ApiVersionsRequest(), 0)
    served = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    shown = {}
    for line in apis:
        name_key, _, versions = line.strip().partition(": ")
        key = int(name_key[name_key.index("(") + 1:-1])
        low, _, high = versions.partition(" to ")
        shown[key] = (int(low), int(high))
    assert shown == served
    assert "\tProduce(0): 0 to " in api_part and "\tApiVersions(18): 0 to " in api_part

    out = tidelog(broker, "cluster", "info", "--no-api-versions")
    assert out.returncode == 0 and out.stdout == head + "\n"
