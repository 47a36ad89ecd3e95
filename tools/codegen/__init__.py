"""Development tool: generate :mod:`tidelog.protocol.messages` from Kafka's JSON message specs.

Usage, from the repository root (``make codegen`` runs the first)::

    python -m tools.codegen            # (re)write src/tidelog/protocol/messages/
    python -m tools.codegen --check    # exit 1 if the committed modules are stale
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

from tools.codegen.module import module_name, render_init, render_module
from tools.codegen.spec import MessageSpec, default_spec_root, load_all

REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "src" / "tidelog" / "protocol" / "messages"


def generate(spec_root: Path | None = None) -> dict[str, str]:
    """File name -> source text, for every generated module."""
    specs = load_all(spec_root)
    modules: dict[str, list[MessageSpec]] = {}
    for s in specs:
        modules.setdefault(module_name(s.name), []).append(s)
    files = {f"{mod}.py": render_module(group) for mod, group in sorted(modules.items())}
    files["__init__.py"] = render_init(specs)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.codegen", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed modules are stale")
    parser.add_argument("--spec-root", type=Path, default=None, help="folder holding messages/ and messages-4.1/")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output folder")
    args = parser.parse_args(argv)
    root = args.spec_root or default_spec_root()
    if not (root / "messages-4.1").is_dir():
        print(f"spec folder not found: {root}", file=sys.stderr)
        return 2
    files = generate(root)
    out: Path = args.out
    if args.check:
        stale = [n for n, text in files.items() if not (out / n).exists() or (out / n).read_text() != text]
        extra = sorted(p.name for p in out.glob("*.py") if p.name not in files)
        if stale or extra:
            print(f"stale generated modules: {stale + extra}", file=sys.stderr)
            return 1
        print(f"{len(files)} generated modules are up to date")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for p in out.glob("*.py"):
        if p.name not in files:
            p.unlink()
    for name, text in files.items():
        (out / name).write_text(text)
    print(f"wrote {len(files)} modules to {out}")
    return 0

