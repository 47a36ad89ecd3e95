"""``_schemas`` as Confluent's registry lays it out, replayed into the registry's state."""

from __future__ import annotations

import json

from tidelog.schema_registry import records
from tidelog.schema_registry.records import Reference, SchemaValue
from tidelog.schema_registry.state import RegistryState


def test_keys_and_values_are_confluents_layout() -> None:
    assert json.loads(records.schema_key("s", 2)) == {"keytype": "SCHEMA", "subject": "s", "version": 2, "magic": 1}
    assert json.loads(records.config_key(None)) == {"keytype": "CONFIG", "subject": None, "magic": 0}
    assert json.loads(records.mode_key("s")) == {"keytype": "MODE", "subject": "s", "magic": 0}
    assert json.loads(records.delete_subject_key("s")) == {"keytype": "DELETE_SUBJECT", "subject": "s", "magic": 0}
    avro = json.loads(records.schema_value(SchemaValue("s", 1, 7, "AVRO", '"int"')))
    assert avro == {"subject": "s", "version": 1, "id": 7, "schema": '"int"', "deleted": False}
    proto = json.loads(records.schema_value(SchemaValue("s", 1, 8, "PROTOBUF", "m", (Reference("a", "b", 1),))))
    assert proto["schemaType"] == "PROTOBUF" and proto["references"] == [{"name": "a", "subject": "b", "version": 1}]
    assert json.loads(records.config_value("FULL")) == {"compatibilityLevel": "FULL"}
    assert json.loads(records.mode_value("READONLY")) == {"mode": "READONLY"}


def test_replay_builds_subjects_ids_settings_and_deletes() -> None:
    state = RegistryState()
    for subject, version, schema_id in (("a", 1, 1), ("a", 2, 2), ("b", 1, 1)):
        state.apply(records.schema_key(subject, version),
                    records.schema_value(SchemaValue(subject, version, schema_id, "AVRO", f'"s{schema_id}"')))
    state.apply(records.config_key(None), records.config_value("FULL"))
    state.apply(records.config_key("a"), records.config_value("NONE"))
    state.apply(records.mode_key(None), records.mode_value("READONLY"))
    assert state.subject_names() == ["a", "b"] and state.max_id == 2
    assert [u.subject for u in state.usages(1)] == ["a", "b"]
    assert state.configs == {None: "FULL", "a": "NONE"} and state.modes == {None: "READONLY"}
    state.apply(records.config_key("a"), None)
    assert state.configs == {None: "FULL"}
    state.apply(records.delete_subject_key("a"), records.delete_subject_value("a", 2))
    assert state.subject_names() == ["b"] and state.subject_names(deleted=True) == ["a", "b"]
    assert [e.version for e in state.versions("a", deleted=True)] == [1, 2]
    state.apply(records.schema_key("a", 1), None)
    state.apply(records.schema_key("a", 2), None)
    assert state.subject_names(deleted=True) == ["b"]
    assert state.max_id == 2, "the highest id read stays taken after a hard delete"


def test_records_that_are_not_the_registrys_are_skipped() -> None:
    state = RegistryState()
    state.apply(b"not json", b"x")
    state.apply(records.noop_key(), None)
    state.apply(records.schema_key("s", 1), b'{"subject": "s"}')  # no id: malformed
    state.apply(None, b"x")
    assert state.subjects == {} and state.max_id == 0
