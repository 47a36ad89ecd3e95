"""`tidelog serve` as an operator meets it: Kafka's server.properties habits, listeners and their
advertised addresses, one-line errors with exit code 2 for bad input, warnings said once."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from tidelog.testing import BrokerProcess

pytestmark = pytest.mark.integration


def _serve(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tidelog", "serve", "--override", "metrics.listener=http://127.0.0.1:0",
                           *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("args, fragment", [
    (["--port", "99999"], "argument --port: port 99999 is not between 0 and 65535"),
    (["--port", "ninety"], "argument --port: expected a port number, got 'ninety'"),
    (["--override", "log.retention.hours=soon"], "Invalid value 'soon' for configuration log.retention.hours"),
    (["--override", "node.id=seven"], "Invalid value 'seven' for configuration node.id"),
    (["--override", "listeners=localhost:9092"], "configuration listeners: expected NAME://HOST:PORT"),
    (["--override", "advertised.listeners=PLAINTEXT://0.0.0.0:9092"], "nonroutable meta-address 0.0.0.0"),
    (["--override", "listeners=SSL://:9093"], "listener SSL uses TLS and needs a key store"),
    (["--override", "novalue"], "--override expects KEY=VALUE"),
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["/no/such/server.properties"], "cannot read /no/such/server.properties"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], fragment: str) -> None:
    r = _serve(*args, "--data-dir", str(tmp_path / "data"))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert fragment in r.stderr, r.stderr
    assert not (tmp_path / "data").exists()  # nothing was created before the input was checked


def test_a_kafka_server_properties_starts_tidelog(tmp_path: Path) -> None:
    """What a Kafka user's file holds: unlimited retention as -1 hours, an empty-host listener,
    Kafka-only keys Tidelog does not use; a misspelt key gets a suggestion, said once."""
    props = tmp_path / "server.properties"
    props.write_text(
        "node.id=3\n"
        "process.roles=broker,controller\n"
        "listeners=PLAINTEXT://:0\n"
        f"log.dirs={tmp_path / 'data'}\n"
        "log.retention.hours=-1\n"
        "log.retention.bytes=-1\n"
        "num.network.threads=3\n"
        "log.retension.check.interval.ms=1000\n"
        "metrics.listener=http://127.0.0.1:0\n"
    )
    proc = subprocess.Popen([sys.executable, "-m", "tidelog", "serve", str(props)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        console = proc.stdout.readline()
        assert console.startswith("tidelog console: http://127.0.0.1:"), console
        line = proc.stdout.readline()
        assert "tidelog broker 3 listening on 0.0.0.0:" in line, line
        port = int(line.rsplit(":", 1)[1])
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        resource = ConfigResource(ConfigResource.Type.BROKER, "3")
        entries = admin.describe_configs([resource])[resource].result(15)
        assert entries["log.retention.ms"].value == "-1"
        # Bound to every interface without advertised.listeners: the host name is advertised, never 0.0.0.0.
        brokers = admin.list_topics(timeout=15).brokers
        assert {(b.host, b.port) for b in brokers.values()} == {(socket.getfqdn(), port)}
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    suggestions = [ln for ln in err.splitlines() if "did you mean 'log.retention.check.interval.ms'?" in ln]
    assert len(suggestions) == 1, err
    assert "unknown configuration 'process.roles' is ignored" in err


def test_each_listener_advertises_its_own_address(tmp_path: Path) -> None:
    """Two listeners: Metadata answers with the advertised address of the listener the client used."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        second_port = s.getsockname()[1]
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:{second_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "advertised.listeners": "EXTERNAL://external.example:19093",
    }
    with BrokerProcess(tmp_path / "data", overrides=overrides) as broker:
        assert _metadata_brokers(("127.0.0.1", broker.port)) == [("127.0.0.1", broker.port)]
        raw = _metadata_brokers(("127.0.0.1", second_port))
        assert raw == [("external.example", 19093)]


def _metadata_brokers(address: tuple[str, int]) -> list[tuple[str, int]]:
    """One Metadata v1 request over a plain socket, with our codec."""
    from tidelog.protocol.api_keys import ApiKey
    from tidelog.protocol.headers import decode_response, encode_request
    from tidelog.protocol.messages import MetadataRequest

    with socket.create_connection(address, timeout=10) as sock:
        body = encode_request(MetadataRequest(topics=[]), 1, correlation_id=7, client_id="t")
        sock.sendall(len(body).to_bytes(4, "big") + body)
        size = int.from_bytes(_recv(sock, 4), "big")
        frame = _recv(sock, size)
    _, response = decode_response(frame, ApiKey.METADATA, 1)
    return [(b.host, b.port) for b in response.brokers]


def _recv(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        assert chunk, "connection closed"
        buf += chunk
    return buf


def test_warnings_are_said_once_and_never_for_internal_topics(tmp_path: Path) -> None:
    from confluent_kafka import Consumer
    from confluent_kafka.admin import NewTopic

    with BrokerProcess(tmp_path / "data") as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("metrics.by_host", 1)])["metrics.by_host"].result(15)
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "creates-offsets-topic"})
        consumer.subscribe(["metrics.by_host"])
        consumer.poll(3)  # joining the group creates __consumer_offsets
        consumer.close()
        text = broker.stderr_text(until="created topic __consumer_offsets")
    assert "created topic __consumer_offsets" in text
    warnings = [line for line in text.splitlines() if "could collide in metric names" in line]
    assert len(warnings) == 1 and "'metrics.by_host'" in warnings[0], warnings


def test_a_log_dir_pasted_from_dev_cluster_output_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    pasted = f"{tmp_path}/dev/broker-1, console http://127.0.0.1:9644/)"  # dev-cluster's "(data in ..., console ...)"
    r = subprocess.run([sys.executable, "-m", "tidelog", "serve", "--override", "metrics.listener=",
                        "--override", f"log.dirs={pasted}"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Invalid value 'console http://127.0.0.1:9644/)' for configuration log.dirs: a URL" in r.stderr
    assert list(tmp_path.iterdir()) == []  # no "console http:" directory, nor the first one
