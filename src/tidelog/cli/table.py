"""Plain-text tables for command output: left-aligned columns, each as wide as its widest cell, two
spaces apart, trailing spaces trimmed (the layout of ``kafka-consumer-groups.sh``). Column names never
contain spaces, so ``awk`` and ``cut`` can read the output. Pure functions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

#: What a table shows for "none" (no value, no owner, no commit).
MISSING = "-"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """The lines of a table: the header, then one line per row."""
    cells = [[str(c) for c in headers]] + [[MISSING if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]


def print_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    for line in table(headers, rows):
        print(line)


__all__ = ["MISSING", "print_table", "table"]
