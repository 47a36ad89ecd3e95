"""The generated modules are fresh against ../shared/kafka-protocol, and the spec merge is right."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import codegen
from tools.codegen.field import cond, snake
from tools.codegen.module import module_name
from tools.codegen.spec import FieldSpec, MessageSpec, Versions, default_spec_root, load_all, merge_specs

SPEC_ROOT = default_spec_root()
needs_specs = pytest.mark.skipif(
    not (SPEC_ROOT / "messages-4.1").is_dir(),
    reason=f"Kafka JSON specs not found at {SPEC_ROOT} (they live in ../shared, outside the repository); "
    "the committed generated modules are used as they are",
)


@needs_specs
def test_generated_modules_are_fresh() -> None:
    files = codegen.generate(SPEC_ROOT)
    out = codegen.OUT_DIR
    stale = [name for name, text in files.items() if (out / name).read_text() != text]
    assert not stale, f"run `make codegen`: stale {stale}"
    extra = sorted(p.name for p in out.glob("*.py") if p.name not in files)
    assert not extra, f"generated folder has modules the specs do not define: {extra}"


@needs_specs
def test_check_mode_detects_staleness(tmp_path: Path) -> None:
    assert codegen.main(["--out", str(tmp_path)]) == 0
    assert codegen.main(["--check", "--out", str(tmp_path)]) == 0
    victim = tmp_path / "produce.py"
    victim.write_text(victim.read_text() + "\n# edited by hand\n")
    assert codegen.main(["--check", "--out", str(tmp_path)]) == 1


@needs_specs
def test_union_covers_seed_era_versions() -> None:
    specs = {s.name: s for s in load_all(SPEC_ROOT)}
    expect = {
        "ProduceRequest": 0,
        "FetchRequest": 0,
        "ListOffsetsRequest": 0,
        "MetadataRequest": 0,
        "OffsetCommitRequest": 0,
        "FindCoordinatorRequest": 0,
        "JoinGroupRequest": 0,
    }
    for name, lowest in expect.items():
        assert specs[name].valid_versions.lowest == lowest, name
    assert specs["ProduceRequest"].valid_versions.highest >= 13
    assert specs["FetchRequest"].valid_versions.highest >= 17


def test_versions_algebra() -> None:
    v = Versions.parse("3+")
    assert 3 in v and 100 in v and 2 not in v
    assert str(Versions.parse("0-11").minus(Versions.parse("3-13"))) == "0-2"
    assert str(Versions.parse("0-2").union(Versions.parse("3-13"))) == "0-13"
    assert str(Versions.parse("0-2").union(Versions.parse("5-6"))) == "0-2,5-6"
    assert not Versions.parse("none")
    assert str(Versions.parse("4-7").intersect(Versions.parse("0-5"))) == "4-5"


def test_cond_expressions() -> None:
    valid = Versions.parse("0-13")
    assert cond(Versions.parse("0+"), valid) is None
    assert cond(Versions.parse("3+"), valid) == "version >= 3"
    assert cond(Versions.parse("0-12"), valid) == "version <= 12"
    assert cond(Versions.parse("4-5"), valid) == "4 <= version <= 5"
    assert cond(Versions.parse("none"), valid) == "False"


def test_snake_case_names() -> None:
    assert snake("MaxWaitMs") == "max_wait_ms"
    assert snake("TransactionalId") == "transactional_id"
    assert snake("ISRNodes") == "isr_nodes"
    assert snake("ProducerId") == "producer_id"
    assert module_name("OffsetForLeaderEpochRequest") == "offset_for_leader_epoch"
    assert module_name("RequestHeader") == "header"


def _msg(valid: str, fields: tuple[FieldSpec, ...], flexible: str = "none") -> MessageSpec:
    return MessageSpec("XRequest", "request", 99, Versions.parse(valid), Versions.parse(flexible), fields)


def test_merge_takes_old_versions_from_the_old_folder() -> None:
    old = _msg("0-5", (FieldSpec("A", "int32", Versions.parse("0+")), FieldSpec("Gone", "int8", Versions.parse("0-1"))))
    new = _msg(
        "3-7",
        (FieldSpec("A", "int32", Versions.parse("0+")), FieldSpec("B", "string", Versions.parse("6+"))),
        flexible="6+",
    )
    merged = merge_specs(old, new)
    assert str(merged.valid_versions) == "0-7"
    def wire_order(version: int) -> list[str]:
        return [f.name for f in merged.fields if version in f.versions]

    assert wire_order(0) == ["A", "Gone"]
    assert wire_order(2) == ["A"]
    assert wire_order(7) == ["A", "B"]
    assert str(merged.fields[0].versions) == "0-7"
    assert str(next(f for f in merged.fields if f.name == "Gone").versions) == "0-1"
    assert str(merged.flexible_versions) == "6-7"
