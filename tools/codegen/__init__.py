"""Development tool: generate Tidelog's Kafka codecs from Kafka's JSON schemas.

Two generated packages, both committed:

* :mod:`tidelog.protocol.messages` from ``messages-4.4/``, ``messages-4.1/`` and ``messages/`` (every
  request, response and header; the newest folder wins where it defines a version);
* :mod:`tidelog.protocol.coordinator_records` from ``records-4.4/`` (the keys and values of
  ``__consumer_offsets``, ``__share_group_state`` and ``__transaction_state``).

Usage, from the repository root (``make codegen`` runs the first)::

    python -m tools.codegen            # (re)write both packages under src/tidelog/protocol/
    python -m tools.codegen --check    # exit 1 if a committed module is stale
    python -m tools.codegen --spec-root PATH

The specs are read from ``../shared/kafka-protocol`` (:mod:`tools.codegen.spec`), never copied into the
repository; the generated modules are committed, so the broker never needs the specs or this tool.

The generated code is straight-line per struct: fields in wire order, each guarded by the versions it
exists in; runs of fixed-width fields with the same guard are read and written with one precompiled
``struct.Struct``; variable-size fields call :mod:`tidelog.protocol.primitives`.
:mod:`tools.codegen.field` emits the code of one field, :mod:`tools.codegen.method` a struct's
``_read`` / ``_write``, :mod:`tools.codegen.module` whole modules.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tools.codegen.module import by_module, render_init, render_module, render_records_init
from tools.codegen.spec import MESSAGE_LAYERS, RECORDS_DIR, default_spec_root, load_all, load_records

REPO = Path(__file__).resolve().parents[2]
#: The folder that holds the generated packages.
OUT_DIR = REPO / "src" / "tidelog" / "protocol"
#: Generated package -> what its modules are.
PACKAGES = {
    "messages": "generated Kafka wire codecs",
    "coordinator_records": "generated codecs of Kafka's internal-topic records",
}


def generate(spec_root: Path | None = None) -> dict[str, str]:
    """Path relative to :data:`OUT_DIR` (``messages/produce.py``) -> source text, for every generated module."""
    files: dict[str, str] = {}
    for package, specs in (("messages", load_all(spec_root)), ("coordinator_records", load_records(spec_root))):
        for mod, group in by_module(specs).items():
            files[f"{package}/{mod}.py"] = render_module(group, PACKAGES[package])
        dotted = f"tidelog.protocol.{package}"
        files[f"{package}/__init__.py"] = render_init(specs) if package == "messages" else render_records_init(specs, dotted)
    return files


def _stale(files: dict[str, str], out: Path) -> list[str]:
    """Generated files that differ from ``out``, and modules in ``out``'s packages that should not be there."""
    stale = [n for n, text in files.items() if not (out / n).exists() or (out / n).read_text() != text]
    extra = sorted(
        f"{package}/{p.name}" for package in PACKAGES for p in (out / package).glob("*.py")
        if f"{package}/{p.name}" not in files
    )
    return stale + extra


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.codegen", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed module is stale")
    parser.add_argument("--spec-root", type=Path, default=None,
                        help="folder holding messages/, messages-4.1/, messages-4.4/ and records-4.4/ (default ../shared/kafka-protocol)")
    parser.add_argument("--out", type=Path, default=OUT_DIR,
                        help="folder that holds the generated packages (default src/tidelog/protocol)")
    args = parser.parse_args(argv)
    root = args.spec_root or default_spec_root()
    missing = [d for d in (*MESSAGE_LAYERS, RECORDS_DIR) if not (root / d).is_dir()]
    if missing:
        print(f"python -m tools.codegen: spec folders not found in {root}: {', '.join(missing)}", file=sys.stderr)
        return 2
    files = generate(root)
    out: Path = args.out
    if args.check:
        stale = _stale(files, out)
        if stale:
            print(f"python -m tools.codegen: stale generated modules (run `make codegen`): {stale}", file=sys.stderr)
            return 1
        print(f"{len(files)} generated modules are up to date")
        return 0
    for package in PACKAGES:
        (out / package).mkdir(parents=True, exist_ok=True)
        for p in (out / package).glob("*.py"):
            if f"{package}/{p.name}" not in files:
                p.unlink()
    for name, text in files.items():
        (out / name).write_text(text)
    print(f"wrote {len(files)} modules to {out}")
    return 0
