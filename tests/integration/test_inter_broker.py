"""The inter-broker security (server/inter_broker.py) of the peer client (tidelog.peer) against a real broker: mutual TLS gives the
connecting broker its certificate principal (a super user may fetch as a replica, another certificate
may not), an untrusted leader certificate is refused with the reason; and the start-up checks of its
settings (SASL between brokers: tests/integration/test_cluster_security.py). One broker; about 10 s."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import trustme

from tidelog.config import BrokerConfig
from tidelog.errors import ConfigError, ErrorCode
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.peer.connection import PeerRefusedError
from tidelog.peer.wire import Security
from tidelog.protocol.messages import CreateTopicsRequest, FetchRequest
from tidelog.server.inter_broker import inter_broker_security
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("inter_broker")]

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


class Certs:
    def __init__(self, root: Path) -> None:
        ca = trustme.CA()
        self.ca = root / "ca.pem"
        ca.cert_pem.write_to_path(str(self.ca))
        self.broker = root / "broker1.pem"
        ca.issue_cert("localhost", "127.0.0.1", common_name="broker1").private_key_and_cert_chain_pem.write_to_path(
            str(self.broker))
        self.other = root / "mallory.pem"
        ca.issue_cert("127.0.0.1", common_name="mallory").private_key_and_cert_chain_pem.write_to_path(str(self.other))
        self.foreign_ca = root / "foreign-ca.pem"
        trustme.CA().cert_pem.write_to_path(str(self.foreign_ca))


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return Certs(tmp_path_factory.mktemp("inter-broker-certs"))


def BROKER_OVERRIDES(certs: Certs) -> dict[str, str]:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
        "ssl.keystore.location": str(certs.broker), "ssl.truststore.location": str(certs.ca),
        "ssl.client.auth": "required", "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/,DEFAULT",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false", "super.users": "User:broker1",
    }


def _config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_props({"listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
                                    "inter.broker.listener.name": "INTERNAL", **props})


def _request(security: Security, port: int, body, version: int):
    async def go():
        client = PeerClient(PeerSettings(lambda broker_id: ("127.0.0.1", port), lambda: security), "test-broker")
        try:
            return await client.send(1, body, version, timeout_ms=10_000)
        finally:
            client.close()
    return asyncio.run(go())


def _replica_fetch(topic: str) -> FetchRequest:
    return FetchRequest(replica_id=1, max_wait_ms=0, min_bytes=0, topics=[FetchRequest.FetchTopic(
        topic=topic, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)])])


def _ssl_connector(keystore: Path, truststore: Path) -> Security:
    config = _config(**{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL",
                        "ssl.keystore.location": str(keystore), "ssl.truststore.location": str(truststore)})
    return inter_broker_security(config, "INTERNAL")


def test_mutual_tls_gives_the_broker_its_certificate_principal(broker: BrokerProcess, certs: Certs) -> None:
    port = broker.listener_port("SSL")
    connector = _ssl_connector(certs.broker, certs.ca)
    created = _request(connector, port, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="ib", num_partitions=1, replication_factor=1)], timeout_ms=10_000), 5)
    assert created.topics[0].error_code in (0, ErrorCode.TOPIC_ALREADY_EXISTS), created
    fetched = _request(connector, port, _replica_fetch("ib"), 12)
    assert fetched.responses[0].partitions[0].error_code == 0  # User:broker1 is a super user
    refused = _request(_ssl_connector(certs.other, certs.ca), port, _replica_fetch("ib"), 12)
    assert refused.responses[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # User:mallory


def test_an_untrusted_leader_certificate_is_refused_with_the_reason(broker: BrokerProcess, certs: Certs) -> None:
    with pytest.raises(PeerRefusedError, match="TLS handshake with 127.0.0.1:.* failed: CERTIFICATE_VERIFY_FAILED"):
        _request(_ssl_connector(certs.broker, certs.foreign_ca), broker.listener_port("SSL"), _replica_fetch("ib"), 12)


@pytest.mark.parametrize("props, message", [
    ({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT"},
     "sasl.mechanism.inter.broker.protocol=GSSAPI is not supported"),
    ({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
      "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"},
     "set listener.name.internal.scram-sha-256.sasl.jaas.config"),
    ({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
      "sasl.mechanism.inter.broker.protocol": "PLAIN",
      "listener.name.internal.plain.sasl.jaas.config": f'{SCRAM} required username="b" password="hunter2";'},
     "must use org.apache.kafka.common.security.plain.PlainLoginModule"),
    ({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL", "ssl.truststore.location": "/nope.pem"},
     "ssl.truststore.location /nope.pem does not exist"),
])
def test_bad_inter_broker_settings_stop_the_broker_with_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        inter_broker_security(_config(**props), "INTERNAL")
    assert "hunter2" not in str(e.value)


def test_settings_described_without_secrets() -> None:
    security = inter_broker_security(_config(**{
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config": f'{SCRAM} required username="b" password="hunter2";'}),
        "INTERNAL")
    assert (security.username, security.password) == ("b", "hunter2")
    assert security.describe() == "inter-broker listener INTERNAL (SASL_PLAINTEXT, SASL SCRAM-SHA-512 as b)"
    assert "hunter2" not in repr(security)
