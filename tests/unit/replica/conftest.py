"""The ``node`` fixture: one broker's replica layer over real logs in tmp_path (see node.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.replica.node import Node


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.logs.shutdown()
