"""The client-side ``tidelog`` commands (topics, produce, consume, perf), run as a user runs them:
``python -m tidelog ...`` subprocesses against a real broker. Also the example config/server.properties."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tidelog.config import (
    BROKER_CONFIGS,
    BROKER_SYNONYMS,
    TOPIC_CONFIGS,
    BrokerConfig,
    TopicConfig,
    parse_properties,
)
from tidelog.testing import BrokerProcess

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_PROPERTIES = REPO / "config" / "server.properties"


def tidelog(*args: str, stdin: bytes | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "tidelog", *args], input=stdin, capture_output=True,
                         timeout=timeout)
    return subprocess.CompletedProcess(out.args, out.returncode, out.stdout.decode("utf-8", "replace"),
                                       out.stderr.decode("utf-8", "replace"))


def at(broker: BrokerProcess, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return tidelog(*args, "--bootstrap-server", broker.bootstrap, stdin=stdin)


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------------ produce / consume


def test_produce_keys_and_headers_then_consume_as_json(broker: BrokerProcess) -> None:
    lines = b"k1:v1\nk2:value:with:colons\r\nk3:\n"
    out = at(broker, "produce", "cli-json", "--key-separator", ":", "--header", "source=test",
             "--header", "n=1", "--compression", "gzip", stdin=lines)
    assert out.returncode == 0, out.stderr
    assert "Delivered 3 record(s) to cli-json." in out.stderr
    out = at(broker, "consume", "cli-json", "--from-beginning", "--format", "json", "--max-messages", "3")
    assert out.returncode == 0, out.stderr
    records = json_lines(out.stdout)
    assert [(r["key"], r["value"]) for r in records] == [("k1", "v1"), ("k2", "value:with:colons"), ("k3", "")]
    assert [r["offset"] for r in records] == [0, 1, 2]
    first = records[0]
    assert first["topic"] == "cli-json" and first["partition"] == 0
    assert first["timestamp_type"] == "CreateTime" and abs(first["timestamp"] - time.time() * 1000) < 60_000
    assert first["headers"] == [{"key": "source", "value": "test"}, {"key": "n", "value": "1"}]
    assert "Consumed 3 record(s)." in out.stderr


def test_consume_text_with_and_without_keys(broker: BrokerProcess) -> None:
    assert at(broker, "produce", "cli-text", "--key-separator", "\t", stdin=b"a\t1\nb\t2\n").returncode == 0
    out = at(broker, "consume", "cli-text", "--from-beginning", "--max-messages", "2")
    assert out.returncode == 0 and out.stdout == "1\n2\n", out.stderr
    out = at(broker, "consume", "cli-text", "--from-beginning", "--max-messages", "2", "--print-key",
             "--key-separator", "=")
    assert out.returncode == 0 and out.stdout == "a=1\nb=2\n", out.stderr


def test_produce_from_file_binary_values_come_back_base64(broker: BrokerProcess, tmp_path: Path) -> None:
    data = tmp_path / "lines.bin"
    data.write_bytes(b"plain\n\xff\xfe\x00binary\n")
    out = at(broker, "produce", "cli-binary", "--file", str(data), "--acks", "1", "--partition", "0")
    assert out.returncode == 0, out.stderr
    records = json_lines(at(broker, "consume", "cli-binary", "--from-beginning", "--format", "json",
                            "--max-messages", "2").stdout)
    assert records[0]["value"] == "plain" and "value_encoding" not in records[0]
    assert records[1]["value_encoding"] == "base64" and records[1]["value"] == "//4AYmluYXJ5"
    assert records[0]["key"] is None and records[0]["headers"] == []


def test_line_without_key_separator_fails_and_exit_code_says_so(broker: BrokerProcess) -> None:
    out = at(broker, "produce", "cli-nosep", "--key-separator", ":", stdin=b"k:v\nnoseparator\n")
    assert out.returncode == 1
    assert "line 2: no key separator" in out.stderr and "Delivered 1 record(s) to cli-nosep; 1 failed." in out.stderr


def test_start_positions_beginning_offset_timestamp_and_latest(broker: BrokerProcess) -> None:
    topic = "cli-positions"
    assert at(broker, "produce", topic, stdin=b"a0\na1\na2\n").returncode == 0
    time.sleep(0.05)
    boundary_ms = int(time.time() * 1000)
    time.sleep(0.05)
    assert at(broker, "produce", topic, stdin=b"b3\nb4\n").returncode == 0

    everything = at(broker, "consume", topic, "--from-beginning", "--max-messages", "5")
    assert everything.stdout.split() == ["a0", "a1", "a2", "b3", "b4"]
    by_offset = at(broker, "consume", topic, "--offset", "3", "--partition", "0", "--max-messages", "2")
    assert by_offset.returncode == 0 and by_offset.stdout.split() == ["b3", "b4"]
    by_ms = at(broker, "consume", topic, "--timestamp", str(boundary_ms), "--timeout-ms", "1500")
    assert by_ms.returncode == 0 and by_ms.stdout.split() == ["b3", "b4"], by_ms.stderr
    iso = datetime.fromtimestamp(boundary_ms / 1000, tz=UTC).isoformat()
    by_iso = at(broker, "consume", topic, "--timestamp", iso, "--max-messages", "1", "--format", "json")
    assert [r["offset"] for r in json_lines(by_iso.stdout)] == [3]
    started = time.monotonic()
    latest = at(broker, "consume", topic, "--timeout-ms", "1000")
    assert latest.returncode == 0 and latest.stdout == "" and "Consumed 0 record(s)." in latest.stderr
    assert time.monotonic() - started < 10


def test_missing_topic_and_missing_partition(broker: BrokerProcess) -> None:
    out = at(broker, "consume", "cli-no-such-topic", "--from-beginning", "--timeout-ms", "1000")
    assert out.returncode == 1 and "topic 'cli-no-such-topic' does not exist" in out.stderr
    assert at(broker, "produce", "cli-one-partition", stdin=b"x\n").returncode == 0
    out = at(broker, "produce", "cli-one-partition", "--partition", "5", stdin=b"x\n")
    assert out.returncode == 1 and "there is no partition 5" in out.stderr
    out = at(broker, "topics", "describe", "cli-no-such-topic")
    assert out.returncode == 1 and "does not exist" in out.stderr


def test_unreachable_broker_is_one_line_and_exit_1_within_seconds() -> None:
    address = f"127.0.0.1:{closed_port()}"
    commands = {
        "tidelog topics list": ["topics", "list"],
        "tidelog consume": ["consume", "t", "--from-beginning"],
        "tidelog produce": ["produce", "t"],
        "tidelog perf produce": ["perf", "produce", "--topic", "t", "--num-records", "10", "--record-size", "10"],
    }
    started = time.monotonic()
    procs = {prog: subprocess.Popen([sys.executable, "-m", "tidelog", *cmd, "--bootstrap-server", address],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
             for prog, cmd in commands.items()}
    for prog, proc in procs.items():
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 1, (prog, stderr)
        assert stderr.splitlines() == [f"{prog}: cannot reach the broker at {address}"]
    assert time.monotonic() - started < 10


def test_bad_arguments_exit_2_with_the_commands_usage() -> None:
    """The whole sweep runs in-process (tests/unit/test_cli.py); this checks a real process end to end."""
    cases = {
        ("topics", "create", "t", "--partitions", "0"): "tidelog topics create",
        ("consume", "t", "--no-such-option"): "tidelog consume",
        ("topics",): "tidelog topics",
    }
    for cmd, prog in cases.items():
        out = tidelog(*cmd)
        assert out.returncode == 2, (cmd, out.stderr)
        lines = out.stderr.splitlines()
        assert lines[0].startswith(f"usage: {prog} ") and lines[-1].startswith(f"{prog}: error: "), cmd
        assert "Traceback" not in out.stderr


def test_help_texts_name_every_action_and_option() -> None:
    top = tidelog("--help").stdout
    assert all(word in top for word in ("topics", "produce", "consume", "perf", "serve", "offsets", "configs",
                                        "cluster", "groups", "--bootstrap-server", "TIDELOG_BOOTSTRAP_SERVERS"))
    topics = tidelog("topics", "--help").stdout
    assert all(word in topics for word in ("create", "list", "describe", "alter", "trim", "delete-records",
                                           "delete", "alter-config"))
    consume = tidelog("consume", "--help").stdout
    assert all(opt in consume for opt in ("--from-beginning", "--offset", "--timestamp", "--partition",
                                          "--max-messages", "--format", "--group", "--timeout-ms",
                                          "--bootstrap-server"))
    produce = tidelog("produce", "--help").stdout
    assert all(opt in produce for opt in ("--file", "--key-separator", "--header", "--compression", "--acks"))
    perf = tidelog("perf", "produce", "--help").stdout
    assert all(opt in perf for opt in ("--num-records", "--record-size", "--throughput", "--producer-prop"))


# ------------------------------------------------------------------------------------------ topics


def test_topics_create_list_describe_alter_delete(broker: BrokerProcess) -> None:
    out = at(broker, "topics", "create", "cli-admin", "--partitions", "3", "--replication-factor", "1",
             "--config", "retention.ms=3600000")
    assert out.returncode == 0 and "Created topic cli-admin." in out.stdout, out.stderr
    again = at(broker, "topics", "create", "cli-admin")
    assert again.returncode == 1 and "already exists" in again.stderr
    assert at(broker, "topics", "create", "cli-admin", "--if-not-exists").returncode == 0
    assert "cli-admin" in at(broker, "topics", "list").stdout.split()

    described = at(broker, "topics", "describe", "cli-admin")
    assert described.returncode == 0, described.stderr
    head, *partitions = described.stdout.splitlines()
    assert "PartitionCount: 3" in head and "ReplicationFactor: 1" in head
    assert re.search(r"TopicId: [A-Za-z0-9_-]{22}\b", head)
    assert head.endswith("Configs: retention.ms=3600000")
    assert [re.search(r"Partition: (\d+)", p).group(1) for p in partitions] == ["0", "1", "2"]
    assert all("Leader: 0" in p and "Replicas: 0" in p and "Isr: 0" in p for p in partitions)

    altered = at(broker, "topics", "alter-config", "cli-admin", "--set", "segment.bytes=1048576",
                 "--delete", "retention.ms")
    assert altered.returncode == 0, altered.stderr
    head = at(broker, "topics", "describe", "cli-admin").stdout.splitlines()[0]
    assert head.endswith("Configs: segment.bytes=1048576")
    bad = at(broker, "topics", "alter-config", "cli-admin", "--set", "segment.bytes=banana")
    assert bad.returncode == 1 and "segment.bytes" in bad.stderr

    deleted = at(broker, "topics", "delete", "cli-admin")
    assert deleted.returncode == 0 and "Deleted topic cli-admin." in deleted.stdout, deleted.stderr
    assert "cli-admin" not in at(broker, "topics", "list").stdout.split()
    missing = at(broker, "topics", "delete", "cli-admin")
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    assert at(broker, "topics", "delete", "cli-admin", "--if-exists").returncode == 0


def test_topics_list_and_describe_existing_topic(broker: BrokerProcess) -> None:
    assert at(broker, "produce", "cli-listed", stdin=b"x\n").returncode == 0
    listed = at(broker, "topics", "list")
    assert listed.returncode == 0 and "cli-listed" in listed.stdout.splitlines()


# ------------------------------------------------------------------------------------------ perf

_FIGURES = re.compile(
    r"^(\d+) records (sent|consumed) in [\d.]+ s, ([\d.]+) records/s \(([\d.]+) MB/s\), latency avg ([\d.]+) ms, "
    r"p50 ([\d.]+) ms, p95 ([\d.]+) ms, p99 ([\d.]+) ms, max ([\d.]+) ms$"
)


def test_perf_produce_and_consume_print_the_figures(broker: BrokerProcess) -> None:
    out = at(broker, "perf", "produce", "--topic", "cli-perf", "--num-records", "2000", "--record-size", "100",
             "--producer-prop", "linger.ms=1")
    assert out.returncode == 0, out.stderr
    m = _FIGURES.match(out.stdout.strip())
    assert m, out.stdout
    assert m.group(1) == "2000" and float(m.group(3)) > 0 and float(m.group(4)) > 0
    avg, p50, p95, p99, top = (float(m.group(i)) for i in range(5, 10))
    assert 0 < p50 <= p95 <= p99 <= top and avg <= top

    out = at(broker, "perf", "consume", "--topic", "cli-perf", "--messages", "2000")
    assert out.returncode == 0, out.stderr
    m = _FIGURES.match(out.stdout.strip())
    assert m and m.group(1) == "2000" and m.group(2) == "consumed", out.stdout

    # librdkafka takes about 0.5 s to its first fetched record: leave it more than that.
    short = at(broker, "perf", "consume", "--topic", "cli-perf", "--messages", "5000", "--timeout-ms", "1500")
    assert short.returncode == 1 and "only 2000 of 5000 records" in short.stderr


def test_perf_produce_throughput_cap_is_respected(broker: BrokerProcess) -> None:
    out = at(broker, "perf", "produce", "--topic", "cli-perf-rate", "--num-records", "300", "--record-size", "10",
             "--throughput", "500")
    assert out.returncode == 0, out.stderr
    m = _FIGURES.match(out.stdout.strip())
    assert m and float(m.group(3)) < 600, out.stdout


# ------------------------------------------------------------------------------------------ server.properties


#: Properties the example shows with an example address or value, not their (empty) default.
EXAMPLE_ADDRESSES = frozenset({"advertised.listeners", "tubemq.master.listener", "tubemq.broker.listener",
                               "tubemq.broker.advertised.listener", "authorizer.class.name", "super.users"})


def test_example_properties_lists_every_supported_key_with_its_default() -> None:
    text = EXAMPLE_PROPERTIES.read_text(encoding="utf-8")
    commented = dict(re.findall(r"^#([a-z][\w.]*)=(.*)$", text, re.M))
    active = parse_properties(text)
    assert set(active) == {"listeners", "log.dirs"}
    assert set(BROKER_CONFIGS) | set(BROKER_SYNONYMS) <= set(commented) | set(active)
    for key, raw in commented.items():
        d = BROKER_CONFIGS.get(key) or (TOPIC_CONFIGS[BROKER_SYNONYMS[key]] if key in BROKER_SYNONYMS else None)
        if d is not None and key not in EXAMPLE_ADDRESSES:
            assert d.parse(key, raw) == d.default, key
    # Uncommenting every line changes nothing and every key is one the broker knows.
    config = BrokerConfig.from_props({**commented, **active})
    assert config.unknown == ()
    assert config.topic_defaults == TopicConfig()


def test_serve_starts_with_the_example_properties(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tidelog", "serve", str(EXAMPLE_PROPERTIES), "--port", "0",
         "--data-dir", str(tmp_path / "data"), "--override", "metrics.listener=http://127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.startswith("tidelog console: "):
            line = proc.stdout.readline()
        m = re.search(r"listening on (\S+):(\d+)", line)
        assert m, line
        host = "localhost" if m.group(1) in ("localhost", "0.0.0.0") else m.group(1)
        bootstrap = f"{host}:{m.group(2)}"
        assert tidelog("produce", "cli-props", "--bootstrap-server", bootstrap, stdin=b"hello\n").returncode == 0
        out = tidelog("consume", "cli-props", "--from-beginning", "--max-messages", "1",
                      "--bootstrap-server", bootstrap)
        assert out.stdout == "hello\n", out.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


# ------------------------------------------------------------------------------------------ where and what


def test_bootstrap_server_before_or_after_the_command_or_from_the_environment(broker: BrokerProcess) -> None:
    assert at(broker, "produce", "cli-where", stdin=b"x\n").returncode == 0
    nowhere = f"127.0.0.1:{closed_port()}"
    here = broker.bootstrap
    runs = {  # how: (arguments, $TIDELOG_BOOTSTRAP_SERVERS or None)
        "before": (["--bootstrap-server", here, "topics", "list"], None),
        "after": (["topics", "list", "--bootstrap-server", here], None),
        "environment": (["topics", "list"], here),
        # The option wins over the environment, and after the command over before it.
        "option over environment": (["topics", "list", "--bootstrap-server", here], nowhere),
        "after over before": (["--bootstrap-server", nowhere, "topics", "list", "--bootstrap-server", here], None),
        "environment, nowhere": (["topics", "list"], nowhere),
    }
    env = {k: v for k, v in os.environ.items() if k != "TIDELOG_BOOTSTRAP_SERVERS"}
    procs = {how: subprocess.Popen([sys.executable, "-m", "tidelog", *args], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True,
                                   env=env if var is None else {**env, "TIDELOG_BOOTSTRAP_SERVERS": var})
             for how, (args, var) in runs.items()}
    for how, proc in procs.items():
        out, err = proc.communicate(timeout=60)
        if how == "environment, nowhere":
            assert proc.returncode == 1 and err.strip() == f"tidelog topics list: cannot reach the broker at {nowhere}"
            continue
        assert proc.returncode == 0, (how, err)
        assert "cli-where" in out.split(), how


def test_topic_option_where_kafkas_tools_take_it(broker: BrokerProcess) -> None:
    out = at(broker, "topics", "create", "--topic", "cli-named", "--partitions", "2")
    assert out.returncode == 0 and "Created topic cli-named." in out.stdout, out.stderr
    assert at(broker, "produce", "--topic", "cli-named", "--partition", "1", stdin=b"by-option\n").returncode == 0
    out = at(broker, "consume", "--topic", "cli-named", "--from-beginning", "--max-messages", "1")
    assert out.returncode == 0 and out.stdout == "by-option\n", out.stderr
    out = at(broker, "topics", "describe", "--topic", "cli-named")
    assert out.returncode == 0 and "PartitionCount: 2" in out.stdout, out.stderr
    out = at(broker, "topics", "delete", "--topic", "cli-named")
    assert out.returncode == 0 and "Deleted topic cli-named." in out.stdout, out.stderr
    out = at(broker, "consume", "cli-a", "--topic", "cli-b")
    assert out.returncode == 2 and "two topics given" in out.stderr


# ------------------------------------------------------------------------------------------ partitioning


def java_murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (MurmurHash2, seed 0x9747b28c), written here from the algorithm: the
    32-bit hash as an unsigned int."""
    m, r, mask = 0x5BD1E995, 24, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & mask
        k ^= k >> r
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    rest = data[whole:]
    if len(rest) >= 3:
        h ^= rest[2] << 16
    if len(rest) >= 2:
        h ^= rest[1] << 8
    if rest:
        h ^= rest[0]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    return h ^ (h >> 15)


