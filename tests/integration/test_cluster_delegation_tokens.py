"""Delegation tokens in a cluster (ZooKeeper mode, three brokers with the same
``delegation.token.secret.key``): a token created on one broker is kept in ZooKeeper in Kafka's layout
(``/delegation_token/tokens/<id>``), every broker authenticates it (SCRAM ``tokenauth``, as the owner),
a renewal on another broker is seen by all, and once expired on a third broker no broker accepts it.
About 30 s (ZooKeeper and three brokers start once)."""

from __future__ import annotations

import base64
import json

import pytest
from kazoo.client import KazooClient

from tests.integration.zookeeper import ZooKeeperProcess, add_scram_user
from tidelog.errors import ErrorCode
from tidelog.peer.wire import SaslRefused
from tidelog.protocol.messages import (
    CreateDelegationTokenRequest,
    DescribeDelegationTokenRequest,
    ExpireDelegationTokenRequest,
    MetadataRequest,
    RenewDelegationTokenRequest,
)
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("cluster_delegation_tokens")]

CHROOT = "/tidelog-tokens"
USER, PASSWORD = "token-owner", "owner-secret"
CLUSTER = {"chroot": CHROOT, "overrides": {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
    "delegation.token.secret.key": "the-same-on-every-broker",
}}


def prepare_cluster(_root, zookeeper: ZooKeeperProcess) -> None:
    add_scram_user(zookeeper, CHROOT, USER, PASSWORD, "SCRAM-SHA-256")


def _connect(cluster: LocalCluster, broker_id: int, user: str, password: str, *, token: bool = False,
             mechanism: str = "SCRAM-SHA-256") -> WireClient:
    port = cluster.brokers[broker_id].listener_port("SASL_PLAINTEXT")
    client = WireClient.connect(f"127.0.0.1:{port}")
    try:
        client.authenticate(mechanism, user, password, tokenauth=token)
    except SaslRefused:
        client.close()
        raise
    return client


def _authenticates(cluster: LocalCluster, broker_id: int, token_id: str, hmac_b64: str) -> bool:
    try:
        with _connect(cluster, broker_id, token_id, hmac_b64, token=True, mechanism="SCRAM-SHA-512") as client:
            return client.request(MetadataRequest(topics=[]), 12).controller_id >= 0
    except SaslRefused:
        return False


def test_a_token_made_on_one_broker_authenticates_on_every_broker(cluster: LocalCluster):
    with _connect(cluster, 1, USER, PASSWORD) as owner:
        created = owner.request(CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1), 3)
    assert created.error_code == 0 and created.principal_name == USER
    token_id, hmac_b64 = created.token_id, base64.b64encode(created.hmac).decode()

    # Kafka's ZooKeeper layout
    zk = KazooClient(hosts=cluster.zookeeper.connect)
    zk.start(10)
    try:
        data, _ = zk.get(f"{CHROOT}/delegation_token/tokens/{token_id}")
    finally:
        zk.stop()
        zk.close()
    stored = json.loads(data)
    assert stored["version"] == 3 and stored["owner"] == f"User%3A{USER}" and stored["tokenId"] == token_id
    assert hmac_b64 not in data.decode()

    for broker_id in (1, 2, 3):
        wait_for(lambda b=broker_id: _authenticates(cluster, b, token_id, hmac_b64), timeout=30,
                 what=f"broker {broker_id} to authenticate the token")
    with _connect(cluster, 2, token_id, hmac_b64, token=True) as over_token:
        # the session is the owner's, but a token's connection may not ask for tokens
        refused = over_token.request(CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1), 3)
        assert refused.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert refused.principal_name == USER

    with _connect(cluster, 2, USER, PASSWORD) as owner:
        renewed = owner.request(RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=60_000), 2)
        assert renewed.error_code == 0 and renewed.expiry_timestamp_ms < created.expiry_timestamp_ms

    def described_expiry(broker_id: int) -> int | None:
        with _connect(cluster, broker_id, USER, PASSWORD) as client:
            answer = client.request(DescribeDelegationTokenRequest(owners=None), 3)
        return next((t.expiry_timestamp for t in answer.tokens if t.token_id == token_id), None)

    wait_for(lambda: described_expiry(1) == renewed.expiry_timestamp_ms, timeout=30,
             what="broker 1 to see the renewal made on broker 2")

    with _connect(cluster, 3, USER, PASSWORD) as owner:
        expired = owner.request(ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1), 2)
        assert expired.error_code == 0
    for broker_id in (1, 2, 3):
        wait_for(lambda b=broker_id: not _authenticates(cluster, b, token_id, hmac_b64), timeout=30,
                 what=f"broker {broker_id} to refuse the expired token")
