"""Delegation tokens with Apache Kafka's own tools and Java client: ``kafka-delegation-tokens.sh``
(the Java Admin client's createDelegationToken / describe / renew / expire) over SASL_PLAINTEXT with a
SCRAM user, then the Java producer and consumer authenticating with the token (``ScramLoginModule``
with ``tokenauth="true"``: user = token id, password = HMAC), refused once the token is expired; a
token-authenticated client may not create tokens (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), and the
token survives a broker restart. About 10 JVM runs: 30-60 s on 2 cores."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.oracle import jvm
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("java-delegation-tokens")]

USER, PASSWORD = "tokenowner", "owner-secret"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("java-tokens")
    data = root / "data"
    subprocess.run([sys.executable, "-m", "tidelog", "users", "add", USER, "--data-dir", str(data),
                    "--password-stdin"], input=PASSWORD + "\n", text=True, check=True, capture_output=True)
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
                 "delegation.token.secret.key": "a-secret-shared-by-every-broker"}
    with BrokerProcess(data, overrides=overrides) as process:
        process.root = root
        yield process


def _props(broker, user: str, password: str, *, token: bool = False, mechanism: str = "SCRAM-SHA-256") -> Path:
    extra = ' tokenauth="true"' if token else ""
    path = broker.root / f"client-{uuid.uuid4().hex[:6]}.properties"
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\n"
                    f'sasl.jaas.config={SCRAM} required username="{user}" password="{password}"{extra};\n')
    return path


def _bootstrap(broker) -> str:
    return f"127.0.0.1:{broker.listener_port('SASL_PLAINTEXT')}"


def _run(classpath: str, tool: str, *args: object, stdin: str | None = None, ok: bool = True):
    done = jvm.run_tool(classpath, tool, *args, stdin=stdin, timeout=120)
    if ok:
        assert done.returncode == 0, f"{tool} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _tokens(output: str) -> list[tuple[str, ...]]:
    """(token id, HMAC, owner, requester, renewers) of each row of kafka-delegation-tokens' table."""
    rows = []
    for line in output.splitlines():
        match = re.match(r"^\s*(\S{22})\s+(\S{88})\s+(User:\S+)\s+(User:\S+)\s+(\[.*?\])", line)
        if match:
            rows.append(match.groups())
    return rows


def test_kafka_delegation_tokens_and_java_clients_with_a_token(java_classpath, broker):
    owner = _props(broker, USER, PASSWORD)
    common = ["--bootstrap-server", _bootstrap(broker), "--command-config", owner]
    created = _run(java_classpath, "kafka-delegation-tokens", *common, "--create", "--max-life-time-period", "-1",
                   "--renewer-principal", "User:renewer")
    [(token_id, hmac, token_owner, requester, renewers)] = _tokens(created.stdout)
    assert token_owner == requester == f"User:{USER}" and renewers == "[User:renewer]"

    # without --owner-principal the tool asks for an empty owner list, which Kafka answers with no tokens
    described = _run(java_classpath, "kafka-delegation-tokens", *common, "--describe")
    assert "Total number of tokens : 0" in described.stdout
    mine = ["--describe", "--owner-principal", f"User:{USER}"]
    described = _run(java_classpath, "kafka-delegation-tokens", *common, *mine)
    assert [row[:2] for row in _tokens(described.stdout)] == [(token_id, hmac)], described.stdout

    # the Java producer and consumer authenticate with the token (SCRAM, tokenauth=true), as the owner
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        token_props = _props(broker, token_id, hmac, token=True, mechanism=mechanism)
        topic = f"token-topic-{mechanism.lower()}"
        _run(java_classpath, "kafka-console-producer", "--bootstrap-server", _bootstrap(broker), "--topic", topic,
             "--command-config", token_props, stdin="one\ntwo\n")
        consumed = _run(java_classpath, "kafka-console-consumer", "--bootstrap-server", _bootstrap(broker),
                        "--topic", topic, "--from-beginning", "--max-messages", "2", "--timeout-ms", "30000",
                        "--command-config", token_props)
        assert consumed.stdout.split() == ["one", "two"]

    # a connection authenticated with a token may not create tokens
    refused = _run(java_classpath, "kafka-delegation-tokens", "--bootstrap-server", _bootstrap(broker),
                   "--command-config", token_props, "--create", "--max-life-time-period", "-1", ok=False)
    assert refused.returncode != 0
    assert "DelegationTokenDisabledException" not in refused.stdout + refused.stderr
    assert "not allowed" in (refused.stdout + refused.stderr).lower()

    renewed = _run(java_classpath, "kafka-delegation-tokens", *common, "--renew", "--hmac", hmac,
                   "--renew-time-period", "-1")
    assert "Completed renew operation" in renewed.stdout

    broker.restart()  # the token is kept in the data dir (the listener's port changes)
    common = ["--bootstrap-server", _bootstrap(broker), "--command-config", owner]
    described = _run(java_classpath, "kafka-delegation-tokens", *common, *mine)
    assert [row[0] for row in _tokens(described.stdout)] == [token_id]

    expired = _run(java_classpath, "kafka-delegation-tokens", *common, "--expire", "--hmac", hmac,
                   "--expiry-time-period", "-1")
    assert "Completed expire operation" in expired.stdout, expired.stdout
    assert _tokens(_run(java_classpath, "kafka-delegation-tokens", *common, *mine).stdout) == []
    failed = jvm.run_tool(java_classpath, "kafka-configs", "--bootstrap-server", _bootstrap(broker),
                          "--command-config", token_props, "--describe", "--entity-type", "brokers",
                          "--entity-default", timeout=120)
    assert failed.returncode != 0
    assert "Authentication failed" in failed.stdout + failed.stderr


def test_token_requests_in_clear_text_are_refused_as_kafka_refuses_them(java_classpath, broker):
    plain = broker.root / "plaintext.properties"
    plain.write_text("security.protocol=PLAINTEXT\n")
    done = _run(java_classpath, "kafka-delegation-tokens", "--bootstrap-server", broker.bootstrap,
                "--command-config", plain, "--create", "--max-life-time-period", "-1", ok=False)
    assert done.returncode != 0
    assert "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels" in done.stdout + done.stderr
