"""Build the Go client driver (this directory's Go module) once, into a cache outside the repo.

The binary lands in ``$XDG_CACHE_HOME/tidelog/go-bin/<hash>/tidelog-go-clients`` (``~/.cache`` by
default; ``TIDELOG_GO_BIN_DIR`` overrides the ``go-bin`` directory), where ``<hash>`` covers the Go
sources, go.mod, go.sum and ``go version``: an unchanged module is never rebuilt, a changed one gets
a fresh directory, so sessions of different checkouts never swap binaries under each other. Modules
come from the Go proxy into the default ``GOMODCACHE`` (``~/go/pkg/mod``). Concurrent builders
(pytest-xdist workers, parallel sessions) serialise on an ``flock`` and the binary appears by an
atomic rename, so nobody runs a half-written file.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

MODULE_DIR = Path(__file__).resolve().parent
NAME = "tidelog-go-clients"
STALE_AFTER_S = 14 * 24 * 3600
BUILD_TIMEOUT_S = 900


class BuildError(Exception):
    """``go build`` failed; the message holds its output."""


def cache_dir() -> Path:
    if override := os.environ.get("TIDELOG_GO_BIN_DIR"):
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tidelog" / "go-bin"


def source_hash(go: str) -> str:
    digest = hashlib.sha256()
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout
    digest.update(version.encode())
    for path in sorted([*MODULE_DIR.glob("*.go"), MODULE_DIR / "go.mod", MODULE_DIR / "go.sum"]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build(go: str = "go") -> Path:
    """The path of an up-to-date binary, building it first if needed (under a file lock)."""
    go = shutil.which(go) or go
    root = cache_dir()
    target_dir = root / source_hash(go)
    binary = target_dir / NAME
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            target_dir.mkdir(exist_ok=True)
            partial = target_dir / f".{NAME}.{os.getpid()}"
            proc = subprocess.run([go, "build", "-trimpath", "-buildvcs=false", "-o", str(partial), "."],
                                  cwd=MODULE_DIR, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            if proc.returncode != 0:
                partial.unlink(missing_ok=True)
                raise BuildError(f"go build in {MODULE_DIR} failed:\n{proc.stdout}{proc.stderr}")
            partial.replace(binary)
        os.utime(target_dir)
        _prune(root, keep=target_dir)
    return binary


def _prune(root: Path, keep: Path) -> None:
    """Remove binaries of other sources that no session has used for two weeks."""
    cutoff = time.time() - STALE_AFTER_S
    for entry in root.iterdir():
        if entry.is_dir() and entry != keep and entry.stat().st_mtime < cutoff:
            shutil.rmtree(entry, ignore_errors=True)


__all__ = ["NAME", "BuildError", "build", "cache_dir"]
