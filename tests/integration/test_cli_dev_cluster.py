"""``tidelog dev-cluster``: one command starts ZooKeeper and N brokers, prints the bootstrap servers,
and Ctrl-C (SIGINT) stops everything. About 10 s."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.integration.zookeeper import start_zookeeper

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("dev_cluster")]
CLUSTER_DOC = Path(__file__).resolve().parents[2] / "docs" / "cluster.md"


def documented_output(brokers: int) -> list[re.Pattern[str]]:
    """docs/cluster.md's dev-cluster output, one pattern per line (numbers and ``...`` stand for any),
    for ``brokers`` brokers."""
    block = re.search(r"```\ntidelog dev-cluster --brokers 3\n(.*?)\n```", CLUSTER_DOC.read_text(), re.S)
    assert block is not None
    patterns = []
    for line in block.group(1).splitlines():
        line = line.replace("/tmp/tidelog-dev-cluster-...", "...")  # the temporary directory, or --data-dir
        if line.startswith("broker ") and int(line.split()[1]) > brokers:
            continue
        if line.startswith("bootstrap servers: "):
            line = "bootstrap servers: " + ",".join(line.split(": ", 1)[1].split(",")[:brokers])
        parts = re.split(r"(\.\.\.|\d+)", line)
        patterns.append(re.compile("".join(".+" if p == "..." else r"\d+" if p.isdigit() else re.escape(p)
                                           for p in parts if p) + "$"))
    return patterns


def tidelog(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tidelog", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))


def test_two_brokers_start_answer_and_stop_on_ctrl_c(tmp_path):
    start_zookeeper(tmp_path / "probe").stop()  # skips without java and mvn, and fetches ZooKeeper once
    proc = tidelog("dev-cluster", "--brokers", "2", "--port", "0", "--data-dir", str(tmp_path / "dev"))
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, "dev-cluster exited:\n" + "".join(lines) + proc.stderr.read()
            lines.append(line)
            if line.startswith("bootstrap servers: "):
                break
        bootstrap = lines[-1].split(": ", 1)[1].strip()
        assert len(bootstrap.split(",")) == 2
        assert lines[0].startswith("ZooKeeper on 127.0.0.1:") and "/tidelog)" in lines[0]
        # the output as docs/cluster.md shows it (ZooKeeper, brokers 1 and 2, the bootstrap servers)
        for line, pattern in zip(lines, documented_output(2), strict=True):
            assert pattern.match(line.rstrip("\n")), (line, pattern.pattern)
        metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert sorted(metadata.brokers) == [1, 2] and metadata.controller_id in (1, 2)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # --data-dir keeps the data: each broker's directory and ZooKeeper's
    assert {p.name for p in (tmp_path / "dev").iterdir()} == {"zookeeper", "broker-1", "broker-2"}


@pytest.mark.parametrize("args, message", [
    (["--brokers", "0"], "--brokers must be between 1 and 32"),
    (["--port", "65535", "--brokers", "3"], "go past 65535"),
    (["--override", "nonsense"], "--override expects KEY=VALUE"),
    (["--override", "tubemq.master.listener=127.0.0.1:8715", "--override", "tubemq.broker.listener=127.0.0.1:0"],
     "cannot share port 8715; use port 0"),
])
def test_usage_errors_are_one_line_and_exit_2(args, message):
    proc = tidelog("dev-cluster", *args)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert message in err and "Traceback" not in err
