"""A real ``tidelog serve`` subprocess on a free port, for integration tests and benchmarks.

    with BrokerProcess(tmp_path) as broker:
        Producer({"bootstrap.servers": broker.bootstrap})

``restart()`` stops it cleanly (SIGTERM) and starts it again on the same port and data dir;
``kill()`` sends SIGKILL (a crash). Not thread-safe.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from tidelog.testing.server_process import ServerProcess

_READY = re.compile(r"listening on (\S+):(\d+)")
_CONSOLE = re.compile(r"tidelog console: (http://\S+)")
_SCHEMA_REGISTRY = re.compile(r"tidelog schema registry: (http://\S+)")


class BrokerProcess(ServerProcess):
    stop_timeout = 30.0

    def __init__(self, data_dir: Path, *, overrides: dict[str, str] | None = None, port: int = 0,
                 event_loop: str = "auto", start_timeout: float = 90.0) -> None:
        self.data_dir = Path(data_dir)
        self.overrides = dict(overrides or {})
        # Many test brokers run at once: the HTTP listener takes a free port unless a test names one.
        self.overrides.setdefault("metrics.listener", "http://127.0.0.1:0")
        #: The HTTP listener's URL (metrics, health, console), None when metrics.listener is empty.
        self.http_url: str | None = None
        #: The schema registry's base URL (docs/schema-registry.md), None when it is not served.
        self.schema_registry_url: str | None = None
        self.port = port
        self.event_loop = event_loop
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.stderr_lines: list[str] = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> BrokerProcess:
        cmd = [sys.executable, "-m", "tidelog", "serve", "--host", "127.0.0.1", "--port", str(self.port),
               "--data-dir", str(self.data_dir), "--event-loop", self.event_loop]
        for key, value in self.overrides.items():
            cmd += ["--override", f"{key}={value}"]
        # TIDELOG_PARENT_PID: the broker stops by itself when this process is gone (a killed test run).
        env = dict(os.environ, PYTHONUNBUFFERED="1", TIDELOG_PARENT_PID=str(os.getpid()))
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        threading.Thread(target=self._drain_stderr, args=(self.proc,), daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            console = _CONSOLE.search(line)
            if console:
                self.http_url = console.group(1)
            registry = _SCHEMA_REGISTRY.search(line)
            if registry:
                self.schema_registry_url = registry.group(1)
            m = _READY.search(line)
            if m:
                self.port = int(m.group(2))
            if line.startswith("tidelog ports: "):  # the last line serve prints at start
                threading.Thread(target=self.proc.stdout.read, daemon=True).start()
                return self
        self.kill()
        raise RuntimeError("broker did not start:\n" + "".join(self.stderr_lines[-40:]))

    def listener_port(self, name: str) -> int:
        """The bound port of listener ``name`` (``SSL``, ``SASL_SSL`` ...), from the broker's start-up log line."""
        line = self.stderr_text(until=" listening on ")
        found = re.findall(rf"[ ,]{re.escape(name.upper())}://[^,\s]*:(\d+)", line)
        if not found:
            raise KeyError(f"the broker has no listener {name}")
        return int(found[-1])  # after a restart: the last start's

    def _drain_stderr(self, proc: subprocess.Popen) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.stderr_lines.append(line)

    def stderr_text(self, until: str | None = None, timeout: float = 10.0) -> str:
        """Everything the broker wrote to stderr so far; with ``until``, first wait (up to ``timeout``
        seconds) until that text has arrived (stderr is read by a thread, a little behind)."""
        deadline = time.monotonic() + timeout
        while until is not None and until not in "".join(self.stderr_lines) and time.monotonic() < deadline:
            time.sleep(0.02)
        return "".join(self.stderr_lines)


__all__ = ["BrokerProcess"]