def java_partition(key: bytes, partitions: int) -> int:
    """The Java client's partition for a keyed record: ``toPositive(murmur2(key)) % partitions``."""
    return (java_murmur2(key) & 0x7FFFFFFF) % partitions


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python loads its schemas with an old API
def test_java_murmur2_matches_kafkas_published_values_and_kafka_python() -> None:
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

    def signed(h: int) -> int:
        return h - (1 << 32) if h >= 1 << 31 else h

    # Values from Kafka's own UtilsTest.testMurmur2 (signed Java ints).
    assert signed(java_murmur2(b"21")) == -973932308
    assert signed(java_murmur2(b"foobar")) == -790332482
    assert signed(java_murmur2(b"a-little-bit-long-string")) == -985981536
    assert signed(java_murmur2(b"a-little-bit-longer-string")) == -1486304829
    assert signed(java_murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8")) == -58897971
    assert signed(java_murmur2(b"abc")) == 479470107
    for i in range(200):
        key = f"key-{i}".encode() * (i % 3 + 1)
        assert java_murmur2(key) == kafka_python_murmur2(key) & 0xFFFFFFFF, key


def test_produce_puts_a_key_where_the_java_client_would(broker: BrokerProcess) -> None:
    partitions = 7
    assert at(broker, "topics", "create", "cli-keyed", "--partitions", str(partitions)).returncode == 0
    keys = [f"user-{i}" for i in range(60)] + ["", "ü-ñ-ö", "a", "ab", "abc", "abcd", "abcde"]
    lines = "".join(f"{k}\t{i}\n" for i, k in enumerate(keys)).encode()
    out = at(broker, "produce", "cli-keyed", "--key-separator", "\t", stdin=lines)
    assert out.returncode == 0, out.stderr
    records = json_lines(at(broker, "consume", "cli-keyed", "--from-beginning", "--format", "json",
                            "--max-messages", str(len(keys))).stdout)
    placed = {r["key"]: r["partition"] for r in records}
    assert len(placed) == len(keys)
    expected = {k: java_partition(k.encode(), partitions) for k in keys if k}
    assert {k: p for k, p in placed.items() if k} == expected
    assert len(set(expected.values())) == partitions  # the keys spread over every partition
