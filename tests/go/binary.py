"""Build the Go client driver (this directory's Go module) once, into a cache outside the repo.

The binary lands in ``$XDG_CACHE_HOME/tidelog/go-bin/<hash>/tidelog-go-clients`` (``~/.cache`` by
default; ``TIDELOG_GO_BIN_DIR`` overrides the ``go-bin`` directory), where ``<hash>`` covers the Go
sources, go.mod, go.sum and ``go version``; the cache (built once per hash, under a file lock, appearing
by an atomic rename, pruned after two weeks unused) is :func:`tests.toolchain.build_once`'s. Modules come
from the Go proxy into the default ``GOMODCACHE`` (``~/go/pkg/mod``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests import toolchain

MODULE_DIR = Path(__file__).resolve().parent
NAME = "tidelog-go-clients"
BUILD_TIMEOUT_S = 900


class BuildError(Exception):
    """``go build`` failed; the message holds its output."""


def cache_dir() -> Path:
    return toolchain.cache_root("go-bin", "TIDELOG_GO_BIN_DIR")


def source_hash(go: str) -> str:
    return toolchain.content_hash([go, "version"],
                                  sorted([*MODULE_DIR.glob("*.go"), MODULE_DIR / "go.mod", MODULE_DIR / "go.sum"]))


def build(go: str = "go") -> Path:
    """The path of an up-to-date binary, building it first if needed."""
    go = shutil.which(go) or go

    def make(directory: Path) -> None:
        proc = subprocess.run([go, "build", "-trimpath", "-buildvcs=false", "-o", str(directory / NAME), "."],
                              cwd=MODULE_DIR, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        if proc.returncode != 0:
            raise BuildError(f"go build in {MODULE_DIR} failed:\n{proc.stdout}{proc.stderr}")

    return toolchain.build_once(cache_dir(), source_hash(go), NAME, make)


__all__ = ["NAME", "BuildError", "build", "cache_dir"]
