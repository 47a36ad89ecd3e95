"""Tests that need a toolchain beyond Python (Java + Maven, Go, ZooKeeper, Chromium ...).

``require(name, available, why)`` skips the calling test (or fixture) when the toolchain is missing,
with a reason that starts ``toolchain <name> missing:``, so ``make test`` can list those skips in one
summary line per toolchain. CI sets ``TIDELOG_REQUIRE_TOOLCHAINS=1``: then a missing toolchain is a
failure, never a skip, so CI always runs these tests.
"""

from __future__ import annotations

import os
import shutil

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


__all__ = ["ENV", "PREFIX", "require", "require_command", "strict"]
