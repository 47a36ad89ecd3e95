"""Security with real clients and real sockets: the four security protocols, TLS with and without client
certificates, SASL PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512 with confluent-kafka, kafka-python and aiokafka,
users created offline (the first admin) and over the admin API (``tidelog users``), re-authentication,
sensitive configs, and hostile input that must leave the broker serving. Certificates are made here
(trustme). One broker for the module (plus a short-lived one for re-authentication); ~40 s.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import trustme
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from tidelog.testing import BrokerProcess
from tidelog.testing.client import ConnectionClosed, WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("security")]

ADMIN, ADMIN_PW = "admin", "admin-secret"
ALICE, ALICE_PW = "alice", "alice-secret"
KEY_PASSWORD = "key-pass-never-shown"
LISTENERS = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"


class Certs:
    def __init__(self, root: Path) -> None:
        ca = trustme.CA()
        self.ca = root / "ca.pem"
        ca.cert_pem.write_to_path(str(self.ca))
        server = ca.issue_cert("localhost", "127.0.0.1")
        self.server = root / "server.pem"
        server.private_key_and_cert_chain_pem.write_to_path(str(self.server))
        client = ca.issue_cert("alice@example.com", common_name="alice", organization_name="Example",
                               organization_unit_name="eng")
        self.client_key, self.client_cert = root / "client.key", root / "client.crt"
        client.private_key_pem.write_to_path(str(self.client_key))
        client.cert_chain_pems[0].write_to_path(str(self.client_cert))
        self.client_context = ssl.create_default_context(cafile=str(self.ca))


def _users_add(data_dir: Path, user: str, password: str) -> None:
    subprocess.run([sys.executable, "-m", "tidelog", "users", "add", user, "--data-dir", str(data_dir),
                    "--password-stdin"], input=password + "\n", text=True, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return Certs(tmp_path_factory.mktemp("certs"))


def _overrides(certs: Certs, **extra: str) -> dict[str, str]:
    return {"listeners": LISTENERS, "ssl.keystore.location": str(certs.server), "ssl.key.password": KEY_PASSWORD,
            "ssl.truststore.location": str(certs.ca), "ssl.client.auth": "requested",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=eng,.*$/$1/,DEFAULT", **extra}


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory, certs: Certs):
    data = tmp_path_factory.mktemp("secure")
    _users_add(data, ADMIN, ADMIN_PW)  # the first admin, before the broker ever starts
    _users_add(data, ALICE, ALICE_PW)
    with BrokerProcess(data, overrides=_overrides(certs)) as broker:
        broker.ports = {name: broker.listener_port(name) for name in ("SSL", "SASL_PLAINTEXT", "SASL_SSL")}
        yield broker


def _bootstrap(broker, protocol: str) -> str:
    if protocol == "PLAINTEXT":
        return broker.bootstrap
    host = "localhost" if "SSL" in protocol else "127.0.0.1"
    return f"{host}:{broker.ports[protocol]}"


CASES = [
    ("PLAINTEXT", None), ("SSL", None), ("SASL_PLAINTEXT", "PLAIN"), ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN"),
]


def _ck_conf(broker, certs: Certs, protocol: str, mechanism: str | None, user=ALICE, password=ALICE_PW) -> dict:
    conf: dict = {"bootstrap.servers": _bootstrap(broker, protocol), "security.protocol": protocol}
    if "SSL" in protocol:
        conf["ssl.ca.location"] = str(certs.ca)
    if mechanism:
        conf.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    return conf


def _ck_round_trip(conf: dict, topic: str) -> list[bytes]:
    producer = Producer(conf)
    for i in range(3):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(15) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 3 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg.value())
    consumer.close()
    return got


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_confluent_kafka_produces_and_consumes(secure, certs, protocol, mechanism):
    topic = f"ck-{protocol}-{mechanism}-{uuid.uuid4().hex[:6]}".lower()
    assert _ck_round_trip(_ck_conf(secure, certs, protocol, mechanism), topic) == [b"v0", b"v1", b"v2"]


def test_confluent_kafka_with_a_client_certificate(secure, certs):
    conf = {**_ck_conf(secure, certs, "SSL", None), "ssl.certificate.location": str(certs.client_cert),
            "ssl.key.location": str(certs.client_key)}
    assert _ck_round_trip(conf, f"mtls-{uuid.uuid4().hex[:6]}") == [b"v0", b"v1", b"v2"]
    # The mapping rule made the principal "alice" (logged by nothing; checked by the unit tests), and a
    # certificate the CA did not sign is refused by the handshake:
    other = trustme.CA().issue_cert("mallory")
    root = certs.ca.parent
    other.private_key_pem.write_to_path(str(root / "m.key"))
    other.cert_chain_pems[0].write_to_path(str(root / "m.crt"))
    ctx = ssl.create_default_context(cafile=str(certs.ca))
    ctx.load_cert_chain(str(root / "m.crt"), str(root / "m.key"))
    with socket.create_connection(("127.0.0.1", secure.ports["SSL"]), timeout=5) as raw:
        try:  # TLS 1.3: the client learns of the refusal at its first read
            with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(b"\x00\x00\x00\x00")
                assert tls.recv(1) == b""
        except (ssl.SSLError, ConnectionError):
            pass
    _still_serving(secure, certs)


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_kafka_python_produces_and_consumes(secure, certs, protocol, mechanism):
    from kafka import KafkaConsumer, KafkaProducer

    conf: dict = {"bootstrap_servers": _bootstrap(secure, protocol), "security_protocol": protocol}
    if "SSL" in protocol:
        conf["ssl_cafile"] = str(certs.ca)
    if mechanism:
        conf.update(sasl_mechanism=mechanism, sasl_plain_username=ALICE, sasl_plain_password=ALICE_PW)
    topic = f"kp-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(**conf)
    for i in range(3):
        producer.send(topic, f"v{i}".encode())
    producer.flush(15)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=15_000, **conf)
    got = []
    for m in consumer:
        got.append(m.value)
        if len(got) == 3:
            break
    consumer.close()
    assert got == [b"v0", b"v1", b"v2"]


@pytest.mark.parametrize(("protocol", "mechanism"), CASES)
def test_aiokafka_produces_and_consumes(secure, certs, protocol, mechanism):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    conf: dict = {"bootstrap_servers": _bootstrap(secure, protocol), "security_protocol": protocol}
    if "SSL" in protocol:
        conf["ssl_context"] = ssl.create_default_context(cafile=str(certs.ca))
    if mechanism:
        conf.update(sasl_mechanism=mechanism, sasl_plain_username=ALICE, sasl_plain_password=ALICE_PW)
    topic = f"ak-{uuid.uuid4().hex[:8]}"

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**conf)
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait(topic, f"v{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **conf)
        await consumer.start()
        got = []
        try:
            async with asyncio.timeout(20):
                async for msg in consumer:
                    got.append(msg.value)
                    if len(got) == 3:
                        break
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == [b"v0", b"v1", b"v2"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
@pytest.mark.parametrize("user", [ALICE, "nobody"])
def test_wrong_password_or_unknown_user_is_refused_with_the_same_error(secure, certs, mechanism, user):
    errors = []
    conf = {**_ck_conf(secure, certs, "SASL_PLAINTEXT", mechanism, user=user, password="wrong"),
            "error_cb": errors.append}
    admin = AdminClient(conf)
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)
    admin.poll(1)  # serves error_cb
    text = " ".join(e.str() for e in errors)
    expected = ("Invalid username or password" if mechanism == "PLAIN"
                else "invalid credentials with SASL mechanism SCRAM-SHA-256")
    assert expected in text
    assert "wrong" not in secure.stderr_text()


# ------------------------------------------------------------------------------- raw connections


def _wire(broker, protocol: str, certs: Certs) -> WireClient:
    sock = socket.create_connection(("127.0.0.1", broker.ports[protocol]), timeout=10)
    if "SSL" in protocol:
        sock = certs.client_context.wrap_socket(sock, server_hostname="localhost")
    return WireClient(sock)


def _still_serving(broker, certs: Certs) -> None:
    """Another connection on the SASL_SSL listener authenticates and gets metadata."""
    with _wire(broker, "SASL_SSL", certs) as client:
        assert client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
        done = client.request(SaslAuthenticateRequest(auth_bytes=f"\x00{ALICE}\x00{ALICE_PW}".encode()), 2)
        assert done.error_code == 0
        assert client.request(MetadataRequest(topics=[]), 12).brokers


def test_a_request_before_authentication_closes_the_connection(secure, certs):
    with _wire(secure, "SASL_PLAINTEXT", certs) as client:
        versions = ApiVersionsRequest(client_software_name="test", client_software_version="1")
        assert client.request(versions, 3).error_code == 0  # allowed before authentication
        client.send(MetadataRequest(topics=[]), 12)
        assert client.is_closed_by_peer()
    _still_serving(secure, certs)


def test_authenticate_before_handshake_is_an_illegal_state(secure, certs):
    with _wire(secure, "SASL_PLAINTEXT", certs) as client:
        response = client.request(SaslAuthenticateRequest(auth_bytes=b"\x00a\x00b"), 1)
        assert response.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert client.is_closed_by_peer()
    _still_serving(secure, certs)


def test_unsupported_mechanism_lists_the_enabled_ones(secure, certs):
    with _wire(secure, "SASL_PLAINTEXT", certs) as client:
        response = client.request(SaslHandshakeRequest(mechanism="GSSAPI"), 1)
        assert response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert response.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert client.is_closed_by_peer()


def test_scram_with_a_forged_nonce_or_proof_fails(secure, certs):
    for final in ("c=biws,r={nonce}X,p=AAAA", "c=biws,r={nonce},p=" + "A" * 44):
        with _wire(secure, "SASL_SSL", certs) as client:
            client.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
            first = client.request(SaslAuthenticateRequest(auth_bytes=f"n,,n={ALICE},r=abc".encode()), 2)
            assert first.error_code == 0
            nonce = dict(p.split("=", 1) for p in first.auth_bytes.decode().split(","))["r"]
            assert nonce.startswith("abc") and len(nonce) > 3
            response = client.request(SaslAuthenticateRequest(auth_bytes=final.format(nonce=nonce).encode()), 2)
            assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert client.is_closed_by_peer()
    _still_serving(secure, certs)


def test_oversized_token_before_authentication_closes(secure, certs):
    with _wire(secure, "SASL_PLAINTEXT", certs) as client:
        client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        client.send_raw(struct.pack(">i", 600_000) + b"\x00" * 1024)  # above sasl.server.max.receive.size
        assert client.is_closed_by_peer()
    _still_serving(secure, certs)


def test_handshake_v0_then_bare_tokens(secure, certs):
    with _wire(secure, "SASL_PLAINTEXT", certs) as client:
        assert client.request(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
        token = f"\x00{ALICE}\x00{ALICE_PW}".encode()
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client.receive_frame() == b""  # PLAIN's empty reply, unframed by SaslAuthenticate
        assert client.request(MetadataRequest(topics=[]), 12).brokers


def test_bad_bare_token_after_handshake_v0_closes(secure, certs):
    with _wire(secure, "SASL_PLAINTEXT", certs) as client:
        client.request(SaslHandshakeRequest(mechanism="PLAIN"), 0)
        client.send_raw(struct.pack(">i", 4) + b"\x00a\x00b")
        assert client.is_closed_by_peer()
    _still_serving(secure, certs)


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_tls_garbage_and_plaintext_to_a_tls_port_are_dropped(secure, certs, protocol):
    with socket.create_connection(("127.0.0.1", secure.ports[protocol]), timeout=10) as sock:
        client = WireClient(sock)
        client.send(ApiVersionsRequest(), 3)  # a Kafka request in clear text
        assert client.is_closed_by_peer(timeout=15)
    with socket.create_connection(("127.0.0.1", secure.ports[protocol]), timeout=10) as sock:
        sock.sendall(b"\x16\x03\x01\x00\x05garbage" + bytes(range(256)))  # a broken TLS record
        assert WireClient(sock).is_closed_by_peer(timeout=15)
    _still_serving(secure, certs)


def test_sasl_handshake_on_a_plaintext_listener_is_an_illegal_state(secure):
    with WireClient.connect(secure.bootstrap) as client:
        assert client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == ErrorCode.ILLEGAL_SASL_STATE


# ------------------------------------------------------------------------------------- users, configs


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tidelog", *args], input=stdin, text=True, capture_output=True,
                          timeout=60)


def test_users_add_list_delete_over_sasl_ssl(secure, certs, tmp_path):
    props = tmp_path / "admin.properties"
    props.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username={ADMIN}\n"
                     f"sasl.password={ADMIN_PW}\nssl.ca.location={certs.ca}\n")
    bootstrap = _bootstrap(secure, "SASL_SSL")
    common = ["--bootstrap-server", bootstrap, "--command-config", str(props)]
    added = _cli("users", "add", "carol", "--password-stdin", "--mechanism", "SCRAM-SHA-256", "--iterations", "8192",
                 *common, stdin="carol-pw\n")
    assert added.returncode == 0, added.stderr
    listed = _cli("users", "list", *common)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert ["carol", "SCRAM-SHA-256", "8192"] in rows and ["admin", "SCRAM-SHA-512", "4096"] in rows
    conf = _ck_conf(secure, certs, "SASL_SSL", "SCRAM-SHA-256", user="carol", password="carol-pw")
    assert AdminClient(conf).list_topics(timeout=10).brokers
    deleted = _cli("users", "delete", "carol", *common)
    assert deleted.returncode == 0, deleted.stderr
    with pytest.raises(KafkaException):
        AdminClient(conf).list_topics(timeout=3)
    missing = _cli("users", "delete", "carol", *common)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "carol" in missing.stderr
    assert "carol-pw" not in secure.stderr_text()


def _admin_properties(certs, path: Path) -> Path:
    path.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username={ADMIN}\n"
                    f"sasl.password={ADMIN_PW}\nssl.ca.location={certs.ca}\n")
    return path


def _logs_in(broker, certs, mechanism: str, user: str, password: str) -> bool:
    conf = _ck_conf(broker, certs, "SASL_SSL", mechanism, user=user, password=password)
    admin = AdminClient(conf)
    try:
        return bool(admin.list_topics(timeout=5).brokers)
    except KafkaException:
        return False


def test_users_add_and_delete_with_both_mechanisms_as_documented(secure, certs, tmp_path):
    """docs/security.md's example: `echo "$PW" | tidelog users add dora --password-stdin --command-config
    admin.properties` gives dora both SCRAM mechanisms, `users delete dora` takes both away. Kafka refuses a
    user named twice in one AlterUserScramCredentials request (DUPLICATE_RESOURCE), so the CLI sends one
    request per mechanism."""
    common = ["--bootstrap-server", _bootstrap(secure, "SASL_SSL"), "--command-config",
              str(_admin_properties(certs, tmp_path / "admin.properties"))]
    added = _cli("users", "add", "dora", "--password-stdin", *common, stdin="dora-pw\n")
    assert added.returncode == 0, added.stderr
    assert "SCRAM-SHA-256, SCRAM-SHA-512" in added.stdout
    rows = [line.split() for line in _cli("users", "list", "dora", *common).stdout.splitlines()[1:]]
    assert rows == [["dora", "SCRAM-SHA-256", "4096"], ["dora", "SCRAM-SHA-512", "4096"]]
    assert _logs_in(secure, certs, "SCRAM-SHA-256", "dora", "dora-pw")
    assert _logs_in(secure, certs, "SCRAM-SHA-512", "dora", "dora-pw")
    deleted = _cli("users", "delete", "dora", *common)
    assert deleted.returncode == 0, deleted.stderr
    assert "SCRAM-SHA-256, SCRAM-SHA-512" in deleted.stdout
    assert not _logs_in(secure, certs, "SCRAM-SHA-256", "dora", "dora-pw")
    assert not _logs_in(secure, certs, "SCRAM-SHA-512", "dora", "dora-pw")
    gone = _cli("users", "list", "dora", *common)
    assert gone.returncode == 1 and "dora" in gone.stderr


def test_every_client_command_takes_command_config(secure, certs, tmp_path):
    """The global --command-config (or $TIDELOG_COMMAND_CONFIG) takes any client command to a secured
    listener: the admin creates a topic, produces, consumes and lists ACL-free topics over SASL_SSL."""
    props = tmp_path / "admin.properties"
    props.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username={ADMIN}\n"
                     f"sasl.password={ADMIN_PW}\nssl.ca.location={certs.ca}\n")
    bootstrap = _bootstrap(secure, "SASL_SSL")
    created = _cli("--command-config", str(props), "topics", "create", "cli-secured", "--bootstrap-server", bootstrap)
    assert created.returncode == 0, created.stderr
    produced = _cli("produce", "cli-secured", "--bootstrap-server", bootstrap, "--command-config", str(props),
                    stdin="over-tls\n")
    assert produced.returncode == 0, produced.stderr
    env_run = subprocess.run(
        [sys.executable, "-m", "tidelog", "consume", "cli-secured", "--from-beginning", "--max-messages", "1",
         "--bootstrap-server", bootstrap], env={**os.environ, "TIDELOG_COMMAND_CONFIG": str(props)},
        text=True, capture_output=True, timeout=60)
    assert env_run.returncode == 0 and env_run.stdout.strip() == "over-tls", env_run.stderr
    missing = _cli("--command-config", str(tmp_path / "nope.properties"), "topics", "list",
                   "--bootstrap-server", bootstrap)
    assert missing.returncode == 2 and "nope.properties" in missing.stderr and "Traceback" not in missing.stderr
    quotas = _cli("quotas", "describe", "--bootstrap-server", bootstrap, "--command-config", str(props))
    assert quotas.returncode == 0, quotas.stderr
    assert ADMIN_PW not in secure.stderr_text()


def test_users_add_refuses_bad_iterations_with_one_line(secure, tmp_path):
    result = _cli("users", "add", "x", "--password", "p", "--iterations", "100", "--data-dir", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--iterations" in result.stderr.splitlines()[-1]


def test_sensitive_configs_are_described_without_their_value(secure):
    admin = AdminClient({"bootstrap.servers": secure.bootstrap})
    configs = admin.describe_configs([ConfigResource(ResourceType.BROKER, "0")])
    entries = next(iter(configs.values())).result(timeout=10)
    entry = entries["ssl.key.password"]
    assert entry.is_sensitive and entry.value is None
    assert not entries["ssl.client.auth"].is_sensitive and entries["ssl.client.auth"].value == "requested"
    assert KEY_PASSWORD not in secure.stderr_text()


# ------------------------------------------------------------------------------------ re-authentication


def test_expired_session_closes_the_connection_and_clients_reauthenticate(tmp_path, certs):
    data = tmp_path / "data"
    _users_add(data, ALICE, ALICE_PW)
    with BrokerProcess(data, overrides=_overrides(certs, **{"connections.max.reauth.ms": "1500"})) as broker:
        broker.ports = {name: broker.listener_port(name) for name in ("SSL", "SASL_PLAINTEXT", "SASL_SSL")}
        with _wire(broker, "SASL_PLAINTEXT", certs) as client:
            client.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
            done = client.request(SaslAuthenticateRequest(auth_bytes=f"\x00{ALICE}\x00{ALICE_PW}".encode()), 1)
            assert done.error_code == 0 and done.session_lifetime_ms == 1500
            assert client.request(MetadataRequest(topics=[]), 12).brokers
            time.sleep(1.7)
            try:
                client.send(MetadataRequest(topics=[]), 12)
            except ConnectionClosed:
                pass
            assert client.is_closed_by_peer()
        # librdkafka re-authenticates (KIP-368) before its session ends: a producer outlives several sessions.
        conf = _ck_conf(broker, certs, "SASL_PLAINTEXT", "SCRAM-SHA-256")
        producer = Producer(conf)
        for i in range(8):
            producer.produce("reauth", f"r{i}".encode())
            assert producer.flush(10) == 0
            time.sleep(0.5)
        assert broker.stderr_text().count("session expired") == 1
