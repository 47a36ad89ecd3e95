"""Fixtures of the JavaScript client tests: the npm packages (installed once per lock into a cache outside
the repo, tests/js/deps.py) and a runner of this directory's scripts against the module's broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import toolchain
from tests.js import deps


@pytest.fixture(scope="session")
def node_modules() -> Path:
    toolchain.require_command("node", "node", "npm")
    try:
        return deps.install()
    except deps.InstallError as e:
        failure = str(e)
    pytest.fail(failure, pytrace=False)
