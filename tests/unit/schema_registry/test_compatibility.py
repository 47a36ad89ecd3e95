"""The compatibility rules (tidelog.schema_registry.compatibility) over Avro's schema resolution, and
the identity of schemas (tidelog.schema_registry.schemas)."""

from __future__ import annotations

import json

import pytest

from tidelog.schema_registry import compatibility
from tidelog.schema_registry.errors import RegistryError
from tidelog.schema_registry.schemas import Referenced, parse


def record(*fields: dict, name: str = "User") -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields)})


def avro(text: str):
    return parse("AVRO", text)


NAME = {"name": "name", "type": "string"}
AGE_DEFAULT = {"name": "age", "type": "int", "default": 0}
AGE = {"name": "age", "type": "int"}

V1 = avro(record(NAME))
V2_AGE_DEFAULT = avro(record(NAME, AGE_DEFAULT))
V3_AGE = avro(record(NAME, AGE))


def ok(level: str, new, *previous) -> bool:
    return not compatibility.check(level, new, list(previous))


def test_backward_allows_a_new_field_with_a_default_and_refuses_one_without() -> None:
    assert ok("BACKWARD", V2_AGE_DEFAULT, V1)
    problems = compatibility.check("BACKWARD", V3_AGE, [V1])
    assert problems and "READER_FIELD_MISSING_DEFAULT_VALUE" in problems[0] and "'age'" in problems[0]
    assert problems[-1] == "{compatibility: 'BACKWARD'}"


def test_forward_is_the_other_direction() -> None:
    # dropping a field the old reader has no default for: old readers cannot read new data
    assert not ok("FORWARD", V1, V3_AGE)
    assert ok("BACKWARD", V1, V3_AGE)  # the new reader simply ignores the field
    # a new field without default: old readers ignore it
    assert ok("FORWARD", V3_AGE, V1)


def test_full_needs_both_directions() -> None:
    assert ok("FULL", V2_AGE_DEFAULT, V1)
    assert not ok("FULL", V3_AGE, V1)
    assert not ok("FULL", V1, V3_AGE)


def test_transitive_levels_check_every_version_the_others_only_the_latest() -> None:
    # v3 reads v2's data (age present) but not v1's (age missing, no default)
    assert ok("BACKWARD", V3_AGE, V1, V2_AGE_DEFAULT)
    assert not ok("BACKWARD_TRANSITIVE", V3_AGE, V1, V2_AGE_DEFAULT)
    assert ok("FULL", V2_AGE_DEFAULT, V3_AGE)  # ... and v2 is fully compatible with v3 alone
    assert not ok("FORWARD_TRANSITIVE", V1, V3_AGE, V2_AGE_DEFAULT)
    assert not ok("FULL_TRANSITIVE", V3_AGE, V1, V2_AGE_DEFAULT)


def test_none_checks_nothing() -> None:
    assert ok("NONE", avro('"string"'), V1, V3_AGE)


def test_type_promotion_follows_avro() -> None:
    ints = avro(record({"name": "n", "type": "int"}))
    longs = avro(record({"name": "n", "type": "long"}))
    assert ok("BACKWARD", longs, ints)  # an int written is read as a long
    problems = compatibility.check("BACKWARD", ints, [longs])
    assert problems and "TYPE_MISMATCH" in problems[0]


def test_enum_symbols_and_union_branches() -> None:
    abc = avro(json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}))
    ab = avro(json.dumps({"type": "enum", "name": "E", "symbols": ["A", "B"]}))
    assert ok("BACKWARD", abc, ab)
    assert "MISSING_ENUM_SYMBOLS" in compatibility.check("BACKWARD", ab, [abc])[0]
    wide = avro(json.dumps(["null", "string", "int"]))
    narrow = avro(json.dumps(["null", "string"]))
    assert ok("BACKWARD", wide, narrow)
    assert "MISSING_UNION_BRANCH" in compatibility.check("BACKWARD", narrow, [wide])[0]


def test_a_renamed_record_is_incompatible() -> None:
    assert "NAME_MISMATCH" in compatibility.check("BACKWARD", avro(record(NAME, name="Person")), [V1])[0]


def test_another_schema_type_is_incompatible() -> None:
    as_json = parse("JSON", '{"type": "object"}')
    assert "TYPE_MISMATCH" in compatibility.check("BACKWARD", as_json, [V1])[0]
    proto = parse("PROTOBUF", 'syntax = "proto3"; message A { string s = 1; }')
    assert "TYPE_MISMATCH" in compatibility.check("BACKWARD", proto, [V1])[0]
    assert ok("NONE", parse("PROTOBUF", 'syntax = "proto3"; message B {}'), proto)


def js(**schema) -> object:
    return parse("JSON", json.dumps(schema))


def kinds(level: str, new, old) -> list[str]:
    return [m.split("'")[1] for m in compatibility.check(level, new, [old]) if m.startswith("{errorType:")]


CLOSED = {"type": "object", "additionalProperties": False}
OPEN = {"type": "object"}


def test_json_closed_content_model_evolves_by_optional_properties() -> None:
    v1 = js(**CLOSED, properties={"id": {"type": "integer"}}, required=["id"])
    v2 = js(**CLOSED, properties={"id": {"type": "integer"}, "note": {"type": "string"}}, required=["id"])
    assert kinds("BACKWARD", v2, v1) == []  # the new reader accepts every old document
    assert kinds("FORWARD", v2, v1) == ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"]  # old readers refuse "note"
    v3 = js(**CLOSED, properties={"id": {"type": "integer"}, "note": {"type": "string"}}, required=["id", "note"])
    assert kinds("BACKWARD", v3, v2) == ["REQUIRED_ATTRIBUTE_ADDED"]
    assert kinds("FORWARD", v3, v2) == []


