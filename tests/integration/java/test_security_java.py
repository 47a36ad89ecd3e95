"""Apache Kafka's Java client (through Kafka's own tools: kafka-console-producer, kafka-console-consumer,
kafka-configs) on Tidelog's SSL, SASL_PLAINTEXT and SASL_SSL listeners, configured exactly as for Kafka:
``security.protocol``, ``sasl.jaas.config`` with Kafka's login modules, PEM trust stores. kafka-configs
creates and deletes SCRAM users with the Java Admin client (AlterUserScramCredentials), who
authenticate with the Java client in between (both mechanisms in one command are refused, as by Kafka
4.4). Certificates are made here (trustme). About 22 JVM runs: 50-100 s on 2 cores.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import trustme

from tests.oracle import jvm
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("java-security")]

USER, PASSWORD = "javauser", "java-secret"
MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
           "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
           "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("java-security")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    ca.issue_cert("localhost", "127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(root / "broker.pem"))
    data = root / "data"
    subprocess.run([sys.executable, "-m", "tidelog", "users", "add", USER, "--data-dir", str(data),
                    "--password-stdin"], input=PASSWORD + "\n", text=True, check=True, capture_output=True)
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
                              "SASL_SSL://127.0.0.1:0",
                 "ssl.keystore.location": str(root / "broker.pem"),
                 "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"}
    with BrokerProcess(data, overrides=overrides) as broker:
        broker.root = root
        yield broker


def client_properties(broker, protocol: str, mechanism: str | None, user: str = USER,
                      password: str = PASSWORD) -> tuple[str, Path]:
    """(bootstrap, properties file) for a Java client on ``protocol``."""
    lines = [f"security.protocol={protocol}"]
    if "SSL" in protocol:
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={broker.root / 'ca.pem'}"]
    if mechanism:
        lines += [f"sasl.mechanism={mechanism}",
                  f'sasl.jaas.config={MODULES[mechanism]} required username="{user}" password="{password}";']
    path = broker.root / f"{protocol}-{mechanism}-{uuid.uuid4().hex[:6]}.properties"
    path.write_text("\n".join(lines) + "\n")
    return f"127.0.0.1:{broker.listener_port(protocol)}", path


def run(classpath: str, tool: str, *args: object, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = jvm.run_tool(classpath, tool, *args, stdin=stdin, timeout=120)
    assert done.returncode == 0, f"{tool} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.mark.parametrize(("protocol", "mechanism"), [
    ("SSL", None), ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512"),
])
def test_java_producer_and_consumer(java_classpath, secured, protocol, mechanism):
    bootstrap, props = client_properties(secured, protocol, mechanism)
    topic = f"java-{protocol}-{mechanism}".lower()
    values = [f"record-{i}" for i in range(20)]
    run(java_classpath, "kafka-console-producer", "--bootstrap-server", bootstrap, "--topic", topic,
        "--command-config", props, stdin="\n".join(values) + "\n")
    done = run(java_classpath, "kafka-console-consumer", "--bootstrap-server", bootstrap, "--topic", topic,
               "--from-beginning", "--max-messages", str(len(values)), "--timeout-ms", "30000",
               "--command-config", props)
    assert done.stdout.split() == values


def test_java_client_with_a_wrong_password_is_refused(java_classpath, secured):
    bootstrap, props = client_properties(secured, "SASL_SSL", "SCRAM-SHA-256", password="wrong")
    done = jvm.run_tool(java_classpath, "kafka-configs", "--bootstrap-server", bootstrap, "--command-config", props,
                        "--describe", "--entity-type", "users", timeout=120)
    assert done.returncode != 0
    assert "Authentication failed during authentication due to invalid credentials with SASL mechanism " \
           "SCRAM-SHA-256" in done.stdout + done.stderr


def _scram_users(bootstrap: str, props: dict) -> dict[str, list[tuple[int, int]]]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, **props})  # kept alive until the answer is in
    described = admin.describe_user_scram_credentials().result(30)
    return {user: [(i.mechanism.value, i.iterations) for i in d.scram_credential_infos]
            for user, d in described.items()}


def test_kafka_configs_manages_scram_users(java_classpath, secured):
    bootstrap, admin_props = client_properties(secured, "SASL_SSL", "SCRAM-SHA-512")
    common = ["--bootstrap-server", bootstrap, "--command-config", admin_props, "--entity-type", "users"]
    run(java_classpath, "kafka-configs", *common, "--alter", "--entity-name", "kc-user",
        "--add-config", "SCRAM-SHA-256=[iterations=8192,password=kc-secret]")
    assert _scram_users(secured.bootstrap, {})["kc-user"] == [(1, 8192)]
    bootstrap, props = client_properties(secured, "SASL_PLAINTEXT", "SCRAM-SHA-256", "kc-user", "kc-secret")
    run(java_classpath, "kafka-console-producer", "--bootstrap-server", bootstrap, "--topic", "kc-topic",
        "--command-config", props, stdin="hello\n")
    run(java_classpath, "kafka-configs", *common, "--alter", "--entity-name", "kc-user",
        "--delete-config", "SCRAM-SHA-256")
    assert "kc-user" not in _scram_users(secured.bootstrap, {})


def test_kafka_configs_describes_scram_users(java_classpath, secured):
    bootstrap, admin_props = client_properties(secured, "SASL_SSL", "SCRAM-SHA-512")
    described = run(java_classpath, "kafka-configs", "--bootstrap-server", bootstrap, "--command-config", admin_props,
                    "--entity-type", "users", "--describe", "--entity-name", USER)
    assert "SCRAM-SHA-256=iterations=4096" in described.stdout


def test_kafka_configs_gives_a_user_both_mechanisms_one_command_at_a_time(java_classpath, secured):
    """`--add-config 'SCRAM-SHA-256=[...],SCRAM-SHA-512=[...]'` names the user twice in one request: Kafka
    4.4 refuses it (DuplicateResourceException; tests/oracle/test_scram_clients.py runs it against Kafka
    too) and so does Tidelog. One mechanism per command works, and the Java client then logs in with
    each; `--delete-config` of both is refused alike, one at a time removes the user."""
    bootstrap, admin_props = client_properties(secured, "SASL_SSL", "SCRAM-SHA-512")
    common = ["--bootstrap-server", bootstrap, "--command-config", admin_props, "--entity-type", "users",
              "--alter", "--entity-name", "kc-two"]
    both = jvm.run_tool(java_classpath, "kafka-configs", *common, "--add-config",
                        "SCRAM-SHA-256=[iterations=8192,password=kc-two-pw],SCRAM-SHA-512=[password=kc-two-pw]",
                        timeout=120)
    refused = "DuplicateResourceException: A user credential cannot be altered twice in the same request"
    assert both.returncode == 1 and refused in both.stdout + both.stderr, both.stdout + both.stderr
    assert "kc-two" not in _scram_users(secured.bootstrap, {})
    run(java_classpath, "kafka-configs", *common, "--add-config", "SCRAM-SHA-256=[iterations=8192,password=kc-two-pw]")
    run(java_classpath, "kafka-configs", *common, "--add-config", "SCRAM-SHA-512=[password=kc-two-pw]")
    assert sorted(_scram_users(secured.bootstrap, {})["kc-two"]) == [(1, 8192), (2, 4096)]
    for protocol, mechanism in (("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_SSL", "SCRAM-SHA-512")):
        user_bootstrap, props = client_properties(secured, protocol, mechanism, "kc-two", "kc-two-pw")
        run(java_classpath, "kafka-console-producer", "--bootstrap-server", user_bootstrap, "--topic", "kc-two-topic",
            "--command-config", props, stdin=f"{mechanism}\n")
    both = jvm.run_tool(java_classpath, "kafka-configs", *common, "--delete-config", "SCRAM-SHA-256,SCRAM-SHA-512",
                        timeout=120)
    assert both.returncode == 1 and refused in both.stdout + both.stderr, both.stdout + both.stderr
    assert len(_scram_users(secured.bootstrap, {})["kc-two"]) == 2
    run(java_classpath, "kafka-configs", *common, "--delete-config", "SCRAM-SHA-256")
    run(java_classpath, "kafka-configs", *common, "--delete-config", "SCRAM-SHA-512")
    assert "kc-two" not in _scram_users(secured.bootstrap, {})
