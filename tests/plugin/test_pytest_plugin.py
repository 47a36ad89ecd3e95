"""The pytest plugin (tidelog.pytest_plugin, entry point ``pytest11``), as its users meet it: each test
writes a small test file and runs pytest on it (pytester), with the plugin loaded from the entry point."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests import toolchain

pytestmark = pytest.mark.integration


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its dead parent's reaper) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while _pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_session_broker_topics_and_records(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        from confluent_kafka.admin import AdminClient

        def test_bootstrap(kafka_bootstrap, tidelog_broker, tmp_path_factory):
            assert kafka_bootstrap == tidelog_broker.bootstrap_servers
            assert str(tidelog_broker.data_dir).startswith(str(tmp_path_factory.getbasetemp()))

        def test_topic_factory(kafka_topic, kafka_admin):
            first, second = kafka_topic(), kafka_topic(partitions=3, config={"cleanup.policy": "compact"})
            assert first != second and "test-topic-factory" in first
            topics = kafka_admin.list_topics(timeout=10).topics
            assert len(topics[first].partitions) == 1 and len(topics[second].partitions) == 3

        def test_produce_and_consume(kafka_topic, kafka_produce, kafka_consume):
            topic = kafka_topic(partitions=2)
            acked = kafka_produce(topic, [b"v0", ("k1", "v1"), {"key": b"k2", "value": b"v2", "partition": 1,
                                                                 "headers": {"h": "x"}}])
            assert acked[2][0] == 1 and len(set(acked)) == 3
            records = kafka_consume(topic, 3)
            assert sorted(r.value for r in records) == [b"v0", b"v1", b"v2"]
            assert [r.headers for r in records if r.key == b"k2"] == [[("h", b"x")]]

        def test_same_broker_for_the_session(tidelog_broker, kafka_bootstrap):
            assert tidelog_broker.running and tidelog_broker.bootstrap_servers == kafka_bootstrap
    """)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=4)


def test_function_broker_fresh_per_test_and_configured_by_marker(pytester: pytest.Pytester) -> None:
    out = pytester.path / "seen.txt"
    pytester.makepyfile(f"""
        import pytest
        from confluent_kafka.admin import AdminClient

        @pytest.mark.parametrize("n", range(2))
        def test_fresh(tidelog_broker_function, kafka_topic, kafka_produce, kafka_consume, n):
            with open({str(out)!r}, "a") as f:
                f.write(tidelog_broker_function.bootstrap_servers + "\\n")
            admin = AdminClient(tidelog_broker_function.client_config())
            assert not [t for t in admin.list_topics(timeout=10).topics if not t.startswith("__")]
            topic = kafka_topic(broker=tidelog_broker_function)
            kafka_produce(topic, [b"x"], broker=tidelog_broker_function)
            assert kafka_consume(topic, 1, broker=tidelog_broker_function)[0].value == b"x"

        @pytest.mark.tidelog(config={{"num.partitions": 5}}, http=True)
        def test_marker(tidelog_broker_function, kafka_produce):
            kafka_produce("auto-created", [b"x"], broker=tidelog_broker_function)
            admin = AdminClient(tidelog_broker_function.client_config())
            assert len(admin.list_topics(timeout=10).topics["auto-created"].partitions) == 5
            assert tidelog_broker_function.http_url.startswith("http://127.0.0.1:")

        @pytest.mark.parametrize("tidelog_broker_function", [{{"config": {{"num.partitions": 2}}}}], indirect=True)
        def test_indirect(tidelog_broker_function, kafka_produce):
            kafka_produce("auto", [b"x"], broker=tidelog_broker_function)
            admin = AdminClient(tidelog_broker_function.client_config())
            assert len(admin.list_topics(timeout=10).topics["auto"].partitions) == 2
    """)
    result = pytester.runpytest("-p", "no:randomly", "--strict-markers")
    result.assert_outcomes(passed=4)
    seen = out.read_text().split()
    assert len(seen) == 2 and seen[0] != seen[1]


def test_ini_options_configure_every_broker(pytester: pytest.Pytester) -> None:
    pytester.makeini("""
        [pytest]
        tidelog_broker_args = num.partitions=4 log.retention.ms=123456
        tidelog_mode = subprocess
    """)
    pytester.makepyfile("""
        from confluent_kafka.admin import AdminClient

        def test_settings(tidelog_broker, kafka_produce):
            assert tidelog_broker.mode == "subprocess" and tidelog_broker.proc is not None
            kafka_produce("auto", [b"x"])
            admin = AdminClient(tidelog_broker.client_config())
            assert len(admin.list_topics(timeout=10).topics["auto"].partitions) == 4
    """)
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)
    # a command-line setting wins over the ini file's
    pytester.runpytest("-p", "no:randomly", "--tidelog-broker-arg", "num.partitions=1").assert_outcomes(failed=1)