def test_json_open_content_model_refuses_a_typed_new_property() -> None:
    v1 = js(**OPEN, properties={"id": {"type": "integer"}})
    v2 = js(**OPEN, properties={"id": {"type": "integer"}, "note": {"type": "string"}})
    assert kinds("BACKWARD", v2, v1) == ["PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"]  # old documents may hold any "note"
    assert kinds("FORWARD", v2, v1) == []
    assert kinds("BACKWARD", js(**OPEN, properties={"id": {"type": "integer"}, "note": {}}), v1) == []
    assert kinds("BACKWARD", js(**CLOSED, properties={"id": {"type": "integer"}}), v1) == [
        "ADDITIONAL_PROPERTIES_NARROWED"]


def test_json_types_enums_bounds_and_items() -> None:
    assert kinds("BACKWARD", js(type="number"), js(type="integer")) == []  # an integer is a number
    assert kinds("BACKWARD", js(type="integer"), js(type="number")) == ["TYPE_CHANGED"]
    assert kinds("BACKWARD", js(type="string"), js(type=["string", "null"])) == ["TYPE_NARROWED"]
    assert kinds("BACKWARD", js(enum=["a", "b", "c"]), js(enum=["a", "b"])) == []
    assert kinds("BACKWARD", js(enum=["a"]), js(enum=["a", "b"])) == ["ENUM_ARRAY_NARROWED"]
    assert kinds("BACKWARD", js(type="string", maxLength=5), js(type="string", maxLength=10)) == [
        "MAX_LENGTH_DECREASED"]
    assert kinds("BACKWARD", js(type="integer", minimum=0), js(type="integer", minimum=5)) == []
    assert kinds("BACKWARD", js(type="array", items={"type": "integer"}),
                 js(type="array", items={"type": "string"})) == ["TYPE_CHANGED"]
    assert kinds("FULL", js(type="string", description="now documented"), js(type="string")) == []


def test_json_keywords_not_reasoned_about_must_not_change() -> None:
    a = js(anyOf=[{"type": "string"}, {"type": "integer"}])
    assert kinds("BACKWARD", a, a) == []
    assert kinds("BACKWARD", js(anyOf=[{"type": "string"}]), a) == ["UNCHECKED_KEYWORD_CHANGED"]
    assert kinds("BACKWARD", js(type="string", pattern="^a"), js(type="string")) == ["UNCHECKED_KEYWORD_CHANGED"]


def test_levels_parse_in_any_case() -> None:
    assert [compatibility.parse_level(v) for v in ("backward", "Full_Transitive", "none", "sideways", 3)] == [
        "BACKWARD", "FULL_TRANSITIVE", "NONE", None, None]


def test_identity_ignores_layout_but_not_content() -> None:
    spaced = avro('{ "type" : "record", "name":"User",\n "fields": [ {"type": {"type": "string"}, "name": "name"} ] }')
    assert spaced.canonical == V1.canonical
    with_doc = avro(json.dumps({"type": "record", "name": "User", "doc": "a user", "fields": [NAME]}))
    assert with_doc.canonical != V1.canonical
    assert parse("JSON", '{"b": 1, "a": [2, 1]}').canonical == parse("JSON", '{ "a": [2,1], "b":1 }').canonical
    assert parse("JSON", '{"a": [1, 2]}').canonical != parse("JSON", '{"a": [2, 1]}').canonical
    proto = 'syntax = "proto3";\nmessage M { // a comment\n  string s = 1;\n}\n'
    assert parse("PROTOBUF", proto).canonical == parse("PROTOBUF", 'syntax = "proto3"; message M { string s = 1; }').canonical


@pytest.mark.parametrize(("schema_type", "text"), [
    ("AVRO", "{not json"),
    ("AVRO", '{"type": "record", "name": "R"}'),  # no fields
    ("AVRO", '{"type": "nosuchtype"}'),
    ("AVRO", '{"type": "enum", "name": "E", "symbols": ["A", "A"]}'),
    ("JSON", "[1, 2"),
    ("JSON", "[1, 2]"),
    ("PROTOBUF", "   "),
])
def test_invalid_schemas_are_42201(schema_type: str, text: str) -> None:
    with pytest.raises(RegistryError) as e:
        parse(schema_type, text)
    assert (e.value.status, e.value.error_code) == (422, 42201)


def test_references_resolve_named_types() -> None:
    address = record({"name": "street", "type": "string"}, name="Address")
    user = record(NAME, {"name": "address", "type": "Address"})
    with pytest.raises(RegistryError):
        parse("AVRO", user)
    parsed = parse("AVRO", user, [Referenced("address", "address", 1, "AVRO", address)])
    assert "street" in parsed.canonical  # the referenced type is part of the identity


def test_a_protobuf_descriptor_in_base64_is_decoded_and_identified_by_its_content() -> None:
    import base64

    from google.protobuf import timestamp_pb2

    serialized = timestamp_pb2.DESCRIPTOR.serialized_pb
    one = parse("PROTOBUF", base64.standard_b64encode(serialized).decode())
    assert one.canonical.startswith("descriptor:")
    assert parse("PROTOBUF", " " + base64.standard_b64encode(serialized).decode() + "\n").canonical == one.canonical
    with pytest.raises(RegistryError) as e:
        parse("PROTOBUF", base64.standard_b64encode(b"\xff\xff\xff\xff").decode())
    assert e.value.error_code == 42201
