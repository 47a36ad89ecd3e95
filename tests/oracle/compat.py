"""docs/compat.md as data: the known differences between Tidelog and Apache Kafka.

The document has two tables the tests read (every other line is prose for people):

* **Differences on the wire** (``| id | requests | field | Kafka | Tidelog | why |``): read by the
  wire-level differential suite (tests/oracle/test_wire_differential.py). A difference found there
  is known when one row matches it: its step (``API:case@vN``) matches one of the ``requests``
  patterns, its field path one of the ``field`` patterns, and its two values (compact JSON, or
  ``<absent>``) the ``Kafka`` and ``Tidelog`` patterns. Patterns are in backticks, several per cell
  separated by commas; ``*`` matches any run of characters, every other character itself.
* **Differences the client tests find** (``| id | test | why |``): each row is the reason of a
  :func:`tests.oracle.fixtures.broker_bug` xfail, which names the row by its id.

Ids are stable: a test or a commit may name them. Pure functions over the file; immutable results.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

COMPAT = Path(__file__).resolve().parents[2] / "docs" / "compat.md"
WIRE_HEADER = ["id", "requests", "field", "kafka", "tidelog", "why"]
CLIENT_HEADER = ["id", "test", "why"]
RULE_HEADER = ["rule", "fields", "becomes", "why"]
API_HEADER = ["api", "key", "why"]


def glob_match(pattern: str, text: str) -> bool:
    """``*`` matches any run of characters; everything else matches itself (``[`` included)."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, text, re.DOTALL) is not None


def _patterns(cell: str) -> tuple[str, ...]:
    found = re.findall(r"`([^`]*)`", cell)
    return tuple(found) if found else (cell.strip(),)


@dataclass(frozen=True)
class WireDifference:
    id: str
    requests: tuple[str, ...]
    fields: tuple[str, ...]
    kafka: str
    tidelog: str
    why: str

    def matches(self, step: str, path: str, kafka: str, tidelog: str) -> bool:
        return (any(glob_match(p, step) for p in self.requests) and any(glob_match(p, path) for p in self.fields)
                and glob_match(self.kafka, kafka) and glob_match(self.tidelog, tidelog))


@dataclass(frozen=True)
class ClientDifference:
    id: str
    test: str
    why: str


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every markdown table in ``text``: (lower-cased header cells, rows of cells)."""
    found: list[tuple[list[str], list[list[str]]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|[\s:|-]+\|?", lines[i + 1].strip()):
            header = [c.strip().lower() for c in _cells(lines[i])]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in _cells(lines[i])])
                i += 1
            found.append((header, rows))
        else:
            i += 1
    return found


def _cells(line: str) -> list[str]:
    # A cell may hold "\|" (an escaped pipe) inside backticks.
    parts = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [p.replace("\\|", "|") for p in parts]


@cache
def load(path: Path = COMPAT) -> tuple[tuple[WireDifference, ...], tuple[ClientDifference, ...], tuple[str, ...],
                                      tuple[str, ...]]:
    """(wire differences, client-test differences, normalisation rule names, names of the Kafka APIs
    Tidelog does not serve) from docs/compat.md."""
    wire: list[WireDifference] = []
    client: list[ClientDifference] = []
    rules: list[str] = []
    apis: list[str] = []
    for header, rows in tables(path.read_text()):
        if header == WIRE_HEADER:
            for row in rows:
                rid, requests, field, kafka, tidelog, why = row
                wire.append(WireDifference(_patterns(rid)[0], _patterns(requests), _patterns(field),
                                           _patterns(kafka)[0], _patterns(tidelog)[0], why))
        elif header == CLIENT_HEADER:
            for row in rows:
                rid, test, why = row
                client.append(ClientDifference(_patterns(rid)[0], test, why))
        elif header == RULE_HEADER:
            rules += [_patterns(row[0])[0] for row in rows]
        elif header == API_HEADER:
            apis += [_patterns(row[0])[0] for row in rows]
    ids = [d.id for d in (*wire, *client)]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"{path}: ids used twice: {', '.join(duplicates)}")
    return tuple(wire), tuple(client), tuple(rules), tuple(apis)


def wire_differences() -> tuple[WireDifference, ...]:
    return load()[0]


def unserved_apis() -> tuple[str, ...]:
    """The Kafka APIs docs/compat.md says Tidelog does not serve (its ``| api | why |`` table)."""
    return load()[3]


def client_difference(difference_id: str) -> ClientDifference:
    """The row of the client-test table with this id (KeyError if docs/compat.md has none)."""
    for d in load()[1]:
        if d.id == difference_id:
            return d
    raise KeyError(f"docs/compat.md lists no client-test difference {difference_id!r}")


__all__ = ["COMPAT", "ClientDifference", "WireDifference", "client_difference", "glob_match", "load", "tables",
           "wire_differences"]
