"""The broker's HTTP listener (metrics.listener): health checks over real HTTP, the URL printed at
start-up, and a clear failure when its port is taken."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request

from tidelog.testing import BrokerProcess


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_health_endpoints_answer_on_the_printed_url(tmp_path):
    with BrokerProcess(tmp_path) as broker:
        assert broker.http_url is not None and broker.http_url.startswith("http://127.0.0.1:")
        assert _get(broker.http_url + "healthz") == (200, {"status": "live"})
        assert _get(broker.http_url + "readyz") == (200, {"status": "ready"})
        try:
            urllib.request.urlopen(broker.http_url + "no-such-page", timeout=10)
        except urllib.error.HTTPError as e:
            assert e.code == 404
        else:
            raise AssertionError("an unknown path answered 200")


def test_empty_metrics_listener_serves_no_http(tmp_path):
    with BrokerProcess(tmp_path, overrides={"metrics.listener": ""}) as broker:
        assert broker.http_url is None


def test_taken_http_port_fails_start_with_a_clear_message(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "tidelog", "serve", "--port", "0", "--data-dir", str(tmp_path),
             "--override", f"metrics.listener=http://127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert f"http://127.0.0.1:{port} (metrics.listener)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_metrics_listener_must_be_an_http_url(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "tidelog", "serve", "--port", "0", "--data-dir", str(tmp_path),
         "--override", "metrics.listener=https://127.0.0.1:9644"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "metrics.listener" in proc.stderr and "http://HOST:PORT" in proc.stderr