def test_sasl_and_tls_on_request(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        from confluent_kafka.admin import AdminClient

        @pytest.mark.tidelog(security_protocol="SASL_SSL", users={"alice": "alice-secret"})
        def test_sasl_ssl(tidelog_broker_function, kafka_topic, kafka_produce, kafka_consume):
            conf = tidelog_broker_function.client_config()
            assert conf["security.protocol"] == "SASL_SSL" and conf["sasl.username"] == "alice"
            topic = kafka_topic(broker=tidelog_broker_function)
            kafka_produce(topic, [b"secret"], broker=tidelog_broker_function)
            assert kafka_consume(topic, 1, broker=tidelog_broker_function)[0].value == b"secret"

        @pytest.mark.tidelog(security_protocol="SASL_PLAINTEXT")
        def test_wrong_password_is_refused(tidelog_broker_function):
            conf = tidelog_broker_function.client_config()
            conf["sasl.password"] = "wrong"
            with pytest.raises(Exception):
                AdminClient(conf).list_topics(timeout=5)
    """)
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)


def test_no_broker_left_behind_when_a_test_fails_or_the_run_is_killed(pytester: pytest.Pytester) -> None:
    pids = pytester.path / "pids.txt"
    pytester.makepyfile(f"""
        import os, signal

        def test_fails(tidelog_broker_function):
            with open({str(pids)!r}, "a") as f:
                f.write(f"{{tidelog_broker_function.proc.pid}}\\n")
            assert False, "a failing test"

        def test_interrupted(tidelog_broker):
            with open({str(pids)!r}, "a") as f:
                f.write(f"{{tidelog_broker.proc.pid}}\\n")
            raise KeyboardInterrupt
    """)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--tidelog-mode", "subprocess")
    assert "a failing test" in result.stdout.str()
    assert "KeyboardInterrupt" in result.stdout.str()
    failed, interrupted = (int(p) for p in pids.read_text().split())
    assert _wait_gone(failed, 5) and _wait_gone(interrupted, 5)

    # SIGKILL: no clean-up runs in pytest; the broker notices its parent is gone and stops by itself
    pids.unlink()
    pytester.makepyfile(test_killed=f"""
        import os, signal

        def test_killed(tidelog_broker):
            with open({str(pids)!r}, "w") as f:
                f.write(f"{{tidelog_broker.proc.pid}}\\n")
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    pytester.runpytest_subprocess("-p", "no:randomly", "--tidelog-mode", "subprocess", "test_killed.py")
    assert _wait_gone(int(pids.read_text()), 30)


def test_each_xdist_worker_has_its_own_broker(pytester: pytest.Pytester) -> None:
    out = pytester.path / "workers"
    out.mkdir()
    pytester.makepyfile(f"""
        import json, os, pytest

        @pytest.mark.parametrize("n", range(6))
        def test_worker(kafka_bootstrap, kafka_topic, kafka_produce, kafka_consume, n):
            topic = kafka_topic()
            kafka_produce(topic, [str(n)])
            assert kafka_consume(topic, 1)[0].value == str(n).encode()
            worker = os.environ["PYTEST_XDIST_WORKER"]
            with open(os.path.join({str(out)!r}, f"{{worker}}-{{n}}"), "w") as f:
                json.dump([worker, kafka_bootstrap], f)
    """)
    pytester.runpytest_subprocess("-p", "no:randomly", "-n", "2").assert_outcomes(passed=6)
    seen = {tuple(json.loads(p.read_text())) for p in out.iterdir()}
    workers = {w for w, _ in seen}
    assert len(workers) == 2
    by_worker = {w: {b for ww, b in seen if ww == w} for w in workers}
    assert all(len(b) == 1 for b in by_worker.values())  # one session broker per worker ...
    assert len({b for w, b in seen}) == 2  # ... and a different one in each


def test_cluster_fixture_survives_a_broker_loss(pytester: pytest.Pytester) -> None:
    toolchain.require_command("java+maven", "java", "mvn")
    pytester.makepyfile("""
        def test_failover(tidelog_cluster, kafka_produce, kafka_consume):
            tidelog_cluster.create_topic("orders", partitions=1, replication_factor=3,
                                         config={"min.insync.replicas": "2"})
            kafka_produce("orders", [b"before"], broker=tidelog_cluster.bootstrap_servers)
            leader = tidelog_cluster.leader("orders")
            tidelog_cluster.kill(leader)
            tidelog_cluster.wait_for_leader("orders", not_in=[leader])
            kafka_produce("orders", [b"after"], broker=tidelog_cluster.bootstrap_servers)
            values = [r.value for r in kafka_consume("orders", 2, broker=tidelog_cluster.bootstrap_servers)]
            assert values == [b"before", b"after"]
    """)
    result = pytester.runpytest("-p", "no:randomly", "-rs")
    if "tidelog_cluster needs ZooKeeper" in result.stdout.str():
        toolchain.require("java+maven", False, "ZooKeeper could not be fetched")
    result.assert_outcomes(passed=1)


def test_the_marker_and_options_are_documented_in_pytest_help(pytester: pytest.Pytester) -> None:
    markers = pytester.runpytest("--markers")
    markers.stdout.fnmatch_lines(["*@pytest.mark.tidelog(*security_protocol*"])
    helptext = pytester.runpytest("--help")
    helptext.stdout.fnmatch_lines(["*--tidelog-broker-arg*", "*--tidelog-mode*", "*tidelog_broker_args*"])
