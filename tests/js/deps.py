"""Install this directory's npm packages (package.json + package-lock.json) once, into a cache outside the repo.

``npm ci`` runs in ``$XDG_CACHE_HOME/tidelog/js-deps/<hash>/`` (``~/.cache`` by default;
``TIDELOG_JS_DEPS_DIR`` overrides the ``js-deps`` directory), where ``<hash>`` covers package.json,
package-lock.json and ``node --version``: an unchanged lock is never installed twice, a changed one gets a
fresh directory. Packages come from the npm registry through npm's own cache. The scripts here are run
with ``NODE_PATH`` pointing at that ``node_modules`` (they are CommonJS: ``require`` honours it).
Concurrent installers serialise on an ``flock`` and the directory appears by an atomic rename, so nobody
uses a half-installed tree. Install scripts are not run (``--ignore-scripts``): none of these packages needs one.
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
FILES = ("package.json", "package-lock.json")
STALE_AFTER_S = 14 * 24 * 3600
INSTALL_TIMEOUT_S = 900


class InstallError(Exception):
    """``npm ci`` failed; the message holds its output."""


def cache_dir() -> Path:
    if override := os.environ.get("TIDELOG_JS_DEPS_DIR"):
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tidelog" / "js-deps"


def lock_hash(node: str) -> str:
    digest = hashlib.sha256()
    digest.update(subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.encode())
    for name in FILES:
        digest.update(name.encode() + b"\0" + (MODULE_DIR / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def install(node: str = "node", npm: str = "npm") -> Path:
    """The ``node_modules`` directory of an up-to-date install, running ``npm ci`` first if needed."""
    node, npm = shutil.which(node) or node, shutil.which(npm) or npm
    root = cache_dir()
    target = root / lock_hash(node)
    modules = target / "node_modules"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not modules.exists():
            partial = root / f".{target.name}.{os.getpid()}"
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir()
            for name in FILES:
                shutil.copyfile(MODULE_DIR / name, partial / name)
            proc = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                                  cwd=partial, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
            if proc.returncode != 0:
                shutil.rmtree(partial, ignore_errors=True)
                raise InstallError(f"npm ci of {MODULE_DIR}'s lock failed:\n{proc.stdout}{proc.stderr}")
            shutil.rmtree(target, ignore_errors=True)
            partial.replace(target)
        os.utime(target)
        _prune(root, keep=target)
    return modules


def _prune(root: Path, keep: Path) -> None:
    """Remove installs of other locks that no session has used for two weeks."""
    cutoff = time.time() - STALE_AFTER_S
    for entry in root.iterdir():
        if entry.is_dir() and entry != keep and not entry.name.startswith(".") and entry.stat().st_mtime < cutoff:
            shutil.rmtree(entry, ignore_errors=True)


__all__ = ["InstallError", "cache_dir", "install"]
