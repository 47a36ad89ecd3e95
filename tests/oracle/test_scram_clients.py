"""SCRAM users and clients against Apache Kafka 4.4 and Tidelog, each with a SASL_PLAINTEXT listener
(SCRAM-SHA-256 and SCRAM-SHA-512) beside PLAINTEXT; the same steps and expectations on both.

* ``kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=[...],SCRAM-SHA-512=[...]'`` names one user
  twice in one AlterUserScramCredentials request: Kafka 4.4 refuses it (DuplicateResourceException,
  exit 1) and creates nothing; one mechanism per command works, and the user then logs in with both;
  ``--delete-config`` of both is refused the same way (the user still logs in), one at a time works.
* kcat as Debian packages it (linked to Debian's librdkafka, older than 2.6.1) repeats the client nonce
  in its final SCRAM message (confluentinc/librdkafka#4895): Kafka 4.4 refuses it with its usual
  "invalid credentials" message, and so does Tidelog, whose log says which client versions do this.
  confluent-kafka's newer librdkafka logs in with the same user and password. Skipped without kcat
  (tools/debian_test_deps.sh installs it).

Two brokers, ~15 JVM runs of kafka-configs: about 60-90 s on 2 cores.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from tests import toolchain
from tests.oracle import jvm
from tests.oracle.kafka import HOST, KafkaProcess, free_port
from tidelog.protocol.messages import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from tidelog.security.scram import MECHANISM_CODES, salted_password
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("oracle-scram")]

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
DUPLICATE = "DuplicateResourceException: A user credential cannot be altered twice in the same request"
INVALID = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


class Secured:
    """A broker (Kafka or Tidelog) with its PLAINTEXT bootstrap, its SASL_PLAINTEXT address and its log."""

    def __init__(self, name: str, process, sasl: str) -> None:
        self.name, self.process, self.sasl = name, process, sasl

    @property
    def bootstrap(self) -> str:
        return self.process.bootstrap

    def log(self) -> str:
        if isinstance(self.process, KafkaProcess):
            return self.process.log_file.read_text(errors="replace")
        return self.process.stderr_text()


@pytest.fixture(scope="module")
def kafka_secured(java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    port, controller, sasl = free_port(), free_port(), free_port()
    overrides = {
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller},SASL_PLAINTEXT://{HOST}:{sasl}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port},SASL_PLAINTEXT://{HOST}:{sasl}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        **{f"listener.name.sasl_plaintext.{m.lower()}.sasl.jaas.config": _SCRAM_MODULE for m in MECHANISMS},
    }
    kafka = KafkaProcess(tmp_path_factory.mktemp("kafka-scram"), overrides=overrides, port=port,
                         classpath=java_classpath)
    kafka.controller_port = controller
    with kafka:
        yield Secured("kafka", kafka, f"{HOST}:{sasl}")


@pytest.fixture(scope="module")
def tidelog_secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "sasl.enabled.mechanisms": ",".join(MECHANISMS)}
    with BrokerProcess(tmp_path_factory.mktemp("tidelog-scram"), overrides=overrides) as broker:
        yield Secured("tidelog", broker, f"127.0.0.1:{broker.listener_port('SASL_PLAINTEXT')}")


@pytest.fixture(scope="module", params=["kafka", "tidelog"])
def secured(request: pytest.FixtureRequest) -> Secured:
    return request.getfixturevalue(f"{request.param}_secured")


def scram_users(broker: Secured) -> dict[str, set[str]]:
    with WireClient.connect(broker.bootstrap) as client:
        answer = client.request(DescribeUserScramCredentialsRequest(users=None), 0)
    names = {code: name for name, code in MECHANISM_CODES.items()}
    return {r.user: {names[i.mechanism] for i in r.credential_infos} for r in answer.results or []}


def until_users(broker: Secured, user: str, mechanisms: set[str], timeout: float = 30.0) -> None:
    """Kafka applies an answered change to its broker a moment later: wait until it is described."""
    deadline = time.monotonic() + timeout
    while (found := scram_users(broker).get(user, set())) != mechanisms:
        assert time.monotonic() < deadline, f"{broker.name}: {user} has {found}, not {mechanisms}"
        time.sleep(0.2)


def add_user(broker: Secured, user: str, password: str) -> None:
    """One request per mechanism (a user named twice in one request is refused)."""
    for mechanism in MECHANISMS:
        salt = os.urandom(16)
        upsert = AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
            name=user, mechanism=MECHANISM_CODES[mechanism], iterations=4096, salt=salt,
            salted_password=salted_password(mechanism, password, salt, 4096))
        with WireClient.connect(broker.bootstrap) as client:
            answer = client.request(AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsert]), 0)
        assert [r.error_code for r in answer.results] == [0], answer
    until_users(broker, user, set(MECHANISMS))


def logs_in(broker: Secured, mechanism: str, user: str, password: str) -> bool:
    admin = AdminClient({"bootstrap.servers": broker.sasl, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    try:
        return bool(admin.list_topics(timeout=10).brokers)
    except KafkaException:
        return False


def kafka_configs(classpath: str, broker: Secured, *args: str) -> subprocess.CompletedProcess[str]:
    return jvm.run_tool(classpath, "kafka-configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "users",
                        *args, timeout=120)


# ------------------------------------------------------------------------------- kafka-configs

def test_kafka_configs_with_both_mechanisms_in_one_command(java_classpath, secured) -> None:
    user = ("--entity-name", "kc-both")
    both = kafka_configs(java_classpath, secured, "--alter", *user, "--add-config",
                         "SCRAM-SHA-256=[iterations=8192,password=kc-pw],SCRAM-SHA-512=[password=kc-pw]")
    assert both.returncode == 1 and DUPLICATE in both.stdout + both.stderr, both.stdout + both.stderr
    assert "kc-both" not in scram_users(secured)
    for mechanism in MECHANISMS:
        one = kafka_configs(java_classpath, secured, "--alter", *user, "--add-config", f"{mechanism}=[password=kc-pw]")
        assert one.returncode == 0, one.stdout + one.stderr
    until_users(secured, "kc-both", set(MECHANISMS))
    assert all(logs_in(secured, m, "kc-both", "kc-pw") for m in MECHANISMS)

    both = kafka_configs(java_classpath, secured, "--alter", *user, "--delete-config", ",".join(MECHANISMS))
    assert both.returncode == 1 and DUPLICATE in both.stdout + both.stderr, both.stdout + both.stderr
    assert scram_users(secured)["kc-both"] == set(MECHANISMS)
    assert logs_in(secured, "SCRAM-SHA-512", "kc-both", "kc-pw")
    for mechanism in MECHANISMS:
        one = kafka_configs(java_classpath, secured, "--alter", *user, "--delete-config", mechanism)
        assert one.returncode == 0, one.stdout + one.stderr
    until_users(secured, "kc-both", set())
    assert not logs_in(secured, "SCRAM-SHA-256", "kc-both", "kc-pw")


# ------------------------------------------------------------------------------- old librdkafka

def kcat_version() -> str | None:
    """The librdkafka version `kcat -V` reports (kcat links it), or None without kcat."""
    if shutil.which("kcat") is None:
        return None
    done = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=30)
    m = re.search(r"librdkafka (\d+\.\d+\.\d+)", done.stdout + done.stderr)
    return m.group(1) if m else None


def _older_than_2_6_1(version: str) -> bool:
    return tuple(int(p) for p in version.split(".")) < (2, 6, 1)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_librdkafka_before_2_6_1_is_refused_as_kafka_4_refuses_it(secured, mechanism) -> None:
    version = kcat_version()
    toolchain.require("kcat", version is not None, "no kcat on PATH (apt-get install kcat; "
                      "tools/debian_test_deps.sh installs it)")
    assert version is not None
    if not _older_than_2_6_1(version):
        pytest.skip(f"kcat links librdkafka {version}, which has the SCRAM nonce fix (2.6.1+)")
    user = f"kcat-{mechanism.lower()}"
    add_user(secured, user, "kcat-pw")
    assert logs_in(secured, mechanism, user, "kcat-pw")  # the credential is right: a current librdkafka logs in
    # -m: kcat retries until its metadata timeout, then exits non-zero; the first refusal comes within
    # milliseconds of the connection, so 5 s is ample (the whole timeout is spent on every run).
    done = subprocess.run(["kcat", "-b", secured.sasl, "-L", "-m", "5", "-X", "security.protocol=SASL_PLAINTEXT",
                           "-X", f"sasl.mechanism={mechanism}", "-X", f"sasl.username={user}",
                           "-X", "sasl.password=kcat-pw"], capture_output=True, text=True, timeout=90)
    assert done.returncode != 0
    assert f"SASL authentication error: {INVALID.format(mechanism)}" in done.stderr, done.stderr
    if secured.name == "tidelog":
        deadline = time.monotonic() + 10
        while "librdkafka before 2.6.1" not in secured.log():
            assert time.monotonic() < deadline, secured.log()[-3000:]
            time.sleep(0.1)
    else:
        assert "Failed authentication with /127.0.0.1" in secured.log()
