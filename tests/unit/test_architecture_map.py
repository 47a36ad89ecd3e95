"""The map stays true: every module, file and class that ``docs/architecture.md`` and the docstrings
name exists, and numbered rule lists in docstrings count 1, 2, 3 ...

* ``docs/architecture.md``: each backticked path (``server/broker.py``, ``coordinator/group/modern/``;
  relative to ``src/tidelog/`` unless it starts with a top-level directory of the repository, or inside a
  folder the text names nearby) is a file or a directory; a bare file name (``manager.py``) is a file somewhere in the package; a backticked dotted
  name ``tidelog.x.y`` (or ``tidelog.x.Y.attr``) resolves by import and attribute lookup.
* Docstrings and comments under ``src/``: every Sphinx cross-reference to a dotted ``tidelog.`` name
  (``:mod:``, ``:class:``, ``:func:``, ``:meth:``, ``:attr:``, ``:data:``, ``:exc:``) resolves the same way.
* A module docstring's numbered rules (lines ``N. **Title.**``, two or more) run 1, 2, 3 ... in order.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "tidelog"
MAP = ROOT / "docs" / "architecture.md"
TOP_LEVEL = {"src", "tests", "bench", "tools", "docs", "examples", ".ci"}

_BACKTICKED = re.compile(r"`([^`\s]+)`")
_PATH = re.compile(r"^[\w.\-/]+(\.py|/)$")
_DOTTED = re.compile(r"^tidelog(\.\w+)+$")
_XREF = re.compile(r":(?:mod|class|func|meth|attr|data|exc|obj):`~?(tidelog(?:\.\w+)+)(?:\(\))?`")
_RULE = re.compile(r"^\s*(\d+)\. \*\*", re.M)


def resolve(dotted: str) -> bool:
    """Whether ``tidelog.a.b.C.d`` names a module, or an attribute reached from the longest importable prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                # a dataclass field or an annotation-only attribute of a class still names something
                annotations = getattr(obj, "__annotations__", {}) if isinstance(obj, type) else {}
                return name in annotations or name in getattr(obj, "__dataclass_fields__", {})
            obj = getattr(obj, name)
        return True
    return False


def package_files() -> set[str]:
    return {p.name for p in PACKAGE.rglob("*.py")}


def map_references() -> list[str]:
    return _BACKTICKED.findall(MAP.read_text())


def test_every_path_the_map_names_exists() -> None:
    names = package_files()
    paths = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*")]
    missing = []
    for token in map_references():
        if not _PATH.match(token) or token.startswith(("http", "../")) or "*" in token:
            continue
        head = token.split("/", 1)[0]
        bare = token.rstrip("/")
        if (ROOT / token).exists() or (head not in TOP_LEVEL and (PACKAGE / token).exists()):
            continue
        if "/" not in bare and token.endswith(".py"):
            if token not in names:  # a module named by its file name in a sentence about its folder
                missing.append(token)
        elif not any(p == bare or p.endswith("/" + bare) for p in paths):  # inside a folder named nearby
            missing.append(token)
    assert not missing, f"docs/architecture.md names paths that do not exist: {sorted(set(missing))}"


def test_every_dotted_name_the_map_gives_resolves() -> None:
    bad = sorted({t for t in map_references() if _DOTTED.match(t) and not resolve(t)})
    assert not bad, f"docs/architecture.md names modules or attributes that do not exist: {bad}"


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "protocol/messages" not in p.as_posix())


def test_every_cross_reference_in_the_code_resolves() -> None:
    bad: dict[str, set[str]] = {}
    for path in _sources():
        for dotted in set(_XREF.findall(path.read_text())):
            if not resolve(dotted):
                bad.setdefault(str(path.relative_to(ROOT)), set()).add(dotted)
    assert not bad, "docstrings name things that do not exist:\n" + "\n".join(
        f"  {f}: {', '.join(sorted(v))}" for f, v in sorted(bad.items()))


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_numbered_rules_count_in_order(path: Path) -> None:
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    numbers = [int(n) for n in _RULE.findall(docstring)]
    if len(numbers) > 1:  # one numbered line is a reference to a rule elsewhere
        assert numbers == list(range(1, len(numbers) + 1)), f"{path.name}'s rules are numbered {numbers}"
