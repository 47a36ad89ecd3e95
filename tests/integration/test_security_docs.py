"""docs/security.md's recipes, run as written: the ``sh`` blocks marked ``<!-- tested: ... -->`` (the
certificate files made with openssl, the worked SASL_SSL + SCRAM + ACL example) run with bash in a
temporary directory, with the broker the example configures started between its two blocks (on a free
port instead of 9094); then confluent-kafka connects with the files they made. The PLAIN JAAS
``properties`` block is served by a broker of its own. About 30 s; needs ``openssl`` on PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from tidelog.config import parse_properties
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("security-docs"),
              pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")]

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
MARK = "<!-- tested: tests/integration/test_security_docs.py runs this block -->"


def marked_blocks() -> list[tuple[str, str]]:
    """(language, text) of every block marked as tested, in document order."""
    return [(m.group(1), m.group(2)) for m in
            re.finditer(re.escape(MARK) + r"\n```(\w+)\n(.*?)\n```", DOC.read_text(), re.S)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bash(script: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    (language, recipe), *_ = marked_blocks()
    assert language == "sh" and "openssl req -x509" in recipe
    root = tmp_path_factory.mktemp("docs-certs")
    out = bash(recipe, root)
    assert out.returncode == 0, out.stderr
    assert "broker.crt: OK" in out.stdout and "alice.crt: OK" in out.stdout
    return root


def test_the_worked_sasl_ssl_scram_acl_example_runs_as_written(certificates: Path, tmp_path: Path) -> None:
    blocks = marked_blocks()
    assert [lang for lang, _ in blocks] == ["sh", "sh", "sh"]
    port = str(free_port())
    broker_block, clients_block = (text.replace("9094", port) for _, text in blocks[1:])
    for name in ("ca.pem", "broker.pem"):
        shutil.copy(certificates / name, tmp_path / name)
    out = bash(broker_block, tmp_path)
    assert out.returncode == 0, out.stderr
    serve = subprocess.Popen([sys.executable, "-m", "tidelog", "serve", "server.properties",
                              "--override", "metrics.listener=http://127.0.0.1:0"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        assert serve.stdout is not None
        deadline, started = time.monotonic() + 60, ""
        while time.monotonic() < deadline and f":{port}" not in started:
            line = serve.stdout.readline()
            if not line:
                break
            started += line
        assert f"SASL_SSL://127.0.0.1:{port}" in started, started
        threading.Thread(target=serve.stdout.read, daemon=True).start()  # keep the pipe drained
        out = bash(clients_block, tmp_path)
        assert out.returncode == 0, out.stdout + out.stderr
        # the topic has three partitions: the two records may come back in either order
        assert sorted(line for line in out.stdout.splitlines() if line.startswith("order-")) == ["order-1", "order-2"]
        assert "TOPIC_AUTHORIZATION_FAILED" in out.stdout + out.stderr

        # Any client with alice.properties' settings is alice; a wrong password is refused.
        conf = parse_properties((tmp_path / "alice.properties").read_text())
        conf["ssl.ca.location"] = str(tmp_path / "ca.pem")
        producer = Producer(conf)
        producer.produce("orders", b"order-3")
        assert producer.flush(30) == 0
        admin = AdminClient({**conf, "sasl.password": "wrong"})
        with pytest.raises(KafkaException) as e:
            admin.list_topics(timeout=15)
        assert e.value.args[0].code() in (KafkaError._AUTHENTICATION, KafkaError._TRANSPORT, KafkaError._TIMED_OUT)
    finally:
        serve.terminate()
        try:
            serve.wait(30)
        except subprocess.TimeoutExpired:
            serve.kill()


def plain_jaas_properties() -> dict[str, str]:
    text = DOC.read_text()
    m = re.search(r"\*\*PLAIN users in server\.properties\.\*\*.*?```properties\n(.*?)\n```", text, re.S)
    assert m is not None
    return parse_properties(m.group(1))


def test_plain_users_of_the_documented_jaas_entry_log_in(certificates: Path, tmp_path: Path) -> None:
    overrides = {"listeners": "SASL_SSL://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
                 "ssl.keystore.location": str(certificates / "broker.pem"), **plain_jaas_properties()}
    with BrokerProcess(tmp_path / "data", overrides=overrides) as broker:
        port = broker.listener_port("SASL_SSL")
        assert "is ignored" not in broker.stderr_text()  # the JAAS key is used, not warned about
        base = {"bootstrap.servers": f"localhost:{port}", "security.protocol": "SASL_SSL",
                "ssl.ca.location": str(certificates / "ca.pem"), "sasl.mechanism": "PLAIN"}
        producer = Producer({**base, "sasl.username": "alice", "sasl.password": "alice-secret"})
        producer.produce(f"plain-{uuid.uuid4().hex[:6]}", b"hello")
        assert producer.flush(30) == 0
        admin = AdminClient({**base, "sasl.username": "alice", "sasl.password": "wrong"})
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=15)
