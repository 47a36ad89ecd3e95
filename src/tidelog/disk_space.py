"""A full disk: the space reserve that keeps small metadata writes possible, and the "full"
condition of a log dir, logged once when it begins and once when it clears.

When a log dir's file system fills up, record appends fail (the log rolls the partial append back
and the request gets KAFKA_STORAGE_ERROR), but the writes an operator needs to free space must still
succeed with 0 bytes free: the metadata file rewritten by DeleteTopics (and by FindCoordinator's
creation of ``__consumer_offsets``), the checkpoints, leader-epoch files and producer snapshots.
Each of those is written by :func:`write_atomically` (a ``.tmp`` file, fsync, rename, fsync the
directory). Every log dir keeps a preallocated reserve file, ``.tidelog-space-reserve`` (at least
1 MiB, twice the largest such file written there): when a write finds no room, the reserve is
released, the write retried, and the reserve taken back as far as there is room again. Record
appends never use it, so produces cannot eat it.

:class:`LogDirSpace` is one log dir's state: ``full`` from the first write that found no room until
:meth:`LogDirSpace.check` (periodic) finds the reserve whole again and as much free besides; failing
with another I/O error from a failed append until one succeeds. Writes are never refused in advance:
each is tried, so writes resume by themselves once space is freed (DeleteTopics, DeleteRecords,
retention, or the operator).

The registry of log dirs (:func:`register`) lets :func:`write_atomically` find the reserve of the
file system a path is on. Thread-safe: checkpoints are written in executor threads.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from pathlib import Path

log = logging.getLogger(__name__)

RESERVE_FILE = ".tidelog-space-reserve"
MIN_RESERVE_BYTES = 1 << 20
_CHUNK = 64 << 10
_PAGE = 4 << 10
TMP_SUFFIX = ".tmp"

#: The errors that mean "no room" (a full file system, or a quota).
OUT_OF_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_out_of_space(e: BaseException) -> bool:
    return isinstance(e, OSError) and e.errno in OUT_OF_SPACE_ERRNOS


def describe(e: OSError) -> str:
    return e.strerror or str(e)


class LogDirSpace:
    """The free-space state and the reserve of one log dir. Building it touches nothing."""

    def __init__(self, directory: Path, *, min_reserve_bytes: int = MIN_RESERVE_BYTES) -> None:
        self.directory = Path(directory)
        self.reserve_path = self.directory / RESERVE_FILE
        self.min_reserve_bytes = min_reserve_bytes
        #: The largest file written through :func:`write_atomically` here (the reserve is twice that).
        self.largest_write = 0
        #: Writes fail here (set by the first failure, cleared by a success or :meth:`check`).
        self.failing = False
        #: Whether the failure is "no room" (writes resume by themselves) or another I/O error.
        self.out_of_space = False
        self.reason: str | None = None
        self._reserved = 0
        self._needed = 0  # the largest write that failed for want of room
        self._lock = threading.Lock()

    @property
    def full(self) -> bool:
        return self.failing and self.out_of_space

    @property
    def reserve_target(self) -> int:
        return max(self.min_reserve_bytes, 2 * self.largest_write)

    @property
    def reserved_bytes(self) -> int:
        return self._reserved

    # ------------------------------------------------------------------------------ the reserve

    def ensure_reserve(self) -> int:
        """Grow the reserve file up to its target, a chunk at a time, as far as there is room;
        returns its size. Never raises."""
        with self._lock:
            return self._ensure_locked()

    def _ensure_locked(self) -> int:
        target = self.reserve_target
        try:
            fd = os.open(self.reserve_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return self._reserved
        try:
            size = os.fstat(fd).st_size
            for chunk in (_CHUNK, _PAGE):  # big steps, then the last pages there is room for
                while size < target:
                    step = min(chunk, target - size)
                    try:
                        os.posix_fallocate(fd, size, step)
                    except OSError:
                        break
                    size += step
            self._reserved = size
        finally:
            os.close(fd)
        return self._reserved

    def _release_locked(self) -> int:
        freed = self._reserved
        try:
            os.truncate(self.reserve_path, 0)
        except OSError:
            return 0
        self._reserved = 0
        return freed

    # ---------------------------------------------------------------------------- the condition

    def write_failed(self, e: OSError, what: str = "a write", size: int = 0) -> None:
        """A write (of ``size`` bytes, when known) here failed: log the condition the first time (not
        again until it clears)."""
        with self._lock:
            self._needed = max(self._needed, size)
            if self.failing:
                return
            self.failing = True
            self.out_of_space = is_out_of_space(e)
            self.reason = describe(e)
        if self.out_of_space:
            log.error("log dir %s is full (%s, in %s): produce and other writes answer KAFKA_STORAGE_ERROR; "
                      "reads, DeleteTopics, DeleteRecords and retention go on, and writes resume by themselves "
                      "once space is freed", self.directory, self.reason, what)
        else:
            log.error("log dir %s: %s failed (%s): writes answer KAFKA_STORAGE_ERROR until one succeeds",
                      self.directory, what, self.reason)

    def write_succeeded(self) -> None:
        """A record append succeeded here: a failure other than "no room" is over. A full disk is
        not: a small append fits in what a large one left free, so "full" ends only when
        :meth:`check` finds room (no flapping between the two log lines)."""
        with self._lock:
            if not self.failing or self.out_of_space:
                return
            self._clear()

    def _clear(self) -> None:
        self._needed = 0
        self.failing = False
        self.out_of_space = False
        self.reason = None
        log.warning("log dir %s has room again: writes resume", self.directory)

    def free_bytes(self) -> int:
        """Bytes the broker may still write here (root may use the blocks a file system reserves for it)."""
        st = os.statvfs(self.directory)
        return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize

    def check(self) -> None:
        """Periodic: take the reserve back after a release, and end a "full" condition once the
        reserve is whole and its size is free besides (plus the largest write that failed). Cheap when nothing is wrong."""
        with self._lock:
            if not self.failing and self._reserved >= self.reserve_target:
                return
            reserved = self._ensure_locked()
            if not self.full or reserved < self.reserve_target:
                return
        try:
            room = self.free_bytes() >= self.reserve_target + self._needed
        except OSError:
            return
        if room:
            with self._lock:
                if self.full:
                    self._clear()

    def status(self) -> str | None:
        """Why writes fail here (for /readyz), or None."""
        if not self.failing:
            return None
        return f"log dir {self.directory} is full ({self.reason})" if self.out_of_space else (
            f"log dir {self.directory}: writes fail ({self.reason})")


# ------------------------------------------------------------------------------------ registry

_registry: dict[Path, LogDirSpace] = {}
_registry_lock = threading.Lock()


def register(space: LogDirSpace) -> None:
    with _registry_lock:
        _registry[space.directory.absolute()] = space


def unregister(space: LogDirSpace) -> None:
    with _registry_lock:
        if _registry.get(space.directory.absolute()) is space:
            del _registry[space.directory.absolute()]


def space_of(path: Path) -> LogDirSpace | None:
    """The registered log dir holding ``path`` (the deepest one), or None."""
    path = Path(path).absolute()
    with _registry_lock:
        found = [s for d, s in _registry.items() if path.is_relative_to(d)]
    return max(found, key=lambda s: len(s.directory.parts), default=None)


# ------------------------------------------------------------------------------ atomic writes


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new content. Out
    of room, the reserve of the path's log dir is released and the write tried once more; raises
    OSError (no ``.tmp`` file left behind) if it still fails, reporting "full" to the log dir's state."""
    space = space_of(path)
    try:
        _replace(path, data)
    except OSError as e:
        if space is None or not is_out_of_space(e):  # another error (a directory deleted meanwhile ...)
            raise
        failure: OSError | None = None
        with space._lock:
            space._release_locked()
            try:
                _replace(path, data)
            except OSError as again:
                failure = again
            finally:
                space._ensure_locked()
        if failure is not None:
            space.write_failed(failure, f"writing {path.name}")
            raise failure from None
    if space is not None and len(data) > space.largest_write:
        space.largest_write = len(data)


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + TMP_SUFFIX)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = [
    "MIN_RESERVE_BYTES",
    "OUT_OF_SPACE_ERRNOS",
    "RESERVE_FILE",
    "LogDirSpace",
    "describe",
    "fsync_dir",
    "is_out_of_space",
    "register",
    "space_of",
    "unregister",
    "write_atomically",
]
