"""Every client command surfaces a broker's refusal as exit 1 and one line naming the error, never as an
empty success; and the commands that speak Kafka requests themselves (quotas, transactions, users,
acls) reach a SASL listener with --command-config like the others.

One broker with an authorizer (no one but User:admin is a super user) and a SASL_PLAINTEXT listener;
``bob`` may read and describe topic ``bob-topic`` and nothing else. The tests failed before the fixes
(an empty table, a crash, "does not exist", a refused --command-config, an unnamed group), except the
configs one, which guards what was right already. The commands run as
``python -m tidelog`` subprocesses; ~1 min (2 on a busy machine).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cli_refusals")]

TOPIC = "bob-topic"


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", *args], input=stdin, text=True, capture_output=True,
                          timeout=90)


class Secured:
    def __init__(self, broker: BrokerProcess, root: Path) -> None:
        self.broker = broker
        self.sasl = f"127.0.0.1:{broker.listener_port('SASL_PLAINTEXT')}"
        self.props = {}
        for user in ("admin", "bob"):
            path = root / f"{user}.properties"
            path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.username={user}\n"
                            f"sasl.password={user}-pw\n")
            self.props[user] = path

    def run(self, user: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return _cli(*args, "--bootstrap-server", self.sasl, "--command-config", str(self.props[user]), stdin=stdin)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cli-refusals")
    data = root / "data"
    for user in ("admin", "bob"):
        done = _cli("users", "add", user, "--data-dir", str(data), "--password-stdin", stdin=f"{user}-pw\n")
        assert done.returncode == 0, done.stderr
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                 "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:admin"}
    with BrokerProcess(data, overrides=overrides) as broker:
        s = Secured(broker, root)
        for args in (("topics", "create", TOPIC), ("produce", TOPIC)):
            done = s.run("admin", *args, stdin="one\n")
            assert done.returncode == 0, done.stderr
        done = s.run("admin", "acls", "add", "--allow-principal", "User:bob", "--operation", "Read",
                     "--operation", "Describe", "--topic", TOPIC)
        assert done.returncode == 0, done.stderr
        yield s


def _refused(done: subprocess.CompletedProcess[str], error: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert error in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_acls_list_without_describe_on_the_cluster_is_refused_not_empty(secured) -> None:
    done = secured.run("bob", "acls", "list")
    _refused(done, "CLUSTER_AUTHORIZATION_FAILED")
    assert done.stdout == ""
    listed = secured.run("admin", "acls", "list")
    assert listed.returncode == 0 and "User:bob" in listed.stdout, listed.stderr


def test_users_list_and_delete_without_describe_on_the_cluster_are_refused(secured) -> None:
    _refused(secured.run("bob", "users", "list"), "CLUSTER_AUTHORIZATION_FAILED")
    _refused(secured.run("bob", "users", "list", "admin"), "CLUSTER_AUTHORIZATION_FAILED")
    _refused(secured.run("bob", "users", "delete", "admin"), "CLUSTER_AUTHORIZATION_FAILED")
    _refused(secured.run("bob", "users", "add", "mallory", "--password-stdin", stdin="pw\n"),
             "CLUSTER_AUTHORIZATION_FAILED")
    listed = secured.run("admin", "users", "list")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == ["admin", "admin", "bob", "bob"]


def test_configs_describe_without_describe_configs_is_refused(secured) -> None:
    _refused(secured.run("bob", "configs", "describe", "--entity-type", "brokers", "--entity-name", "0"),
             "CLUSTER_AUTHORIZATION_FAILED")


def test_quotas_take_command_config_and_surface_refusals(secured) -> None:
    altered = secured.run("admin", "quotas", "alter", "--user", "bob", "--add-config", "producer_byte_rate=1048576")
    assert altered.returncode == 0, altered.stderr
    described = secured.run("admin", "quotas", "describe", "--user", "bob")
    assert described.returncode == 0, described.stderr
    assert described.stdout.splitlines()[1].split() == ["bob", "-", "producer_byte_rate", "1048576"]
    _refused(secured.run("bob", "quotas", "describe"), "CLUSTER_AUTHORIZATION_FAILED")
    _refused(secured.run("bob", "quotas", "alter", "--user", "bob", "--add-config", "producer_byte_rate=1"),
             "CLUSTER_AUTHORIZATION_FAILED")


def test_transactions_reach_a_sasl_listener(secured) -> None:
    listed = secured.run("admin", "transactions", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:1] == ["TransactionalId"]


def test_consume_without_group_names_the_group_it_was_refused(secured) -> None:
    done = secured.run("bob", "consume", TOPIC, "--from-beginning", "--max-messages", "1", "--timeout-ms", "20000")
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "GROUP_AUTHORIZATION_FAILED" in done.stderr and "tidelog-console-consumer-" in done.stderr, done.stderr
    assert "--group" in done.stderr


def test_a_topic_the_user_may_not_describe_is_refused_not_missing(secured) -> None:
    """All-topics Metadata leaves out what the user may not describe (as Kafka's does); the CLI asks by
    name and reports the refusal instead of "does not exist"."""
    assert secured.run("admin", "topics", "create", "admin-only").returncode == 0
    for args in (("topics", "describe", "admin-only"), ("consume", "admin-only", "--timeout-ms", "1000"),
                 ("produce", "admin-only")):
        _refused(secured.run("bob", *args, stdin="x\n"), "TOPIC_AUTHORIZATION_FAILED")
    missing = secured.run("admin", "topics", "describe", "no-such-topic")
    assert missing.returncode == 1 and "topic 'no-such-topic' does not exist" in missing.stderr
