"""A real ``tidelog serve`` subprocess on a free port, for integration tests and benchmarks.

    with BrokerProcess(tmp_path) as broker:
        Producer({"bootstrap.servers": broker.bootstrap})

``restart()`` stops it cleanly (SIGTERM) and starts it again on the same port and data dir;
``kill()`` sends SIGKILL (a crash). Not thread-safe.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

_READY = re.compile(r"listening on (\S+):(\d+)")


class BrokerProcess:
    def __init__(self, data_dir: Path, *, overrides: dict[str, str] | None = None, port: int = 0,
                 event_loop: str = "auto", start_timeout: float = 30.0) -> None:
        self.data_dir = Path(data_dir)
        self.overrides = dict(overrides or {})
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
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        threading.Thread(target=self._drain_stderr, args=(self.proc,), daemon=True).start()
        deadline = time.monotonic() + self.start_timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            m = _READY.search(line)
            if m:
                self.port = int(m.group(2))
                threading.Thread(target=self.proc.stdout.read, daemon=True).start()
                return self
        self.kill()
        raise RuntimeError("broker did not start:\n" + "".join(self.stderr_lines[-40:]))

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

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait: a clean shutdown. Returns the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code

    def kill(self) -> None:
        """SIGKILL: the broker dies without any shutdown work, as in a crash."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self) -> BrokerProcess:
        self.stop()
        return self.start()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["BrokerProcess"]
