"""docs/compat.md against the code: its client-test table names exactly the tests marked as known
differences, and its tables parse (no brokers needed; the wire table is checked against real brokers
by test_wire_differential.py)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.oracle import compat

ROOT = Path(__file__).resolve().parents[2]
#: Where the client tests mark known differences: ``@broker_bug(...)`` or test_differential's KNOWN.
MARKED_IN = ("tests/integration/java", "tests/oracle/test_differential.py")


def _named_tests() -> set[str]:
    named: set[str] = set()
    for row in compat.load()[1]:
        named |= set(re.findall(r"`([^`]+)`", row.test))
    return named


def _marked_tests() -> set[str]:
    marked: set[str] = set()
    for root in MARKED_IN:
        path = ROOT / root
        for file in [path] if path.is_file() else sorted(path.glob("test_*.py")):
            text = file.read_text()
            rel = file.relative_to(ROOT).as_posix()
            for match in re.finditer(r"^@broker_bug\(.*?\)\ndef (test_\w+)", text, re.M | re.S):
                marked.add(f"{rel}::{match.group(1)}")
            known = re.search(r"^KNOWN = \{(.*?)^\}", text, re.M | re.S)
            if known:
                for step in re.findall(r'^\s+"([\w-]+)":', known.group(1), re.M):
                    marked.add(f"{rel}::test_admin_step_matches_kafka[{step}]")
    return marked


def test_client_difference_table_names_every_marked_test() -> None:
    assert _named_tests() == _marked_tests()


def test_every_named_test_exists() -> None:
    for name in _named_tests():
        file, _, function = name.partition("::")
        assert re.search(rf"^def {re.escape(function.split('[')[0])}\(", (ROOT / file).read_text(), re.M), name


def test_tables_parse_with_unique_ids() -> None:
    wire, client, rules, apis = compat.load()
    assert wire and client and rules and apis
    assert all(row.why.strip() for row in (*wire, *client))
