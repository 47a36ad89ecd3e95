"""Tests that need a toolchain beyond Python (Java + Maven, Go, ZooKeeper, Chromium ...).

``require(name, available, why)`` skips the calling test (or fixture) when the toolchain is missing,
with a reason that starts ``toolchain <name> missing:``, so ``make test`` can list those skips in one
summary line per toolchain. CI sets ``TIDELOG_REQUIRE_TOOLCHAINS=1``: then a missing toolchain is a
failure, never a skip, so CI always runs these tests.

``build_once(root, key, product, make)`` keeps what a toolchain builds for the tests (the Go client driver,
the JavaScript clients' npm packages) in a cache outside the repo, one directory per ``key``
(``content_hash`` of the tool's version and the build's inputs): an unchanged input is never built twice,
a changed one gets a fresh directory, so sessions of different checkouts never swap builds under each other.
Concurrent builders (pytest-xdist workers, parallel sessions) serialise on an ``flock`` and a build appears
by an atomic rename of its directory, so nobody uses a half-built one. ``cache_root`` is where such a
cache lives.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pytest

ENV = "TIDELOG_REQUIRE_TOOLCHAINS"
PREFIX = "toolchain "


def strict() -> bool:
    return os.environ.get(ENV, "") not in ("", "0", "false", "no")


def require(name: str, available: bool, why: str) -> None:
    """Skip (or, under TIDELOG_REQUIRE_TOOLCHAINS=1, fail) unless ``available``."""
    if available:
        return
    message = f"{PREFIX}{name} missing: {why}"
    if strict():
        pytest.fail(f"{message} ({ENV}=1 makes this a failure)", pytrace=False)
    pytest.skip(message)


def require_command(name: str, *commands: str) -> None:
    """Require every command in ``commands`` on PATH."""
    missing = [c for c in commands if shutil.which(c) is None]
    require(name, not missing, f"{', '.join(missing)} not on PATH")


#: a build no session has used for this long is removed (by the next build of the same cache)
STALE_AFTER_S = 14 * 24 * 3600


def cache_root(name: str, override_env: str) -> Path:
    """``$override_env`` if set, else ``$XDG_CACHE_HOME/tidelog/<name>`` (``~/.cache`` by default)."""
    if override := os.environ.get(override_env):
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tidelog" / name


def content_hash(version_command: Sequence[str], files: Iterable[Path]) -> str:
    """16 hex digits over what ``version_command`` prints and each file's name and bytes, in the order given."""
    digest = hashlib.sha256()
    digest.update(subprocess.run(list(version_command), capture_output=True, text=True, check=True).stdout.encode())
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_once(root: Path, key: str, product: str, make: Callable[[Path], None]) -> Path:
    """``root/key/product``, made first if it is missing: ``make(directory)`` fills a fresh directory (and
    raises if it cannot: nothing is left behind), which then becomes ``root/key``. Under the cache's lock;
    afterwards the other keys' directories unused for :data:`STALE_AFTER_S` are removed."""
    target = root / key
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / product).exists():
            partial = root / f".{key}.{os.getpid()}"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            try:
                make(partial)
            except BaseException:
                shutil.rmtree(partial, ignore_errors=True)
                raise
            shutil.rmtree(target, ignore_errors=True)
            partial.replace(target)
        os.utime(target)
        _prune(root, keep=target)
    return target / product


def _prune(root: Path, keep: Path) -> None:
    cutoff = time.time() - STALE_AFTER_S
    for entry in root.iterdir():
        if entry.is_dir() and entry != keep and not entry.name.startswith(".") and entry.stat().st_mtime < cutoff:
            shutil.rmtree(entry, ignore_errors=True)


__all__ = ["ENV", "PREFIX", "STALE_AFTER_S", "build_once", "cache_root", "content_hash", "require", "require_command",
           "strict"]
