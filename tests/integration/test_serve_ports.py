"""`--port 0` means a free port for every listener of the broker (issue 25 item 4, issue 26): several
brokers on one machine start side by side, each prints every port it opened in one JSON line, and a
port that is taken is reported as one line naming the setting to change."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.integration.zookeeper import start_zookeeper

pytestmark = pytest.mark.integration

PORTS = "tidelog ports: "


class Serve:
    """`tidelog serve ARGS` exactly as a user types it (no metrics.listener of the test's own)."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "tidelog", "serve", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))

    def ports(self, timeout: float = 60.0) -> dict:
        """The JSON of the `tidelog ports:` line (AssertionError with stderr if the broker exits)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith(PORTS):
                return json.loads(line[len(PORTS):])
        self.proc.kill()
        raise AssertionError(f"no ports line; exit {self.proc.wait()}: {self.proc.stderr.read()}")  # type: ignore[union-attr]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def serve() -> Iterator:
    started: list[Serve] = []

    def start(*args: str) -> Serve:
        started.append(Serve(*args))
        return started[-1]

    yield start
    for s in started:
        s.stop()


def _http_ok(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n")
        return sock.recv(64).split(b" ")[1] == b"200"


def test_two_brokers_with_port_0_run_side_by_side(serve, tmp_path: Path) -> None:
    # docs/broker.md's example, twice: before, the second exited on the console's fixed 127.0.0.1:9644
    first = serve("--port", "0", "--data-dir", str(tmp_path / "t1"))
    second = serve("--port", "0", "--data-dir", str(tmp_path / "t2"))
    a, b = first.ports(), second.ports()
    assert first.proc.poll() is None and second.proc.poll() is None
    for ports in (a, b):
        assert set(ports) == {"kafka", "listeners", "http"}
        assert ports["listeners"] == {"PLAINTEXT": ports["kafka"]}
        assert ports["http"] != 9644
        assert _http_ok(ports["http"])
        topics = AdminClient({"bootstrap.servers": f"localhost:{ports['kafka']}"}).list_topics(timeout=20)
        assert topics.brokers
    assert len({a["kafka"], a["http"], b["kafka"], b["http"]}) == 4


def test_a_named_http_port_is_kept_with_port_0(serve, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    ports = serve("--port", "0", "--data-dir", str(tmp_path / "d"),
                  "--override", f"metrics.listener=http://127.0.0.1:{free}").ports()
    assert ports["http"] == free


def test_the_tubemq_listeners_are_in_the_ports_line(serve, tmp_path: Path) -> None:
    ports = serve("--port", "0", "--data-dir", str(tmp_path / "d"), "--override", "tubemq.master.listener=127.0.0.1:0",
                  "--override", "tubemq.broker.listener=127.0.0.1:0").ports()
    assert ports["tubemq.master"] > 0 and ports["tubemq.broker"] > 0
    assert len({ports["kafka"], ports["http"], ports["tubemq.master"], ports["tubemq.broker"]}) == 4


@pytest.mark.parametrize("setting", ["metrics.listener", "listeners", "tubemq.master.listener"])
def test_a_taken_port_is_one_line_naming_the_setting(tmp_path: Path, setting: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        overrides = {"metrics.listener": f"http://127.0.0.1:{port}", "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                     "tubemq.master.listener": f"127.0.0.1:{port}"}
        args = ["--data-dir", str(tmp_path / "d"), "--override", f"{setting}={overrides[setting]}"]
        if setting != "listeners":
            args += ["--port", "0"]
        if setting.startswith("tubemq"):
            args += ["--override", "tubemq.broker.listener=127.0.0.1:0"]
        r = subprocess.run([sys.executable, "-m", "tidelog", "serve", *args], capture_output=True, text=True,
                           timeout=60)
    assert r.returncode == 1, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("tidelog serve:")]
    assert len(errors) == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert f"127.0.0.1:{port}" in errors[0] and "in use" in errors[0]
    named = {"metrics.listener": "set metrics.listener", "listeners": "change its port in listeners",
             "tubemq.master.listener": "change tubemq.master.listener"}
    assert named[setting] in errors[0], errors[0]


def test_three_brokers_of_a_cluster_on_one_host(serve, tmp_path: Path) -> None:
    # docs/cluster.md: three brokers with --port 0 on one machine, no per-broker metrics.listener needed
    zookeeper = start_zookeeper(tmp_path / "zk")
    try:
        brokers = [serve("--port", "0", "--data-dir", str(tmp_path / f"b{i}"), "--override", f"broker.id={i}",
                         "--override", f"zookeeper.connect={zookeeper.connect}/tidelog-ports") for i in (1, 2, 3)]
        ports = [b.ports() for b in brokers]
        assert all(b.proc.poll() is None for b in brokers)
        assert len({p["http"] for p in ports}) == 3
        bootstrap = ",".join(f"127.0.0.1:{p['kafka']}" for p in ports)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        deadline = time.monotonic() + 60
        while len(admin.list_topics(timeout=20).brokers) < 3:
            assert time.monotonic() < deadline, "the brokers never saw each other"
            time.sleep(0.2)
        for b in brokers:
            b.stop()
    finally:
        zookeeper.stop()
