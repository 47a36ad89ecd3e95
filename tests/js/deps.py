"""Install this directory's npm packages (package.json + package-lock.json) once, into a cache outside the repo.

``npm ci`` runs in ``$XDG_CACHE_HOME/tidelog/js-deps/<hash>/`` (``~/.cache`` by default;
``TIDELOG_JS_DEPS_DIR`` overrides the ``js-deps`` directory), where ``<hash>`` covers package.json,
package-lock.json and ``node --version``; the cache (installed once per hash, under a file lock, appearing
by an atomic rename, pruned after two weeks unused) is :func:`tests.toolchain.build_once`'s. Packages come
from the npm registry through npm's own cache. The scripts here are run with ``NODE_PATH`` pointing at that
``node_modules`` (they are CommonJS: ``require`` honours it). Install scripts are not run
(``--ignore-scripts``): none of these packages needs one.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests import toolchain

MODULE_DIR = Path(__file__).resolve().parent
FILES = ("package.json", "package-lock.json")
INSTALL_TIMEOUT_S = 900


class InstallError(Exception):
    """``npm ci`` failed; the message holds its output."""


def cache_dir() -> Path:
    return toolchain.cache_root("js-deps", "TIDELOG_JS_DEPS_DIR")


def lock_hash(node: str) -> str:
    return toolchain.content_hash([node, "--version"], [MODULE_DIR / name for name in FILES])


def install(node: str = "node", npm: str = "npm") -> Path:
    """The ``node_modules`` directory of an up-to-date install, running ``npm ci`` first if needed."""
    node, npm = shutil.which(node) or node, shutil.which(npm) or npm

    def make(directory: Path) -> None:
        for name in FILES:
            shutil.copyfile(MODULE_DIR / name, directory / name)
        proc = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                              cwd=directory, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        if proc.returncode != 0:
            raise InstallError(f"npm ci of {MODULE_DIR}'s lock failed:\n{proc.stdout}{proc.stderr}")

    return toolchain.build_once(cache_dir(), lock_hash(node), "node_modules", make)


__all__ = ["InstallError", "cache_dir", "install"]
