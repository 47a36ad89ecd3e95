"""A small file system of the test's own, to fill up: a tmpfs mounted on a fresh directory (needs root
and the right to mount; CI runs as root). Without them the test is skipped, saying why.

    with small_tmpfs("4m") as mnt: ...
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_tmpfs(size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``mount -o size=``: "4m", "512k") mounted on a new directory, unmounted after."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full-disk test mounts a small tmpfs: that needs root (CI runs as root)")
    mnt = Path(tempfile.mkdtemp(prefix="tidelog-small-fs-"))
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        mnt.rmdir()
        pytest.skip(f"a full-disk test mounts a small tmpfs, which fails here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        mnt.rmdir()


def resize_tmpfs(mnt: Path, size: str) -> None:
    """Give the tmpfs a new size (``mount -o remount``): more room without freeing anything."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(mnt)], check=True, capture_output=True)


def fill(directory: Path, name: str = "ballast") -> Path:
    """Write zeros to ``directory/name`` until the file system is full; returns the file."""
    path = directory / name
    chunk = b"\0" * 65536
    with open(path, "ab", buffering=0) as f:
        while True:
            try:
                f.write(chunk)
            except OSError:
                break
        for size in (4096, 512, 1):  # the last pages
            while True:
                try:
                    f.write(chunk[:size])
                except OSError:
                    break
    return path
