"""A log directory made ready for one broker: checked, created if needed, and locked.

Rules (Kafka's ``LogManager.lockLogDirs``, with clearer messages):

1. **Check before anything is read.** A path that is a file, lies under a file, cannot be created,
   sits on a read-only file system or cannot be written is refused with a :class:`LogDirError` that
   names the path and what is wrong with it.
2. **One owner.** The broker takes an exclusive, non-blocking ``flock`` on ``<log dir>/.lock`` before
   it reads any log. A second broker on the same directory fails at once with
   :class:`LogDirLockedError`, naming the directory and the pid recorded by the holder, having read
   and written nothing else. The lock is released by :meth:`LogDirLock.release` or, if the process
   dies, by the kernel: a ``kill -9`` never leaves a stale lock behind.
3. The holder writes its pid into the lock file (Kafka's file is empty); the pid is only a hint for
   the message, never trusted for ownership.

Not thread-safe; used once at start-up and once at shutdown.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from tidelog.storage import files


class LogDirError(Exception):
    """A log directory that cannot be used; the message names the path and the problem."""


class LogDirLockedError(LogDirError):
    """Another process holds the log directory's lock."""

    def __init__(self, message: str, holder_pid: int | None) -> None:
        super().__init__(message)
        self.holder_pid = holder_pid


def prepare_log_dir(path: Path) -> Path:
    """Create ``path`` if it does not exist; raise :class:`LogDirError` if it cannot be a log dir.
    Returns the absolute path."""
    path = Path(os.path.abspath(path))
    if path.exists() and not path.is_dir():
        raise LogDirError(f"log dir {path} is a file, not a directory")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise LogDirError(f"log dir {path} lies under {parent}, which is a file")
            break
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LogDirError(f"cannot create log dir {path}: {_reason(e)}") from None
    if os.statvfs(path).f_flag & os.ST_RDONLY:
        raise LogDirError(f"log dir {path} is on a read-only file system")
    if not os.access(path, os.W_OK | os.X_OK):
        raise LogDirError(f"log dir {path} is not writable by this user (uid {os.getuid()})")
    return path


class LogDirLock:
    """An exclusive lock on one log directory (rule 2)."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = Path(log_dir)
        self.path = self.log_dir / files.LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise LogDirError(f"cannot use log dir {self.log_dir}: {_reason(e)} ({self.path})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"process {holder}" if holder is not None else "another process"
            raise LogDirLockedError(
                f"log dir {self.log_dir} is in use by {who} (it holds {self.path}); "
                "two brokers must never share a data directory",
                holder,
            ) from None
        except OSError as e:
            os.close(fd)
            raise LogDirError(f"cannot lock log dir {self.log_dir}: {_reason(e)}") from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as e:
            os.close(fd)
            raise LogDirError(f"log dir {self.log_dir} is not writable: {_reason(e)}") from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _reason(e: OSError) -> str:
    if e.errno == errno.EROFS:
        return "read-only file system"
    if e.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if e.errno == errno.ENOTDIR:
        return "a component of the path is a file"
    if e.errno == errno.ENOSPC:
        return "no space left on device"
    return e.strerror or str(e)


__all__ = ["LogDirError", "LogDirLock", "LogDirLockedError", "prepare_log_dir"]
