"""A TLS client the broker refuses (``ssl.client.auth=required``: no certificate, or one from another CA)
gets the TLS alert OpenSSL prepared, not a bare EOF; the broker logs one line per refused connection
("Failed authentication with /IP ... (SSL handshake failed: ...)", as Kafka does) and counts it in
``tidelog_failed_authentication_total``. Real clients: Python's ssl module (TLS 1.2 and 1.3) and
confluent-kafka. About 10 s.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
import urllib.request
from pathlib import Path

import pytest
import trustme
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("tls-refusals")]

#: ApiVersions v0, correlation id 1, client id "t": a request a client sends right after the handshake.
API_VERSIONS = struct.pack(">ihhih", 11, 18, 0, 1, 1) + b"t"
LOG_LINE = "Failed authentication with /127.0.0.1 on listener SSL (SSL handshake failed"


class Certs:
    def __init__(self, root: Path) -> None:
        ca = trustme.CA()
        self.ca = root / "ca.pem"
        ca.cert_pem.write_to_path(str(self.ca))
        ca.issue_cert("localhost", "127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(root / "server.pem"))
        self.server = root / "server.pem"
        for name, issuer in (("good", ca), ("stranger", trustme.CA())):  # a client of this CA, one of another
            cert = issuer.issue_cert(f"{name}@example.com", common_name=name)
            cert.private_key_pem.write_to_path(str(root / f"{name}.key"))
            cert.cert_chain_pems[0].write_to_path(str(root / f"{name}.crt"))
        self.root = root

    def context(self, client: str | None = None, tls: ssl.TLSVersion | None = None) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca))
        if client is not None:
            ctx.load_cert_chain(str(self.root / f"{client}.crt"), str(self.root / f"{client}.key"))
        if tls is not None:
            ctx.minimum_version = ctx.maximum_version = tls
        return ctx


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return Certs(tmp_path_factory.mktemp("certs"))


def BROKER_OVERRIDES(certs: Certs) -> dict[str, str]:
    return {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "ssl.keystore.location": str(certs.server), "ssl.truststore.location": str(certs.ca),
            "ssl.client.auth": "required"}


def on_broker_started(b: BrokerProcess) -> None:
    b.ssl_port = b.listener_port("SSL")


def failed_authentications(broker: BrokerProcess) -> float:
    assert broker.http_url is not None
    with urllib.request.urlopen(broker.http_url + "metrics", timeout=10) as r:
        text = r.read().decode()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "tidelog_failed_authentication_total" and s.labels == {"listener": "SSL"}:
                return s.value
    return 0.0


def refusal_seen_by(broker: BrokerProcess, ctx: ssl.SSLContext) -> ssl.SSLError:
    """Connect, finish the handshake as far as the client can, send a request: the SSLError raised
    (TLS 1.2: by the handshake; TLS 1.3: at the first read, the client having sent its Finished)."""
    with (socket.create_connection(("127.0.0.1", broker.ssl_port), timeout=15) as raw,
          pytest.raises(ssl.SSLError) as caught,
          ctx.wrap_socket(raw, server_hostname="localhost") as tls):
        tls.sendall(API_VERSIONS)
        tls.recv(1)  # with a bare EOF instead of the alert, recv returns b"" and no SSLError is raised
    return caught.value


def log_lines(broker: BrokerProcess) -> list[str]:
    return [line for line in broker.stderr_text().splitlines() if LOG_LINE in line]


def wait_log_lines(broker: BrokerProcess, n: int) -> list[str]:
    deadline = time.monotonic() + 20
    while len(log_lines(broker)) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return log_lines(broker)


@pytest.mark.parametrize(("client", "tls", "reason", "logged"), [
    (None, ssl.TLSVersion.TLSv1_3, "TLSV13_ALERT_CERTIFICATE_REQUIRED", "PEER_DID_NOT_RETURN_A_CERTIFICATE"),
    (None, ssl.TLSVersion.TLSv1_2, "SSLV3_ALERT_HANDSHAKE_FAILURE", "PEER_DID_NOT_RETURN_A_CERTIFICATE"),
    ("stranger", ssl.TLSVersion.TLSv1_3, "TLSV1_ALERT_UNKNOWN_CA", "CERTIFICATE_VERIFY_FAILED"),
    ("stranger", ssl.TLSVersion.TLSv1_2, "TLSV1_ALERT_UNKNOWN_CA", "CERTIFICATE_VERIFY_FAILED"),
])
def test_a_refused_client_gets_the_alert_and_the_broker_logs_and_counts_it(broker, certs, client, tls, reason,
                                                                            logged):
    before_lines, before_count = len(log_lines(broker)), failed_authentications(broker)
    error = refusal_seen_by(broker, certs.context(client, tls))
    assert error.reason == reason
    wait_log_lines(broker, before_lines + 1)
    time.sleep(0.5)  # a second line for the same connection would have arrived by now
    lines = log_lines(broker)
    assert len(lines) == before_lines + 1, lines[before_lines:]
    assert logged in lines[-1]
    assert failed_authentications(broker) == before_count + 1


def test_a_client_with_a_certificate_of_the_ca_is_served(broker, certs):
    before = failed_authentications(broker)
    with (socket.create_connection(("127.0.0.1", broker.ssl_port), timeout=15) as raw,
          certs.context("good").wrap_socket(raw, server_hostname="localhost") as tls):
        tls.sendall(API_VERSIONS)
        size = struct.unpack(">i", tls.recv(4))[0]
        assert size > 0
    assert failed_authentications(broker) == before


def test_confluent_kafka_without_a_certificate_reports_the_alert(broker, certs):
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": f"localhost:{broker.ssl_port}", "security.protocol": "SSL",
                         "ssl.ca.location": str(certs.ca), "error_cb": lambda e: errors.append(str(e)),
                         "reconnect.backoff.ms": 5000, "reconnect.backoff.max.ms": 10000})
    try:
        deadline = time.monotonic() + 30
        while not any("alert" in e for e in errors) and time.monotonic() < deadline:
            producer.poll(0.2)
    finally:
        producer.flush(0)
    assert any("certificate required" in e for e in errors), errors
