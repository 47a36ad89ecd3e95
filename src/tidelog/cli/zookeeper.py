"""A real Apache ZooKeeper (standalone, on loopback) for ``tidelog dev-cluster`` (:mod:`tidelog.cli.dev_cluster`),
the pytest plugin's ``tidelog_cluster`` and the cluster-mode tests.

ZooKeeper comes from Maven Central, pinned in ``zookeeper.pom.xml`` beside this module: :func:`classpath`
copies that pom into ``~/.cache/tidelog/zookeeper/<digest>/`` (``TIDELOG_CACHE`` moves the cache) and
runs ``mvn dependency:build-classpath`` there once (an exclusive ``flock`` makes concurrent callers
resolve once); the jars stay in Maven's local repository (``~/.m2``). Needs ``java`` and ``mvn``, the
toolchain the Kafka oracle tests already need; ``TIDELOG_MAVEN_ARGS`` adds arguments to ``mvn`` (e.g.
``-o``).

    with ZooKeeperProcess(tmp_path / "zk") as zk:
        BrokerProcess(..., overrides={"zookeeper.connect": zk.connect, "broker.id": "1"})

:class:`ZooKeeperProcess` runs ``ZooKeeperServerMain <port> <data dir>`` with the admin server off,
waits until ``srvr`` reports it serving; stopping, killing and restarting (same port and data) are
:class:`~tidelog.testing.server_process.ServerProcess`'s. Not thread-safe.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import shutil
import socket
import subprocess
import threading
import time
from importlib.resources import files
from pathlib import Path

from tidelog.testing.server_process import ServerProcess

POM = "zookeeper.pom.xml"
RESOLVE_TIMEOUT_S = 600
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"


class ZooKeeperUnavailable(RuntimeError):
    """java or mvn is missing, or Maven could not fetch ZooKeeper; the message says which."""


def cache_dir() -> Path:
    base = os.environ.get("TIDELOG_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "tidelog")
    return Path(base) / "zookeeper"


def classpath() -> str:
    """ZooKeeper's ``java -cp`` classpath, resolved by Maven on first use."""
    missing = [c for c in ("java", "mvn") if shutil.which(c) is None]
    if missing:
        raise ZooKeeperUnavailable(f"ZooKeeper needs {' and '.join(missing)} on PATH (it is fetched from Maven "
                                   "Central and runs on the JVM)")
    pom = files("tidelog.cli").joinpath(POM).read_bytes()
    extra = shlex.split(os.environ.get("TIDELOG_MAVEN_ARGS", ""))
    digest = hashlib.sha256(pom + " ".join(extra).encode()).hexdigest()[:16]
    project = cache_dir() / digest
    project.mkdir(parents=True, exist_ok=True)
    out = project / "classpath.txt"
    with (project / "resolve.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out.exists():
            jars = out.read_text().strip().split(os.pathsep)
            if jars and all(Path(j).exists() for j in jars):
                return os.pathsep.join(jars)
        (project / "pom.xml").write_bytes(pom)
        cmd = ["mvn", "-B", "-q", "-Dstyle.color=never", *extra, "dependency:build-classpath",
               f"-Dmdep.outputFile={out}", "-Dmdep.includeScope=runtime"]
        try:
            done = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ZooKeeperUnavailable(f"{' '.join(cmd)} took more than {RESOLVE_TIMEOUT_S} s") from None
        if done.returncode != 0 or not out.exists():
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
            raise ZooKeeperUnavailable(f"cannot fetch ZooKeeper with Maven (in {project}):\n{tail}")
        return out.read_text().strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def four_letter_word(host: str, port: int, word: str, timeout: float = 1.0) -> str:
    """ZooKeeper's answer to a four-letter command (``ruok`` -> ``imok``); "" if it does not answer."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


class ZooKeeperProcess(ServerProcess):
    stop_timeout = 10.0

    def __init__(self, data_dir: Path, *, port: int = 0, tick_time_ms: int = 500,
                 start_timeout: float = 60.0) -> None:
        self.data_dir = Path(data_dir)
        self.port = port
        self.tick_time_ms = tick_time_ms
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []

    @property
    def connect(self) -> str:
        """The ``zookeeper.connect`` value (without chroot)."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> ZooKeeperProcess:
        """Start and wait until it serves. A free port picked here can be taken by another process
        before ZooKeeper binds it: then it tries again with another one (twice at most)."""
        chosen = not self.port
        for attempt in range(3):
            try:
                return self._start_once()
            except RuntimeError as e:
                if not (chosen and "BindException" in str(e)) or attempt == 2:
                    raise
                self.port = 0
        raise AssertionError("unreachable")

    def _start_once(self) -> ZooKeeperProcess:
        cp = classpath()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port = free_port()
        # Sessions between 2 and 20 ticks: a 500 ms tick lets tests use 1 s sessions.
        cmd = ["java", "-Xmx256m", "-Dzookeeper.admin.enableServer=false",
               "-Dzookeeper.4lw.commands.whitelist=ruok,srvr,stat", "-Dzookeeper.clientPortAddress=127.0.0.1",
               "-cp", cp, MAIN_CLASS, str(self.port), str(self.data_dir), str(self.tick_time_ms)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     start_new_session=True)
        threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if "Mode: " in four_letter_word("127.0.0.1", self.port, "srvr"):  # serving, not just listening
                return self
            time.sleep(0.1)
        self.kill()
        raise RuntimeError("ZooKeeper did not start:\n" + "".join(self.output[-40:]))

    def _drain(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.output.append(line)
            del self.output[:-500]


__all__ = ["ZooKeeperProcess", "ZooKeeperUnavailable", "classpath", "four_letter_word", "free_port"]
