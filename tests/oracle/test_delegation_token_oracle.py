"""Delegation tokens against Apache Kafka 4.4 and Tidelog, each with a SASL_PLAINTEXT listener (SCRAM) and
``delegation.token.secret.key`` set: the same requests over SASL as a SCRAM user and the same
expectations on both (the wire suite covers the PLAINTEXT refusals). Kafka applies a token change to its
broker a moment after answering (its metadata log), so reads wait until they see it.

Two brokers: about 40-60 s on 2 cores."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator

import pytest

from tests.oracle.kafka import HOST, KafkaProcess, free_port
from tests.oracle.test_scram_clients import Secured, add_user
from tidelog.errors import ErrorCode
from tidelog.peer.wire import SaslRefused, sasl_exchange
from tidelog.protocol.messages import (
    CreateDelegationTokenRequest,
    DescribeDelegationTokenRequest,
    ExpireDelegationTokenRequest,
    MetadataRequest,
    RenewDelegationTokenRequest,
)
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("oracle-delegation-tokens")]

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SECRET = "oracle-token-secret"
USER, PASSWORD = "dt-user", "dt-password"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
Renewer = CreateDelegationTokenRequest.CreatableRenewers
Owner = DescribeDelegationTokenRequest.DescribeDelegationTokenOwner
HOUR = 3_600_000


@pytest.fixture(scope="module")
def kafka_tokens(java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    port, controller, sasl = free_port(), free_port(), free_port()
    overrides = {
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller},SASL_PLAINTEXT://{HOST}:{sasl}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port},SASL_PLAINTEXT://{HOST}:{sasl}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "delegation.token.secret.key": SECRET,
        **{f"listener.name.sasl_plaintext.{m.lower()}.sasl.jaas.config": _SCRAM_MODULE for m in MECHANISMS},
    }
    kafka = KafkaProcess(tmp_path_factory.mktemp("kafka-tokens"), overrides=overrides, port=port,
                         classpath=java_classpath)
    kafka.controller_port = controller
    with kafka:
        broker = Secured("kafka", kafka, f"{HOST}:{sasl}")
        add_user(broker, USER, PASSWORD)
        yield broker


@pytest.fixture(scope="module")
def tidelog_tokens(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                 "sasl.enabled.mechanisms": ",".join(MECHANISMS), "delegation.token.secret.key": SECRET}
    with BrokerProcess(tmp_path_factory.mktemp("tidelog-tokens"), overrides=overrides) as process:
        broker = Secured("tidelog", process, f"127.0.0.1:{process.listener_port('SASL_PLAINTEXT')}")
        add_user(broker, USER, PASSWORD)
        yield broker


@pytest.fixture(scope="module", params=["kafka", "tidelog"])
def broker(request: pytest.FixtureRequest) -> Secured:
    return request.getfixturevalue(f"{request.param}_tokens")


def connect(broker: Secured, user: str, password: str, *, token: bool = False,
            mechanism: str = "SCRAM-SHA-256") -> WireClient:
    client = WireClient.connect(broker.sasl)
    exchange = sasl_exchange(mechanism, user, password, tokenauth=token)
    try:
        request = next(exchange)
        while True:
            request = exchange.send(client.request(request, 1))
    except StopIteration:
        return client
    except SaslRefused:
        client.close()
        raise


def until(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, what
        time.sleep(0.2)
    return found


def token_logs_in(broker: Secured, token_id: str, hmac: bytes, mechanism: str) -> bool:
    try:
        with connect(broker, token_id, base64.b64encode(hmac).decode(), token=True, mechanism=mechanism) as client:
            return client.request(MetadataRequest(topics=[]), 12).cluster_id is not None
    except SaslRefused:
        return False


def described(broker: Secured, owners=None) -> dict[str, object]:
    with connect(broker, USER, PASSWORD) as client:
        answer = client.request(DescribeDelegationTokenRequest(owners=owners), 3)
    assert answer.error_code == 0
    return {t.token_id: t for t in answer.tokens}


def test_create_renew_describe_expire_and_authenticate_alike(broker: Secured) -> None:
    with connect(broker, USER, PASSWORD) as client:
        created = client.request(CreateDelegationTokenRequest(
            renewers=[Renewer(principal_type="User", principal_name="dt-renewer")], max_lifetime_ms=HOUR), 3)
        assert created.error_code == 0
        assert (created.principal_type, created.principal_name) == ("User", USER)
        assert created.token_requester_principal_name == USER and len(created.token_id) == 22
        # a max lifetime below delegation.token.expiry.time.ms: the expiry is the max timestamp
        assert created.max_timestamp_ms - created.issue_timestamp_ms == HOUR
        assert created.expiry_timestamp_ms == created.max_timestamp_ms
        assert len(created.hmac) == 64

        other = client.request(CreateDelegationTokenRequest(
            owner_principal_type="User", owner_principal_name="dt-other", renewers=[], max_lifetime_ms=-1), 3)
        assert other.error_code == 0 and other.principal_name == "dt-other"  # no authorizer: allowed
        assert other.max_timestamp_ms - other.issue_timestamp_ms == 7 * 24 * HOUR
        assert other.expiry_timestamp_ms - other.issue_timestamp_ms == 24 * HOUR

        group = client.request(CreateDelegationTokenRequest(
            renewers=[Renewer(principal_type="Group", principal_name="g")], max_lifetime_ms=-1), 3)
        assert (group.error_code, group.issue_timestamp_ms, group.token_id) == (
            ErrorCode.INVALID_PRINCIPAL_TYPE, -1, "")

        unknown = client.request(RenewDelegationTokenRequest(hmac=b"\x02" * 64, renew_period_ms=-1), 2)
        assert (unknown.error_code, unknown.expiry_timestamp_ms) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)

    def both() -> dict[str, object] | None:
        found = described(broker)
        return found if {created.token_id, other.token_id} <= set(found) else None

    tokens = until(both, f"{broker.name}: the new tokens described")
    mine = tokens[created.token_id]
    assert (mine.hmac, mine.expiry_timestamp, mine.principal_name) == (
        created.hmac, created.expiry_timestamp_ms, USER)
    assert [(r.principal_type, r.principal_name) for r in mine.renewers] == [("User", "dt-renewer")]
    only_other = described(broker, [Owner(principal_type="User", principal_name="dt-other")])
    assert list(only_other) == [other.token_id]
    assert described(broker, []) == {}

    for mechanism in MECHANISMS:
        until(lambda m=mechanism: token_logs_in(broker, created.token_id, created.hmac, m),
              f"{broker.name}: the token logs in with {mechanism}")
    with connect(broker, created.token_id, base64.b64encode(created.hmac).decode(), token=True) as over_token:
        again = over_token.request(CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1), 3)
        assert (again.error_code, again.principal_name) == (ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, USER)
        assert over_token.request(DescribeDelegationTokenRequest(owners=None), 3).error_code == \
            ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED

    with connect(broker, USER, PASSWORD) as client:
        renewed = client.request(RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=60_000), 2)
        assert renewed.error_code == 0 and renewed.expiry_timestamp_ms < created.expiry_timestamp_ms
        mismatch = client.request(ExpireDelegationTokenRequest(hmac=other.hmac, expiry_time_period_ms=-1), 2)
        assert mismatch.error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
        expired = client.request(ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1), 2)
        assert expired.error_code == 0
    until(lambda: created.token_id not in described(broker), f"{broker.name}: the expired token gone")
    until(lambda: not token_logs_in(broker, created.token_id, created.hmac, "SCRAM-SHA-256"),
          f"{broker.name}: the expired token refused")
    with connect(broker, USER, PASSWORD) as client:
        gone = client.request(RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=-1), 2)
        assert gone.error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
