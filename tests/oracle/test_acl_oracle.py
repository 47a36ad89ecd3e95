"""The authorization denial matrix against Apache Kafka and Tidelog, with the same ACLs.

Kafka runs KRaft with ``StandardAuthorizer`` and ``allow.everyone.if.no.acl.found=false``. Its
controller listener authenticates with SASL/PLAIN as ``User:admin`` (a super user), so that the
broker's own requests to the controller are not those of ``User:ANONYMOUS``, the principal every
client on the PLAINTEXT listener has. Both brokers start once with ``User:ANONYMOUS`` a super user to
create the administrator's ACLs (tests/integration/acl_matrix.py), then again without it.

Each case of the matrix gives (code when refused, code once granted) on each broker; they must be
equal (cases marked ``tidelog-only`` are not compared: their answer is not deterministic in Kafka).
About 1-2 minutes, most of it Kafka starting twice.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.acl_matrix import ANONYMOUS, CASES, Case, admin_acls, create_acls, prepare, run_case
from tests.oracle.kafka import KafkaProcess
from tidelog.errors import ErrorCode
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("oracle-acls")]

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SECURED = {"authorizer.class.name": STANDARD, "allow.everyone.if.no.acl.found": "false"}
_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
         'password="admin-secret" user_admin="admin-secret";')
#: The controller listener speaks SASL/PLAIN as User:admin.
KAFKA_CONTROLLER_SASL = {
    "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "sasl.mechanism.controller.protocol": "PLAIN",
    "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
    "listener.name.controller.plain.sasl.jaas.config": _JAAS,
    "group.initial.rebalance.delay.ms": "0",
}


def _bootstrap_admin_acls(bootstrap: str) -> None:
    with WireClient.connect(bootstrap) as client:
        assert create_acls(client, admin_acls()) == [0] * 4


@pytest.fixture(scope="module")
def kafka(java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaProcess]:
    overrides = {**SECURED, **KAFKA_CONTROLLER_SASL, "super.users": "User:admin;User:ANONYMOUS"}
    with KafkaProcess(tmp_path_factory.mktemp("kafka-acls"), classpath=java_classpath, overrides=overrides) as k:
        _bootstrap_admin_acls(k.bootstrap)
        k.stop()
        k.overrides["super.users"] = "User:admin"
        k.start()
        prepare(k.bootstrap)
        yield k


@pytest.fixture(scope="module")
def tidelog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("tidelog-acls")
    with BrokerProcess(data, overrides={**SECURED, "super.users": "User:ANONYMOUS"}) as first:
        _bootstrap_admin_acls(first.bootstrap)
    with BrokerProcess(data, overrides={**SECURED, "group.initial.rebalance.delay.ms": "0"}) as broker:
        prepare(broker.bootstrap)
        yield broker


def _names(pair: tuple[int, int]) -> tuple[str, str]:
    return ErrorCode(pair[0]).name, ErrorCode(pair[1]).name


@pytest.mark.parametrize("case", [c for c in CASES if "tidelog-only" not in c.tags], ids=str)
def test_same_codes_as_kafka(kafka: KafkaProcess, tidelog: BrokerProcess, case: Case) -> None:
    expected = _names(run_case(ANONYMOUS, kafka.bootstrap, case, settle_s=0.5))
    assert _names(run_case(ANONYMOUS, tidelog.bootstrap, case)) == expected
    assert expected == (case.denied.name, case.allowed.name)  # the matrix's expectations are Kafka's
