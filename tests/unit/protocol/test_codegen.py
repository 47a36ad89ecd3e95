"""The generated modules (messages and internal-topic records) are fresh against ../shared/kafka-protocol,
and the spec loading and merge are right."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import codegen
from tools.codegen.field import cond, snake
from tools.codegen.module import module_name
from tools.codegen.spec import (
    FieldSpec,
    MessageSpec,
    SpecError,
    Versions,
    default_spec_root,
    load_all,
    load_file,
    load_records,
    merge_specs,
)

SPEC_ROOT = default_spec_root()
needs_specs = pytest.mark.skipif(
    not all((SPEC_ROOT / d).is_dir() for d in ("messages", "messages-4.1", "records")),
    reason=f"Kafka JSON specs not found at {SPEC_ROOT} (they live in ../shared, outside the repository); "
    "the committed generated modules are used as they are",
)


@needs_specs
def test_generated_modules_are_fresh() -> None:
    files = codegen.generate(SPEC_ROOT)
    out = codegen.OUT_DIR
    assert {name.split("/")[0] for name in files} == {"messages", "coordinator_records"}
    stale = [name for name, text in files.items() if not (out / name).exists() or (out / name).read_text() != text]
    assert not stale, f"run `make codegen`: stale {stale}"
    extra = sorted(f"{package}/{p.name}" for package in codegen.PACKAGES for p in (out / package).glob("*.py")
                   if f"{package}/{p.name}" not in files)
    assert not extra, f"generated folders have modules the specs do not define: {extra}"


@needs_specs
@pytest.mark.parametrize("victim", ["messages/produce.py", "coordinator_records/offset_commit.py"])
def test_check_mode_detects_staleness(tmp_path: Path, victim: str) -> None:
    assert codegen.main(["--out", str(tmp_path)]) == 0
    assert codegen.main(["--check", "--out", str(tmp_path)]) == 0
    path = tmp_path / victim
    path.write_text(path.read_text() + "\n# edited by hand\n")
    assert codegen.main(["--check", "--out", str(tmp_path)]) == 1
    path.unlink()
    assert codegen.main(["--check", "--out", str(tmp_path)]) == 1
    assert codegen.main(["--out", str(tmp_path)]) == 0
    (path.parent / "leftover.py").write_text("")
    assert codegen.main(["--check", "--out", str(tmp_path)]) == 1


def test_missing_spec_folder_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "messages").mkdir()
    assert codegen.main(["--check", "--spec-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "messages-4.1, messages-4.4, records-4.4" in err


@needs_specs
def test_every_record_schema_is_loaded() -> None:
    specs = {s.name: s for s in load_records(SPEC_ROOT)}
    assert len(specs) == len(list((SPEC_ROOT / "records-4.4").glob("*.json")))
    assert {"OffsetCommitKey", "LegacyOffsetCommitKey", "GroupMetadataValue", "TransactionLogKey",
            "TransactionLogValue", "ShareSnapshotValue", "StreamsGroupTopologyValue"} <= specs.keys()
    assert {s.type for s in specs.values()} == {"coordinator-key", "coordinator-value"}
    # Kafka 4.x: the record type is apiKey; a key schema is version 0 only.
    assert (specs["OffsetCommitKey"].api_key, str(specs["OffsetCommitKey"].valid_versions)) == (1, "0")
    assert specs["LegacyOffsetCommitKey"].api_key == 0
    # Tagged-only fields without "versions" exist in their taggedVersions, as in Kafka's generator.
    fields = {f.name: f for f in specs["TransactionLogValue"].fields}
    assert str(fields["PreviousProducerId"].versions) == "1+"
    assert str(fields["PreviousProducerId"].tagged_versions) == "1+"


def test_a_field_needs_versions_or_tagged_versions(tmp_path: Path) -> None:
    spec = tmp_path / "XValue.json"
    spec.write_text('{"type": "data", "name": "XValue", "validVersions": "0-1", "flexibleVersions": "1+",\n'
                    ' "fields": [{"name": "A", "type": "int32", "taggedVersions": "1+", "tag": 0},\n'
                    '            {"name": "B", "type": "int32"}]}')
    with pytest.raises(SpecError, match="'B' has neither versions nor taggedVersions"):
        load_file(spec)
    spec.write_text(spec.read_text().replace('{"name": "B", "type": "int32"}', '{"name": "B", "type": "int32", "versions": "0+"}'))
    a, b = load_file(spec).fields
    assert (str(a.versions), str(a.tagged_versions), str(b.versions)) == ("1+", "1+", "0+")


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
    assert module_name("OffsetCommitKey") == "offset_commit"
    assert module_name("ConsumerGroupCurrentMemberAssignmentValue") == "consumer_group_current_member_assignment"


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
