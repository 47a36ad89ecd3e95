"""The lifecycle every server subprocess of the tests shares (Tidelog's broker, Apache Kafka's, and
whatever else the tests start): clean stop with SIGTERM, crash with SIGKILL, restart, and use as a
context manager. A subclass provides ``start()`` (which sets ``self.proc`` and returns ``self``) and
may set ``stop_timeout``. Not thread-safe.
"""

from __future__ import annotations

import signal
import subprocess
from typing import Self


class ServerProcess:
    #: How long ``stop()`` waits after SIGTERM before it kills the process.
    stop_timeout: float = 30.0
    proc: subprocess.Popen | None = None

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self, timeout: float | None = None) -> int:
        """SIGTERM and wait: a clean shutdown (SIGKILL after ``timeout``). Returns the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(self.stop_timeout if timeout is None else timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code

    def kill(self) -> None:
        """SIGKILL: the process dies without any shutdown work, as in a crash."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self) -> Self:
        self.stop()
        return self.start()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["ServerProcess"]
