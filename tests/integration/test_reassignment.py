"""Partition reassignment (AlterPartitionReassignments / ListPartitionReassignments, KIP-455) with a
real ZooKeeper and three ``tidelog serve`` processes: a partition with data moves to another broker
(its log arrives byte for byte and the old one is deleted), its leader moves under an idempotent
acks=all producer without losing or duplicating a record, the replication factor goes 1 -> 3 -> 2
with the leader moved off, a reassignment waiting for a paused broker is listed, cancelled, and
completed by a new controller after the old one stops; Kafka's errors; ``tidelog cluster reassign``
(generate, execute, verify, list, cancel, rollback) with kafka-reassign-partitions.sh's files, and Kafka's own
kafka-reassign-partitions.sh (needs the oracle's Java toolchain). About 60 s.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kazoo.exceptions import NoNodeError

from tests.integration import kafka_io
from tidelog.cli.main import main
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
)
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster")]

CHROOT = "/tidelog-reassign"
SESSION_MS = 6000
#: Upper bound of every wait: generous, for a loaded 2-core machine (a wait returns as soon as it is met).
WAIT = 60.0


#: The module's cluster (conftest.py); after the test (passed or not) every broker runs again and no
#: reassignment is left in progress (or the next test gets a new cluster): a failing test fails alone.
CLUSTER = {"chroot": CHROOT, "session_ms": SESSION_MS,
           "overrides": {"replica.lag.time.max.ms": "3000", "replica.fetch.backoff.ms": "200",
                         "offsets.topic.replication.factor": "1"}}
CLUSTER_RESTORED = True


def alter(cluster: LocalCluster, via: int, topic: str, targets: dict[int, list[int] | None], *,
          version: int = 1, allow_rf_change: bool = True) -> dict[int, tuple[ErrorCode, str | None]]:
    R = AlterPartitionReassignmentsRequest
    request = R(timeout_ms=10_000, allow_replication_factor_change=allow_rf_change, topics=[
        R.ReassignableTopic(name=topic, partitions=[R.ReassignablePartition(partition_index=p, replicas=r)
                                                    for p, r in targets.items()])])
    with WireClient.connect(cluster.brokers[via].bootstrap) as client:
        response = client.request(request, version)
    assert response.error_code == 0
    (t,) = response.responses
    return {p.partition_index: (ErrorCode(p.error_code), p.error_message) for p in t.partitions}


def listing(cluster: LocalCluster, via: int, topics: dict[str, list[int]] | None = None) -> dict:
    R = ListPartitionReassignmentsRequest
    request = R(topics=None if topics is None else [R.ListPartitionReassignmentsTopics(name=n, partition_indexes=ps)
                                                    for n, ps in topics.items()])
    with WireClient.connect(cluster.brokers[via].bootstrap) as client:
        response = client.request(request, 0)
    assert response.error_code == 0
    return {(t.name, p.partition_index): (p.replicas, p.adding_replicas, p.removing_replicas)
            for t in response.topics for p in t.partitions}


def topic_znode(cluster: LocalCluster, topic: str) -> dict:
    return json.loads(cluster.zk.get(f"/brokers/topics/{topic}")[0])


def wait_done(cluster: LocalCluster, topic: str, replicas: list[int], timeout: float = WAIT) -> dict:
    def done():
        data = topic_znode(cluster, topic)
        if data["partitions"]["0"] == replicas and not data["adding_replicas"] and not data["removing_replicas"]:
            return data
        return None

    return wait_for(done, timeout, what=f"{topic} reassigned to {replicas}")


def current_controller(cluster: LocalCluster) -> int | None:
    try:
        return cluster.controller()
    except NoNodeError:  # between two controllers
        return None


def has_log(cluster: LocalCluster, broker_id: int, topic: str) -> bool:
    return (cluster.brokers[broker_id].data_dir / f"{topic}-0").is_dir()


def produce(cluster: LocalCluster, topic: str, count: int, prefix: str) -> None:
    """``count`` records keyed ``{prefix}-{i}`` (acks=all)."""
    kafka_io.produce(cluster.bootstrap(), topic, [f"value-{prefix}-{i}".encode() * 5 for i in range(count)],
                     key=[f"{prefix}-{i}" for i in range(count)], config={"acks": "all"}, timeout=WAIT)


def consume_all(cluster: LocalCluster, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": f"check-{topic}-{expected}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    keys: list[bytes] = []

    def enough() -> bool:
        keys.extend(m.key() for m in consumer.consume(100, 0.5) if not m.error())
        return len(keys) >= expected

    try:
        wait_for(enough, WAIT, what=f"{expected} records of {topic}")
    finally:
        consumer.close()
    return keys


def single_replica_topic(cluster: LocalCluster, topic: str, on: int) -> None:
    """An RF=1 topic on broker ``on`` (created, then moved there if the assignment put it elsewhere)."""
    cluster.create_topic(topic, 1, 1)
    if cluster.assignment(topic)[0] != [on]:
        assert alter(cluster, 1, topic, {0: [on]}) == {0: (ErrorCode.NONE, None)}
        wait_done(cluster, topic, [on])
    cluster.wait_for_leader(topic)
    assert cluster.leader(topic) == on


def test_move_a_partition_with_data_to_another_broker(cluster: LocalCluster) -> None:
    single_replica_topic(cluster, "moving", 1)
    produce(cluster, "moving", 300, "a")
    before = cluster.log_batches(1, "moving")
    epoch = cluster.state("moving")["leader_epoch"]
    via = next(i for i in cluster.brokers if i != cluster.controller())  # any broker takes the request
    assert alter(cluster, via, "moving", {0: [2]}) == {0: (ErrorCode.NONE, None)}
    wait_done(cluster, "moving", [2])
    state = cluster.state("moving")
    assert (state["leader"], state["isr"]) == (2, [2])
    assert state["leader_epoch"] > epoch
    wait_for(lambda: not has_log(cluster, 1, "moving"), WAIT, what="the old replica's log deleted")
    assert cluster.log_batches(2, "moving") == before  # byte for byte what broker 1 had
    produce(cluster, "moving", 20, "b")  # the new leader takes writes
    keys = consume_all(cluster, "moving", 320)
    assert keys == [f"a-{i}".encode() for i in range(300)] + [f"b-{i}".encode() for i in range(20)]
    assert listing(cluster, 3) == {}


def test_replication_factor_up_then_down_moving_the_leader_off(cluster: LocalCluster) -> None:
    single_replica_topic(cluster, "growing", 3)
    produce(cluster, "growing", 200, "a")
    assert alter(cluster, 2, "growing", {0: [3, 1, 2]}) == {0: (ErrorCode.NONE, None)}
    wait_done(cluster, "growing", [3, 1, 2])
    wait_for(lambda: sorted(cluster.state("growing")["isr"]) == [1, 2, 3], WAIT, what="ISR of three")
    cluster.wait_replicas_identical("growing", ids=[1, 2, 3])
    epoch = cluster.state("growing")["leader_epoch"]
    # 3 -> 2, and the leader (3) is the one leaving
    assert alter(cluster, 1, "growing", {0: [1, 2]}) == {0: (ErrorCode.NONE, None)}
    wait_done(cluster, "growing", [1, 2])
    state = cluster.state("growing")
    assert state["leader"] == 1 and sorted(state["isr"]) == [1, 2] and state["leader_epoch"] > epoch
    wait_for(lambda: not has_log(cluster, 3, "growing"), WAIT, what="broker 3's replica deleted")
    produce(cluster, "growing", 50, "b")
    cluster.wait_replicas_identical("growing", ids=[1, 2])
    assert len(consume_all(cluster, "growing", 250)) == 250


def test_moving_the_leader_under_load_loses_and_duplicates_nothing(cluster: LocalCluster) -> None:
    single_replica_topic(cluster, "busy", 2)
    acked: list[bytes] = []
    failed: list[str] = []
    stop = threading.Event()

    def on_delivery(err, msg) -> None:
        (failed.append(str(err)) if err else acked.append(msg.key()))

    def run() -> None:
        producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all", "enable.idempotence": True,
                             "linger.ms": 2, "message.timeout.ms": 30000})
        i = 0
        while not stop.is_set():
            producer.produce("busy", key=f"k-{i}".encode(), value=b"v" * 100, on_delivery=on_delivery)
            producer.poll(0)
            i += 1
            time.sleep(0.002)
        producer.flush(30)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        wait_for(lambda: len(acked) > 200, WAIT, what="records acknowledged before the move")
        assert alter(cluster, 1, "busy", {0: [3]}) == {0: (ErrorCode.NONE, None)}
        wait_done(cluster, "busy", [3])
        count = len(acked)
        wait_for(lambda: len(acked) > count + 200, WAIT, what="records acknowledged by the new leader")
    finally:
        stop.set()
        thread.join(60)
    assert not failed
    keys = consume_all(cluster, "busy", len(acked))
    assert len(keys) == len(set(keys)) == len(acked)  # nothing duplicated
    assert set(keys) == set(acked)  # nothing lost
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": "busy-watermarks"})
    try:
        assert consumer.get_watermark_offsets(TopicPartition("busy", 0), timeout=10) == (0, len(acked))
    finally:
        consumer.close()
    wait_for(lambda: not has_log(cluster, 2, "busy"), WAIT, what="the old leader's log deleted")


def test_errors(cluster: LocalCluster) -> None:
    cluster.create_topic("errs", 1, 1)
    (owner,) = cluster.assignment("errs")[0]
    other = next(i for i in cluster.brokers if i != owner)
    result = alter(cluster, 1, "errs", {0: [], 1: [other], 3: None})
    assert result[0][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert result[1][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert result[3][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert alter(cluster, 2, "errs", {0: [other, other]})[0][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert alter(cluster, 2, "errs", {0: [owner, 42]})[0][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert alter(cluster, 3, "errs", {0: None})[0][0] == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert alter(cluster, 3, "nope", {0: [1]})[0][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert alter(cluster, 3, "errs", {0: [owner, other]}, allow_rf_change=False)[0][0] == \
        ErrorCode.INVALID_REPLICATION_FACTOR
    assert alter(cluster, 3, "errs", {0: [owner]}) == {0: (ErrorCode.NONE, None)}  # nothing to do
    assert cluster.assignment("errs")[0] == [owner]
    assert listing(cluster, 1) == {}


def test_list_then_cancel_a_reassignment_waiting_for_a_paused_broker(cluster: LocalCluster) -> None:
    single_replica_topic(cluster, "stuck", 1)
    produce(cluster, "stuck", 50, "a")
    cluster.pause(2)
    try:
        assert alter(cluster, 3, "stuck", {0: [2]}) == {0: (ErrorCode.NONE, None)}
        expected = {("stuck", 0): ([2, 1], [2], [1])}
        for via in (1, 3):
            wait_for(lambda via=via: listing(cluster, via) == expected, WAIT, what=f"the listing on broker {via}")
        assert listing(cluster, 1, {"stuck": [0, 7], "absent": [0]}) == expected
        data = topic_znode(cluster, "stuck")
        assert (data["partitions"]["0"], data["adding_replicas"], data["removing_replicas"]) == \
            ([2, 1], {"0": [2]}, {"0": [1]})
        # a second target replaces the first, relative to the original replicas
        assert alter(cluster, 3, "stuck", {0: [1, 2]}) == {0: (ErrorCode.NONE, None)}
        wait_for(lambda: listing(cluster, 1) == {("stuck", 0): ([1, 2], [2], [])}, WAIT, what="the new target")
        assert alter(cluster, 1, "stuck", {0: None}) == {0: (ErrorCode.NONE, None)}
        wait_done(cluster, "stuck", [1])
        assert listing(cluster, 3) == {}
        assert alter(cluster, 1, "stuck", {0: None})[0][0] == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    finally:
        cluster.resume(2)
    wait_for(lambda: not has_log(cluster, 2, "stuck"), WAIT, what="the cancelled replica's log deleted")
    assert cluster.leader("stuck") == 1
    assert len(consume_all(cluster, "stuck", 50)) == 50


def test_a_new_controller_completes_a_reassignment_in_progress(cluster: LocalCluster) -> None:
    controller = cluster.controller()
    source, target = [i for i in sorted(cluster.brokers) if i != controller]
    single_replica_topic(cluster, "handover", source)
    produce(cluster, "handover", 100, "a")
    before = cluster.log_batches(source, "handover")
    cluster.pause(target)
    try:
        assert alter(cluster, source, "handover", {0: [target]}) == {0: (ErrorCode.NONE, None)}
        wait_for(lambda: topic_znode(cluster, "handover")["adding_replicas"] == {"0": [target]}, WAIT,
                 what="the reassignment recorded")
        cluster.brokers[controller].stop()  # its session closes: the new controller is elected at once
        wait_for(lambda: current_controller(cluster) == source, WAIT, what=f"broker {source} as controller")
    finally:
        cluster.resume(target)
    wait_done(cluster, "handover", [target])
    wait_for(lambda: not has_log(cluster, source, "handover"), WAIT, what="the old replica's log deleted")
    assert cluster.log_batches(target, "handover") == before
    cluster.restart(controller)
    wait_for(lambda: len(cluster.live_ids()) == 3, WAIT, what="three brokers again")


def test_a_replica_removed_while_its_broker_was_down_is_deleted_at_restart(cluster: LocalCluster) -> None:
    single_replica_topic(cluster, "stray", 1)
    produce(cluster, "stray", 30, "a")
    assert alter(cluster, 2, "stray", {0: [2, 1]}) == {0: (ErrorCode.NONE, None)}
    wait_done(cluster, "stray", [2, 1])
    wait_for(lambda: sorted(cluster.state("stray")["isr"]) == [1, 2], WAIT, what="both replicas in the ISR")
    cluster.brokers[1].stop()
    try:
        wait_for(lambda: cluster.state("stray")["leader"] == 2, WAIT, what="broker 2 leading")
        assert alter(cluster, 2, "stray", {0: [2]}) == {0: (ErrorCode.NONE, None)}
        wait_done(cluster, "stray", [2])
        assert has_log(cluster, 1, "stray")  # broker 1 was down: its copy is still there
    finally:
        cluster.restart(1)
    wait_for(lambda: not has_log(cluster, 1, "stray"), WAIT, what="the stray copy deleted at start-up")
    assert len(consume_all(cluster, "stray", 30)) == 30


def reassign_cli(cluster: LocalCluster, *args: str, via: int = 1, process: bool = False,
                 ) -> subprocess.CompletedProcess[str]:
    """``tidelog cluster reassign ARGS``: in this process (quicker), or as a real one with ``process``."""
    argv = ["cluster", "reassign", *args, "--bootstrap-server", cluster.brokers[via].bootstrap]
    if process:
        return subprocess.run([sys.executable, "-m", "tidelog", *argv], capture_output=True, text=True, timeout=60)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's usage errors
            code = int(e.code or 0)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def test_cli_generate_execute_verify_and_roll_back(cluster: LocalCluster, tmp_path: Path) -> None:
    cluster.create_topic("cli-moved", 2, 2)
    before = {p: cluster.assignment("cli-moved")[p] for p in (0, 1)}
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "cli-moved"}]}))
    out = reassign_cli(cluster, "--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,3")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    current = json.loads(lines[1])
    assert {p["partition"]: p["replicas"] for p in current["partitions"]} == before
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])["partitions"]
    assert all(sorted(p["replicas"]) == [1, 3] and p["log_dirs"] == ["any", "any"] for p in proposed)
    assert cluster.assignment("cli-moved") == before  # --generate changes nothing

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "cli-moved", "partition": 0, "replicas": [3, 1]},
        {"topic": "cli-moved", "partition": 1, "replicas": [1, 3]}]}))
    out = reassign_cli(cluster, "--execute", "--reassignment-json-file", str(plan), via=2)
    assert out.returncode == 0, out.stderr
    assert "Save this to use as the --reassignment-json-file option during rollback" in out.stdout
    assert "Successfully started partition reassignments for cli-moved-0,cli-moved-1" in out.stdout
    rollback = tmp_path / "rollback.json"
    rollback.write_text(next(line for line in out.stdout.splitlines() if line.startswith("{")))
    assert {p["partition"]: p["replicas"] for p in json.loads(rollback.read_text())["partitions"]} == before

    def verified() -> str | None:
        result = reassign_cli(cluster, "--verify", "--reassignment-json-file", str(plan))
        return result.stdout if result.returncode == 0 else None

    text = wait_for(verified, WAIT, what="--verify to report completion")
    assert "Reassignment of partition cli-moved-0 is completed." in text
    assert cluster.assignment("cli-moved") == {0: [3, 1], 1: [1, 3]}
    out = reassign_cli(cluster, "--verify", "--reassignment-json-file", str(rollback))
    assert out.returncode == 1 and "There is no active reassignment of partition" in out.stdout

    out = reassign_cli(cluster, "--execute", "--reassignment-json-file", str(rollback))  # the rollback
    assert out.returncode == 0, out.stderr
    wait_for(lambda: cluster.assignment("cli-moved") == before and
             reassign_cli(cluster, "--verify", "--reassignment-json-file", str(rollback)).returncode == 0,
             WAIT, what="the rollback")


def test_cli_list_cancel_and_errors(cluster: LocalCluster, tmp_path: Path) -> None:
    single_replica_topic(cluster, "cli-stuck", 1)
    # --execute refuses while the broker it asks still shows a reassignment in progress (the earlier
    # tests' or the move above: a broker's metadata follows ZooKeeper a moment behind)
    wait_for(lambda: "No partition reassignments found." in reassign_cli(cluster, "--list").stdout, WAIT,
             what="no reassignment in progress as broker 1 sees it")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "cli-stuck", "partition": 0,
                                                              "replicas": [3], "log_dirs": ["any"]}]}))
    cluster.pause(3)
    try:
        out = reassign_cli(cluster, "--execute", "--reassignment-json-file", str(plan))
        assert out.returncode == 0, out.stderr
        out = reassign_cli(cluster, "--list", via=2)
        assert out.stdout.splitlines() == ["Current partition reassignments:",
                                           "cli-stuck-0: replicas: 3,1. adding: 3. removing: 1."]
        out = reassign_cli(cluster, "--verify", "--reassignment-json-file", str(plan))
        assert out.returncode == 1 and "Reassignment of partition cli-stuck-0 is still in progress." in out.stdout
        out = reassign_cli(cluster, "--execute", "--reassignment-json-file", str(plan))
        assert out.returncode == 1 and "--additional" in out.stderr
        out = reassign_cli(cluster, "--cancel", "--reassignment-json-file", str(plan))
        assert out.returncode == 0, out.stderr
        assert "Successfully cancelled partition reassignment for: cli-stuck-0" in out.stdout
    finally:
        cluster.resume(3)
    wait_done(cluster, "cli-stuck", [1])
    out = reassign_cli(cluster, "--cancel", "--reassignment-json-file", str(plan))
    assert (out.returncode, out.stdout.strip()) == (0, "None of the specified partition reassignments are active.")
    assert reassign_cli(cluster, "--list").stdout.strip() == "No partition reassignments found."

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "partitions": [{"topic": "cli-stuck", "partition": 0,
                                                             "replicas": [1, 42]}]}))
    out = reassign_cli(cluster, "--execute", "--reassignment-json-file", str(bad), process=True)
    assert out.returncode == 1
    assert "cli-stuck-0: INVALID_REPLICA_ASSIGNMENT" in out.stdout and "Traceback" not in out.stderr
    bad.write_text("{not json")
    out = reassign_cli(cluster, "--verify", "--reassignment-json-file", str(bad))
    assert out.returncode == 1 and "is not valid JSON" in out.stderr
    out = reassign_cli(cluster, "--execute", process=True)
    assert out.returncode == 2 and "--execute needs --reassignment-json-file" in out.stderr
    out = reassign_cli(cluster, "--generate", "--topics-to-move-json-file", str(plan))
    assert out.returncode == 2 and "--broker-list" in out.stderr


def test_kafkas_reassign_partitions_tool(cluster: LocalCluster, java_classpath: str, tmp_path: Path) -> None:
    """kafka-reassign-partitions.sh of the pinned Kafka (tests/java/pom.xml) against the cluster."""
    from tests.oracle.jvm import run_tool

    single_replica_topic(cluster, "kafka-tool", 1)
    produce(cluster, "kafka-tool", 40, "a")
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "kafka-tool", "partition": 0,
                                                              "replicas": [3, 2], "log_dirs": ["any", "any"]}]}))

    def tool(*args: str):
        return run_tool(java_classpath, "kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap(), *args)

    out = tool("--execute", "--reassignment-json-file", str(plan))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Successfully started partition reassignment for kafka-tool-0" in out.stdout
    assert '"replicas":[1]' in out.stdout  # the current assignment, for a rollback
    wait_done(cluster, "kafka-tool", [3, 2])
    out = tool("--verify", "--reassignment-json-file", str(plan))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Reassignment of partition kafka-tool-0 is completed." in out.stdout
    out = tool("--list")
    assert out.returncode == 0 and "No partition reassignments found." in out.stdout, out.stdout + out.stderr
    wait_for(lambda: not has_log(cluster, 1, "kafka-tool"), WAIT, what="broker 1's replica deleted")
    assert len(consume_all(cluster, "kafka-tool", 40)) == 40


INNER = '''
from tests.integration.test_reassignment import CLUSTER, CLUSTER_RESTORED, alter, listing, single_replica_topic
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import ApiVersionsRequest
from tidelog.testing.client import WireClient


def test_1_times_out_with_a_reassignment_in_progress_and_a_paused_broker(cluster):
    single_replica_topic(cluster, "left-behind", 1)
    cluster.pause(2)
    assert alter(cluster, 3, "left-behind", {0: [2]}) == {0: (ErrorCode.NONE, None)}
    raise TimeoutError("a slow step on a loaded machine")


def test_2_finds_the_cluster_as_the_module_started_it(cluster):
    assert listing(cluster, 1) == {}
    assert cluster.live_ids() == [1, 2, 3]
    with WireClient.connect(cluster.brokers[2].bootstrap, timeout=10) as client:
        assert client.request(ApiVersionsRequest(), 0).error_code == 0
'''


def test_a_failing_test_fails_alone(tmp_path: Path) -> None:
    """Two tests on this module's cluster (its CLUSTER, through the shared fixtures of tests/fixtures.py), in a
    pytest of their own: the first fails with a reassignment in progress and a broker paused; the second
    finds neither (1 failed, 1 passed)."""
    (tmp_path / "test_inner.py").write_text(INNER)
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "pytest", "-c", str(repo / "pyproject.toml"), "--rootdir", str(repo),
                          "-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0", "-q",
                          "-p", "tests.fixtures", str(tmp_path / "test_inner.py")],
                         cwd=repo, capture_output=True, text=True, timeout=600)
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr
    assert "1 failed, 1 passed" in summary, out.stdout[-3000:] + out.stderr[-2000:]
    assert "test_1_times_out" in out.stdout and "TimeoutError" in out.stdout
