"""Integration fixtures: a real broker subprocess per test module (or per test when asked)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tidelog.testing import BrokerProcess


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("broker")) as b:
        yield b


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path / "data") as b:
        yield b
