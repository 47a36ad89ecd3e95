"""``pip install tidelog`` as a user does it: the wheel ``python -m build`` makes, installed with its
dependencies into a fresh virtualenv outside the checkout (no source tree, no ../shared on any path).
From there ``tidelog serve`` serves a real client, and the sample project ``examples/pytest`` passes
with the plugin the wheel registers. The wheel carries the broker and the plugin, no test suite,
benchmarks or fault-injection tooling.

The wheel is built once per module (``--no-isolation``: with the setuptools of the test's own
environment, nothing fetched); the virtualenv installs the dependencies through pip (its cache makes
that quick after the first time). About a minute on an idle 2-core machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("wheel")]

ROOT = Path(__file__).resolve().parents[2]
#: What the fault lab (tests/fault/lab) is made of: none of it may reach users.
FAULT_LAB = ("tcp_proxy", "nemesis", "jepsen", "sequence_audit", "workload", "history")


def _env() -> dict[str, str]:
    """The environment of a user's shell: nothing pointing into the checkout or the test's venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)))
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("wheel-source")
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out),
                           str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (built,) = out.glob("tidelog-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("user-venv")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(home / "venv")], check=True, timeout=300, env=_env())
    done = subprocess.run([str(home / "venv/bin/python"), "-m", "pip", "install", "--disable-pip-version-check",
                           "--quiet", str(wheel), "pytest"], capture_output=True, text=True, timeout=900,
                          env=_env(), cwd=home)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return home / "venv"


def test_the_wheel_carries_the_broker_and_the_plugin_and_no_test_tooling(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {"tidelog/embedded.py", "tidelog/pytest_plugin.py", "tidelog/server/broker.py",
            "tidelog/cli/zookeeper.pom.xml", "tidelog/web/console/static/index.html"} <= set(names)
    tops = {n.split("/")[0] for n in names}
    # the broker, its PySpark data source registration, the metadata: no tests/, bench/, tools/, examples/
    assert tops == {"tidelog", "pyspark_tidelog", "tidelog-0.1.0.dist-info"}, tops
    modules = {Path(n).stem for n in names if n.endswith(".py")}
    assert not modules & set(FAULT_LAB), modules & set(FAULT_LAB)
    entry_points = zipfile.ZipFile(wheel).read("tidelog-0.1.0.dist-info/entry_points.txt").decode()
    assert "[pytest11]\ntidelog = tidelog.pytest_plugin" in entry_points
    assert "tidelog = tidelog.cli.main:main" in entry_points


def test_tidelog_serve_from_the_wheel_serves_a_real_client(venv: Path, tmp_path: Path) -> None:
    where = subprocess.run([str(venv / "bin/python"), "-c", "import tidelog; print(tidelog.__file__)"],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path, env=_env())
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr  # the installed copy, not the checkout
    proc = subprocess.Popen([str(venv / "bin/tidelog"), "serve", "--port", "0", "--data-dir", str(tmp_path / "d")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env=dict(_env(), PYTHONUNBUFFERED="1"))
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        ports = None
        while ports is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("tidelog ports: "):
                ports = json.loads(line[len("tidelog ports: "):])
        assert ports is not None, proc.stderr.read() if proc.poll() is not None else "no ports line"  # type: ignore[union-attr]
        bootstrap = f"127.0.0.1:{ports['kafka']}"
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        producer.produce("from-the-wheel", b"hello")
        assert producer.flush(60) == 0
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "wheel", "enable.auto.commit": False})
        consumer.assign([TopicPartition("from-the-wheel", 0, 0)])
        msg = None
        deadline = time.monotonic() + 60
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(1)
        consumer.close()
        assert msg is not None and msg.error() is None and msg.value() == b"hello"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0


def test_the_example_project_passes_with_the_installed_plugin(venv: Path, tmp_path: Path) -> None:
    project = tmp_path / "orders-project"
    shutil.copytree(ROOT / "examples/pytest", project, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([str(venv / "bin/python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          capture_output=True, text=True, timeout=900, cwd=project, env=_env())
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout, done.stdout[-2000:]
