"""Which request versions the clients in the tests negotiate with Tidelog, read from the broker's own
request metrics (``tidelog_requests_total{request, version}`` on /metrics).

One broker for every client. Each test runs one client's produce, consume in a group (with commits) and
admin calls (where the client has an admin API), small workloads (20 records), then takes the difference of
two scrapes: the (API, version) pairs this client's requests used. The clients run one after the other on
the module's broker (one xdist group), so each difference is one client's. Clients that know Kafka 4.4's
protocol must use Tidelog's newest version of every API they send (Java 4.4, franz-go); older ones are
pinned at what they top out at. docs/compat.md ("Clients and the versions they use") has the table.

Toolchains: Java + Maven (tests/java), Go (tests/go's driver), node + npm (tests/js); each test skips
without its toolchain as the other tests do (tests/toolchain.py). About 60-90 s on 2 cores, most of it
the JVM and the group rebalances.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from tests import toolchain
from tests.fixtures import FAST_GROUPS
from tests.integration.kafka_io import wait_for
from tidelog.protocol.api_keys import API_REGISTRY
from tidelog.protocol.messages import ApiVersionsRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("client-versions")]

#: the module's broker (tests/fixtures.py): a classic group's first rebalance after 300 ms, fast KIP-848 groups
BROKER_OVERRIDES = {"group.initial.rebalance.delay.ms": "300", "num.partitions": "2", **FAST_GROUPS}

COUNT = 20
Served = Counter  # (API name, version) -> requests


def scrape(broker: BrokerProcess) -> Served:
    assert broker.http_url is not None
    with urllib.request.urlopen(broker.http_url + "metrics", timeout=10) as r:
        text = r.read().decode()
    out: Served = Counter()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "tidelog_requests_total":
                out[s.labels["request"], int(s.labels["version"])] += int(s.value)
    return out


def served_while(broker: BrokerProcess, run: Callable[[], object]) -> dict[str, list[int]]:
    """The API versions the broker answered while ``run`` ran: API name -> sorted versions."""
    before = scrape(broker)
    run()
    after = scrape(broker)
    versions: dict[str, set[int]] = {}
    for (api, version), n in (after - before).items():
        if n > 0:
            versions.setdefault(api, set()).add(version)
    used = {api: sorted(v) for api, v in sorted(versions.items())}
    print(f"\nversions used: {used}")  # the table in docs/compat.md comes from these lines (pytest -s)
    return used


@pytest.fixture(scope="module")
def newest(broker: BrokerProcess) -> dict[str, int]:
    """API name -> the newest version Tidelog advertises in ApiVersions."""
    with WireClient.connect(broker.bootstrap) as c:
        r = c.request(ApiVersionsRequest(client_software_name="versions-test", client_software_version="1"), 3)
    assert r.error_code == 0
    return {API_REGISTRY[k.api_key].name: k.max_version for k in r.api_keys if k.api_key in API_REGISTRY}


def assert_newest(used: dict[str, list[int]], newest: dict[str, int], core: set[str],
                  older: dict[str, list[int]] | None = None) -> None:
    """Every API the client sent went at Tidelog's newest version (but for the client's own caps in
    ``older``: API -> the versions it sends), and it sent at least ``core``."""
    assert core <= set(used), f"missing {core - set(used)} in {used}"
    expected = {api: [newest[api]] for api in used}
    expected.update((api, versions) for api, versions in (older or {}).items() if api in used)
    assert used == expected, "(used) == (Tidelog's newest, but for the client's own caps)"


# --------------------------------------------------------------------------------------------- Python


def test_confluent_kafka_librdkafka(broker: BrokerProcess) -> None:
    topic = group = "versions-librdkafka"

    def run() -> None:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for i in range(COUNT):
            p.produce(topic, f"v{i}".encode(), key=f"k{i}".encode())
        assert p.flush(30) == 0
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "group.protocol": "consumer",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        got = 0
        try:
            c.subscribe([topic])
            deadline_polls = 600
            while got < COUNT and deadline_polls:
                deadline_polls -= 1
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    got += 1
            c.commit(asynchronous=False)
        finally:
            c.close()
        assert got == COUNT
        admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])[
            ConfigResource(ConfigResource.Type.TOPIC, topic)].result(30)
        admin.list_consumer_groups().result(30)
        admin.describe_consumer_groups([group])[group].result(30)

    used = served_while(broker, run)
    assert without_timing(used, LIBRDKAFKA) == LIBRDKAFKA


def test_kafka_python(broker: BrokerProcess) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KpNewTopic

    topic = group = "versions-kafka-python"

    def run() -> None:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_topics([KpNewTopic(topic, 2, 1)])
            p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
            for i in range(COUNT):
                p.send(topic, f"v{i}".encode(), key=f"k{i}".encode())
            p.flush(30)
            p.close()
            c = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                              auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=30000)
            got = 0
            for _ in c:
                got += 1
                if got == COUNT:
                    break
            c.commit()
            c.close()
            assert got == COUNT
            # kafka-python 3 names them list_groups / describe_groups, 2.x list_/describe_consumer_groups
            (getattr(admin, "list_groups", None) or admin.list_consumer_groups)()
            (getattr(admin, "describe_groups", None) or admin.describe_consumer_groups)([group])
        finally:
            admin.close()

    used = served_while(broker, run)
    assert without_timing(used, KAFKA_PYTHON) == KAFKA_PYTHON


def test_aiokafka(broker: BrokerProcess) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin import NewTopic as AioNewTopic

    topic = group = "versions-aiokafka"

    async def main() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([AioNewTopic(topic, 2, 1)])
            p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5)
            await p.start()
            try:
                for i in range(COUNT):
                    await p.send(topic, f"v{i}".encode(), key=f"k{i}".encode())
                await p.flush()
            finally:
                await p.stop()
            c = AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                                 auto_offset_reset="earliest", enable_auto_commit=False)
            await c.start()
            got = 0
            try:
                async with asyncio.timeout(60):
                    async for _ in c:
                        got += 1
                        if got == COUNT:
                            break
                await c.commit()
            finally:
                await c.stop()
            assert got == COUNT
            await admin.list_consumer_groups()
            await admin.describe_consumer_groups([group])
        finally:
            await admin.close()

    used = served_while(broker, lambda: asyncio.run(main()))
    assert without_timing(used, AIOKAFKA) == AIOKAFKA


# ----------------------------------------------------------------------------------------------- Java


@pytest.mark.parametrize("scenario", ["group-classic", "group-consumer", "admin"])
def test_java_clients_4_4(broker: BrokerProcess, newest: dict[str, int], java_classpath: str, scenario: str) -> None:
    """tests/java's ``tidelog.oracle.Clients`` scenarios, one JVM each: group-classic and group-consumer
    (an idempotent producer, two consumers of a classic or a KIP-848 group, commits), admin (one Admin
    call per step: topics, partitions, configs, records, groups)."""
    from tests.oracle import jvm

    done: list[subprocess.CompletedProcess[str]] = []
    used = served_while(broker, lambda: done.append(jvm.run_java(
        java_classpath, "tidelog.oracle.Clients", broker.bootstrap, "versions-java", scenario, timeout=600)))
    lines = jvm.json_lines(done[0].stdout)
    assert [line["scenario"] for line in lines] == [scenario], f"stderr:\n{done[0].stderr[-4000:]}"
    assert "error" not in lines[0], lines[0]
    # the Java client builds OffsetCommit / OffsetFetch by topic name (v9) but in its KIP-848 consumer,
    # which commits by topic id (v10); Tidelog advertises 10
    caps = {"group-classic": {"OffsetCommit": [9], "OffsetFetch": [9]},
            "group-consumer": {"OffsetFetch": [9, 10]},
            "admin": {"OffsetCommit": [9], "OffsetFetch": [9]}}[scenario]
    assert_newest(used, newest, JAVA_CORE[scenario], caps)


# ------------------------------------------------------------------------------------------------- Go


@pytest.fixture(scope="module")
def go_driver(broker: BrokerProcess):
    toolchain.require_command("go", "go")
    from tests.go import binary
    from tests.go.driver import GoClients

    try:
        return GoClients(binary.build(), broker.bootstrap)
    except binary.BuildError as e:
        failure = str(e)
    pytest.fail(failure, pytrace=False)


def go_produce_and_group(go, client: str, topic: str, produce: dict, group: dict) -> None:
    from tests.go.sample import sample_records

    results = go.produce(client, topic, sample_records(COUNT, 2), **produce)
    assert [r.get("error", "") for r in results if "producer_id" not in r] == [""] * COUNT
    member = go.member(client, topic, [topic], f"{client}-versions", **group)
    try:
        wait_for(lambda: len(member.records) >= COUNT, 60, f"{client} consumed {COUNT} records")
        member.close()
    finally:
        member.stop()
    assert member.errors() == []


def test_franz_go_uses_the_newest_versions(go_driver, broker: BrokerProcess, newest: dict[str, int]) -> None:
    topic = "versions-franz"

    def run() -> None:
        with go_driver.admin() as admin:
            assert admin.call("create_topics", topics=[topic], partitions=2)["topics"][topic]["error"] == ""
        go_produce_and_group(go_driver, "franz", topic, {"idempotent": True}, {"server_side": True})

    used = served_while(broker, run)
    assert_newest(used, newest, FRANZ_CORE)


def test_sarama(go_driver, broker: BrokerProcess) -> None:
    topic = "versions-sarama"
    # sarama's ClusterAdmin is not in tests/go's driver: the topic is made beforehand, outside the window
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)

    def run() -> None:
        go_produce_and_group(go_driver, "sarama", topic, {"version": "4.0.0"}, {"version": "4.0.0"})

    used = served_while(broker, run)
    assert without_timing(used, SARAMA) == SARAMA


# ----------------------------------------------------------------------------------------- JavaScript


def test_kafkajs(broker: BrokerProcess) -> None:
    toolchain.require_command("node", "node", "npm")
    from tests.js import deps

    try:
        node_modules = deps.install()
    except deps.InstallError as e:
        pytest.fail(str(e), pytrace=False)
    script = Path(__file__).resolve().parents[1] / "js" / "smoke.js"

    def run() -> None:
        proc = subprocess.run(["node", str(script), "--brokers", broker.bootstrap, "--topic", "versions-kafkajs",
                               "--count", str(COUNT)], capture_output=True, text=True, timeout=180,
                              env={**os.environ, "NODE_PATH": str(node_modules)})
        assert proc.returncode == 0, proc.stderr

    used = served_while(broker, run)
    assert without_timing(used, KAFKAJS) == KAFKAJS


# ----------------------------------------------------------------------------- what each client uses
# Measured against Tidelog (docs/compat.md, "Clients and the versions they use"). Heartbeat (classic groups)
# and OffsetForLeaderEpoch are sent or not depending on timing: compared only when a table names them.

TIMING = {"Heartbeat", "OffsetForLeaderEpoch"}


def without_timing(used: dict[str, list[int]], table: dict[str, list[int]]) -> dict[str, list[int]]:
    return {api: v for api, v in used.items() if api not in TIMING or api in table}


#: confluent-kafka 2.16 (librdkafka 2.x), KIP-848 consumer (group.protocol=consumer)
LIBRDKAFKA = {"ApiVersions": [3], "ConsumerGroupDescribe": [0], "ConsumerGroupHeartbeat": [1], "CreateTopics": [4],
              "DescribeConfigs": [1], "Fetch": [16], "FindCoordinator": [2], "ListGroups": [5], "ListOffsets": [7],
              "Metadata": [13], "OffsetCommit": [9], "OffsetFetch": [9], "Produce": [10]}
#: kafka-python 3.0 (idempotent producer by default: InitProducerId), classic group
KAFKA_PYTHON = {"ApiVersions": [4], "CreateTopics": [7], "DescribeGroups": [6], "Fetch": [12], "FindCoordinator": [6],
                "InitProducerId": [4], "JoinGroup": [7], "LeaveGroup": [5], "ListGroups": [5], "ListOffsets": [11],
                "Metadata": [13], "OffsetCommit": [8], "OffsetFetch": [8], "Produce": [9], "SyncGroup": [5]}
#: aiokafka 0.14, classic group
AIOKAFKA = {"ApiVersions": [0], "CreateTopics": [3], "DescribeGroups": [3], "Fetch": [11], "FindCoordinator": [1],
            "JoinGroup": [5], "LeaveGroup": [1], "ListGroups": [1], "ListOffsets": [3], "Metadata": [5],
            "OffsetCommit": [3], "OffsetFetch": [3], "Produce": [7], "SyncGroup": [3]}
#: kafka-clients 4.4 (tests/java), per scenario: the APIs it must send (all at Tidelog's newest, but its own caps)
JAVA_CORE = {
    "group-classic": {"ApiVersions", "ConsumerGroupDescribe", "CreateTopics", "DescribeGroups", "Fetch",
                      "FindCoordinator", "InitProducerId", "JoinGroup", "LeaveGroup", "ListGroups", "ListOffsets",
                      "Metadata", "OffsetCommit", "OffsetFetch", "Produce", "SyncGroup"},
    "group-consumer": {"ApiVersions", "ConsumerGroupDescribe", "ConsumerGroupHeartbeat", "CreateTopics", "Fetch",
                       "FindCoordinator", "InitProducerId", "ListGroups", "ListOffsets", "Metadata", "OffsetCommit",
                       "OffsetFetch", "Produce"},
    "admin": {"ApiVersions", "ConsumerGroupDescribe", "CreatePartitions", "CreateTopics", "DeleteGroups",
              "DeleteRecords", "DeleteTopics", "DescribeCluster", "DescribeConfigs", "DescribeGroups",
              "DescribeTopicPartitions", "FindCoordinator", "IncrementalAlterConfigs", "InitProducerId", "ListGroups",
              "ListOffsets", "Metadata", "OffsetCommit", "OffsetDelete", "OffsetFetch", "Produce"},
}
#: franz-go 1.22 (kgo, kadm), idempotent producer, KIP-848 group: all at Tidelog's newest
FRANZ_CORE = {"ApiVersions", "ConsumerGroupHeartbeat", "CreateTopics", "Fetch", "FindCoordinator", "InitProducerId",
              "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "Produce"}
#: sarama 1.61 with Config.Version 4.0.0, classic group
SARAMA = {"ApiVersions": [4], "Fetch": [12], "FindCoordinator": [3], "JoinGroup": [8], "LeaveGroup": [5],
          "ListOffsets": [6], "Metadata": [11], "OffsetCommit": [8], "OffsetFetch": [8], "Produce": [10],
          "SyncGroup": [5]}
#: kafkajs 2.2.4 (the same versions it reports itself: tests/js/test_kafkajs.py)
KAFKAJS = {"ApiVersions": [2], "CreateTopics": [3], "Fetch": [11], "FindCoordinator": [2], "JoinGroup": [5],
           "LeaveGroup": [3], "ListOffsets": [3], "Metadata": [6], "OffsetCommit": [5], "OffsetFetch": [4],
           "Produce": [7], "SyncGroup": [3]}
