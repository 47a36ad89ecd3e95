"""``tidelog acls add | list | remove`` against a real broker, run as ``python -m tidelog`` subprocesses.
What they do is checked with DescribeAcls sent by Tidelog's test wire client, never with the CLI's own
code. The broker has an authorizer and ``super.users=User:ANONYMOUS`` (the CLI's principal on PLAINTEXT)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.integration.acl_matrix import describe_acls
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = pytest.mark.xdist_group("cli_acls")

BROKER_OVERRIDES = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                    "super.users": "User:ANONYMOUS"}


def tidelog(b: BrokerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", "acls", *args, "--bootstrap-server", b.bootstrap],
                          capture_output=True, text=True, timeout=60)


def acls_of(b: BrokerProcess, principal: str | None = None) -> list[tuple]:
    with WireClient.connect(b.bootstrap) as client:
        return describe_acls(client, principal)


def test_add_list_remove(broker: BrokerProcess) -> None:
    done = tidelog(broker, "add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "write",
                   "--topic", "orders", "--topic", "payments")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 4
    done = tidelog(broker, "add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.7", "--group", "billing-",
                   "--resource-pattern-type", "prefixed", "--operation", "DescribeConfigs")
    assert done.returncode == 0, done.stderr
    assert tidelog(broker, "add", "--allow-principal", "User:ops", "--cluster", "--operation", "Alter").returncode == 0
    assert acls_of(broker) == sorted([
        ("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        ("TOPIC", "orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
        ("TOPIC", "payments", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        ("TOPIC", "payments", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
        ("GROUP", "billing-", "PREFIXED", "User:bob", "10.0.0.7", "DESCRIBE_CONFIGS", "DENY"),
        ("CLUSTER", "kafka-cluster", "LITERAL", "User:ops", "*", "ALTER", "ALLOW"),
    ])

    listed = tidelog(broker, "list")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert len(rows) == 6 and ["GROUP", "billing-", "PREFIXED", "User:bob", "10.0.0.7", "DESCRIBE_CONFIGS", "DENY"] in rows
    alice = tidelog(broker, "list", "--principal", "User:alice", "--topic", "orders")
    assert [line.split()[1] for line in alice.stdout.splitlines()[1:]] == ["orders", "orders"]
    matching = tidelog(broker, "list", "--group", "billing-eu", "--resource-pattern-type", "match")
    assert [line.split()[1] for line in matching.stdout.splitlines()[1:]] == ["billing-"]

    removed = tidelog(broker, "remove", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.splitlines()[-1] == "1 ACL(s) removed"
    assert ("TOPIC", "orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW") not in acls_of(broker)
    removed = tidelog(broker, "remove", "--topic", "orders", "--topic", "payments")
    assert removed.stdout.splitlines()[-1] == "3 ACL(s) removed"
    assert sorted(a[3] for a in acls_of(broker)) == ["User:bob", "User:ops"]


@pytest.mark.parametrize(("args", "message"), [
    (["add", "--topic", "t"], "--allow-principal or --deny-principal"),
    (["add", "--allow-principal", "User:a"], "give a resource"),
    (["add", "--allow-principal", "alice", "--topic", "t"], "not a principal"),
    (["add", "--allow-principal", "User:a", "--operation", "Frobnicate", "--topic", "t"], "unknown operation"),
    (["add", "--deny-host", "1.2.3.4", "--allow-principal", "User:a", "--topic", "t"], "--deny-host needs"),
    (["remove"], "give a resource"),
])
def test_usage_errors_exit_2_with_one_line(broker: BrokerProcess, args: list[str], message: str) -> None:
    done = tidelog(broker, *args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_without_an_authorizer_the_broker_refuses(tmp_path) -> None:
    # (add, not list: librdkafka 2.16 drops DescribeAcls' top-level error and lists nothing)
    with BrokerProcess(tmp_path) as plain:
        done = tidelog(plain, "add", "--allow-principal", "User:a", "--topic", "t")
    assert done.returncode == 1
    assert "SECURITY_DISABLED" in done.stderr and len(done.stderr.strip().splitlines()) == 1
