"""Protobuf compatibility (tidelog.schema_registry.protobuf_compat): each of Confluent's Protobuf
differences, allowed and refused, per level and transitively; schemas compiled by protoc
(tidelog.schema_registry.protobuf_schema), with references and in the descriptor form."""

from __future__ import annotations

import base64

import pytest

from tidelog.schema_registry import compatibility
from tidelog.schema_registry.errors import RegistryError
from tidelog.schema_registry.schemas import Referenced, parse


def proto(body: str, *, package: str = "shop", syntax: str = "proto3", refs=()) -> object:
    head = f'syntax = "{syntax}";\n' + (f"package {package};\n" if package else "")
    return parse("PROTOBUF", head + body, list(refs), validate=True)


def kinds(level: str, new, *previous) -> list[str]:
    """The errorTypes of ``new`` against ``previous`` (oldest first) at ``level``."""
    return [m.split('"')[1] for m in compatibility.check(level, new, list(previous)) if m.startswith("{errorType:")]


BASE = proto("message Order { string id = 1; int32 qty = 2; }")


@pytest.mark.parametrize(("body", "why"), [
    ("message Order { string id = 1; int32 qty = 2; string note = 3; }", "FIELD_ADDED"),
    ("message Order { string id = 1; }", "FIELD_REMOVED"),
    ("message Order { string ident = 1; int32 qty = 2; }", "FIELD_NAME_CHANGED"),
    ("message Order { bytes id = 1; int64 qty = 2; }", "string/bytes and int32/int64 read each other"),
    ("message Order { string id = 1; uint64 qty = 2; }", "uint64 is in int32's group"),
    ("message Order { string id = 1; bool qty = 2; }", "bool is in int32's group"),
    ("message Order { string id = 1; Kind qty = 2; } enum Kind { A = 0; }", "an enum is a number"),
    ("message Order { repeated string id = 1; int32 qty = 2; }", "a string turned repeated"),
    ("message Order { string id = 1; int32 qty = 2; oneof pay { string card = 3; string iban = 4; } }",
     "ONEOF_ADDED, ONEOF_FIELD_ADDED"),
])
def test_allowed_changes_are_compatible_at_every_level(body: str, why: str) -> None:
    new = proto(body)
    for level in ("BACKWARD", "FORWARD", "FULL", "BACKWARD_TRANSITIVE", "FULL_TRANSITIVE"):
        assert kinds(level, new, BASE) == [], (why, level)


@pytest.mark.parametrize(("body", "kind", "path"), [
    ("message Order { Item id = 1; int32 qty = 2; } message Item { string sku = 1; }", "FIELD_KIND_CHANGED", "#/Order/1"),
    ("message Order { string id = 1; map<string, int32> qty = 2; }", "FIELD_KIND_CHANGED", "#/Order/2"),
    ("message Order { string id = 1; sint32 qty = 2; }", "FIELD_SCALAR_KIND_CHANGED", "#/Order/2"),
    ("message Order { string id = 1; fixed32 qty = 2; }", "FIELD_SCALAR_KIND_CHANGED", "#/Order/2"),
    ("message Order { string id = 1; double qty = 2; }", "FIELD_SCALAR_KIND_CHANGED", "#/Order/2"),
    ("message Order { int64 id = 1; int32 qty = 2; }", "FIELD_SCALAR_KIND_CHANGED", "#/Order/1"),
    ("message Order { string id = 1; repeated int32 qty = 2; }", None, None),  # proto3 implicit: no label
])
def test_refused_field_changes_name_the_difference_and_its_path(body: str, kind: str | None, path: str | None) -> None:
    new = proto(body)
    problems = compatibility.check("BACKWARD", new, [BASE])
    if kind is None:
        assert problems == []
        return
    assert problems[0] == (f'{{errorType:"{kind}", description:"'
                           + compatibility_description(kind, path, "new", "old") + '"}')
    assert problems[-1] == "{compatibility: 'BACKWARD'}"
    assert any(m.startswith("{oldSchema: ") for m in problems)
    # FORWARD reads the other way round: the same difference, old schema as the reader
    assert f'{{errorType:"{kind}", description:"' + compatibility_description(kind, path, "old", "new") + '"}' in (
        compatibility.check("FORWARD", new, [BASE]))


def compatibility_description(kind: str, path: str, reader: str, writer: str) -> str:
    from tidelog.schema_registry.protobuf_compat import DESCRIPTIONS

    return DESCRIPTIONS[kind].format(path=path, reader=reader, writer=writer)


def test_the_scalar_groups_read_each_other_only_within_themselves() -> None:
    groups = [("int32", "int64", "uint32", "uint64", "bool"), ("sint32", "sint64"), ("string", "bytes"),
              ("fixed32", "sfixed32"), ("fixed64", "sfixed64"), ("float",), ("double",)]
    for group in groups:
        for other in groups:
            a, b = group[0], other[-1]
            new = proto(f"message M {{ {b} f = 1; }}")
            found = kinds("BACKWARD", new, proto(f"message M {{ {a} f = 1; }}"))
            assert found == ([] if group is other else ["FIELD_SCALAR_KIND_CHANGED"]), (a, b)


def test_messages_may_be_added_backward_and_moved_at_every_level() -> None:
    added = proto("message Order { string id = 1; int32 qty = 2; } message Item { string sku = 1; }")
    assert kinds("BACKWARD", added, BASE) == kinds("BACKWARD_TRANSITIVE", added, BASE) == []
    moved = proto("message Item { string sku = 1; } message Order { string id = 1; int32 qty = 2; }")
    assert kinds("FULL", moved, added) == []  # MESSAGE_MOVED: a record's message index names its own schema


def test_package_changed_and_message_removed_are_refused() -> None:
    assert kinds("BACKWARD", proto("message Order { string id = 1; int32 qty = 2; }", package="store"), BASE) == [
        "PACKAGE_CHANGED"]
    two = proto("message Order { string id = 1; int32 qty = 2; } message Item { string sku = 1; }")
    assert kinds("BACKWARD", BASE, two) == ["MESSAGE_REMOVED"]
    assert kinds("FORWARD", two, BASE) == ["MESSAGE_REMOVED"]  # the old schema as reader lacks Item
    assert kinds("BACKWARD", two, BASE) == []
    assert kinds("FULL", two, BASE) == ["MESSAGE_REMOVED"]


def test_required_fields_added_or_removed_are_refused_in_proto2() -> None:
    v1 = proto("message Order { required string id = 1; }", syntax="proto2")
    v2 = proto("message Order { required string id = 1; required int32 qty = 2; }", syntax="proto2")
    assert kinds("BACKWARD", v2, v1) == ["REQUIRED_FIELD_ADDED"]
    assert kinds("FORWARD", v2, v1) == ["REQUIRED_FIELD_REMOVED"]
    v3 = proto("message Order { required string id = 1; optional int32 qty = 2; }", syntax="proto2")
    assert kinds("FULL", v3, v1) == []


def test_explicit_numeric_labels_must_stay_string_labels_may_change() -> None:
    v1 = proto("message Order { optional int32 qty = 1; optional string id = 2; }", syntax="proto2")
    assert kinds("BACKWARD", proto("message Order { repeated int32 qty = 1; optional string id = 2; }",
                                   syntax="proto2"), v1) == ["FIELD_NUMERIC_LABEL_CHANGED"]
    assert kinds("BACKWARD", proto("message Order { optional int32 qty = 1; repeated string id = 2; }",
                                   syntax="proto2"), v1) == []
    # proto3's optional is a label too; a field without one has none
    assert kinds("BACKWARD", proto("message Order { repeated int32 qty = 1; }"),
                 proto("message Order { optional int32 qty = 1; }")) == ["FIELD_NUMERIC_LABEL_CHANGED"]


def test_oneof_members_removed_moved_and_merged() -> None:
    v1 = proto("message P { string a = 1; string b = 2; oneof o { string c = 3; string d = 4; } }")
    # a member removed while its oneof stays
    assert kinds("BACKWARD", proto("message P { string a = 1; string b = 2; oneof o { string c = 3; } }"), v1) == [
        "ONEOF_FIELD_REMOVED"]
    # the whole oneof removed: compatible (ONEOF_REMOVED)
    assert kinds("BACKWARD", proto("message P { string a = 1; string b = 2; }"), v1) == []
    # a member moved out to the top level: compatible
    assert kinds("BACKWARD", proto("message P { string a = 1; string b = 2; string c = 3; oneof o { string d = 4; } }"),
                 v1) == []
    # one top-level field into a new oneof: compatible; two: refused
    assert kinds("BACKWARD", proto("message P { string b = 2; oneof x { string a = 1; } "
                                   "oneof o { string c = 3; string d = 4; } }"), v1) == []
    assert kinds("BACKWARD", proto("message P { oneof x { string a = 1; string b = 2; } "
                                   "oneof o { string c = 3; string d = 4; } }"), v1) == ["MULTIPLE_FIELDS_MOVED_TO_ONEOF"]
    # a top-level field into the existing oneof
    assert kinds("BACKWARD", proto("message P { string b = 2; oneof o { string a = 1; string c = 3; string d = 4; } }"),
                 v1) == ["FIELD_MOVED_TO_EXISTING_ONEOF"]
    # a member's type changed is found though it is in a oneof, at the oneof's path
    problems = compatibility.check("BACKWARD", proto(
        "message P { string a = 1; string b = 2; oneof o { string c = 3; double d = 4; } }"), [v1])
    assert "FIELD_SCALAR_KIND_CHANGED" in problems[0] and "#/P/o/4" in problems[0]


def test_enum_constants_may_change_and_enums_are_numbers() -> None:
    v1 = proto("message M { Color c = 1; } enum Color { RED = 0; GREEN = 1; }")
    assert kinds("FULL", proto("message M { Color c = 1; } enum Color { RED = 0; BLUE = 2; }"), v1) == []
    assert kinds("FULL", proto("message M { int64 c = 1; }"), v1) == []  # ENUM_REMOVED, enum -> int64
    assert kinds("FULL", proto("message M { string c = 1; }"), v1) == ["FIELD_SCALAR_KIND_CHANGED"] * 2


def test_nested_messages_maps_and_message_fields() -> None:
    v1 = proto("message M { Inner i = 1; map<string, Inner> m = 2; message Inner { int32 x = 1; } }")
    assert kinds("BACKWARD", proto("message M { Inner i = 1; map<string, Inner> m = 2; "
                                   "message Inner { int32 x = 1; string y = 2; } }"), v1) == []
    problems = compatibility.check("BACKWARD", proto(
        "message M { Inner i = 1; map<string, Inner> m = 2; message Inner { float x = 1; } }"), [v1])
    assert "FIELD_SCALAR_KIND_CHANGED" in problems[0] and "#/M/Inner/1" in problems[0]
    # a map's key kind
    assert kinds("BACKWARD", proto("message M { Inner i = 1; map<int32, Inner> m = 2; "
                                   "message Inner { int32 x = 1; } }"), v1) == ["FIELD_SCALAR_KIND_CHANGED"]
    # a message field pointing at another type
    assert kinds("BACKWARD", proto("message M { Other i = 1; map<string, Inner> m = 2; "
                                   "message Inner { int32 x = 1; } message Other { int32 x = 1; } }"), v1) == [
        "FIELD_NAMED_TYPE_CHANGED"]


def test_recursive_messages_terminate() -> None:
    v1 = proto("message Node { string v = 1; repeated Node kids = 2; }")
    assert kinds("FULL", proto("message Node { string v = 1; repeated Node kids = 2; int32 n = 3; }"), v1) == []


def test_transitive_levels_check_every_version_and_the_plain_ones_the_latest() -> None:
    v1 = proto("message Order { string id = 1; }")
    v2 = proto("message Order { bytes id = 1; }")
    v3 = proto("message Order { bytes id = 1; int32 qty = 2; }")
    v4 = proto("message Order { int64 id = 1; int32 qty = 2; }")  # breaks against every earlier one
    assert kinds("BACKWARD", v3, v1, v2) == []
    assert kinds("BACKWARD_TRANSITIVE", v3, v1, v2) == []
    older = proto("message Order { string id = 1; int64 qty = 2; }")
    fine_with_latest = proto("message Order { string id = 1; int64 qty = 2; string note = 3; }")
    assert kinds("BACKWARD", v4, v3) == ["FIELD_SCALAR_KIND_CHANGED"]
    # against an older version only: BACKWARD looks at the latest alone, the transitive level at all
    base = proto("message Order { string id = 1; sint32 qty = 2; }")
    assert kinds("BACKWARD", fine_with_latest, base, older) == []
    assert kinds("BACKWARD_TRANSITIVE", fine_with_latest, base, older) == ["FIELD_SCALAR_KIND_CHANGED"]
    assert kinds("FORWARD_TRANSITIVE", fine_with_latest, base, older) == ["FIELD_SCALAR_KIND_CHANGED"]
    assert kinds("FULL_TRANSITIVE", fine_with_latest, base, older) == ["FIELD_SCALAR_KIND_CHANGED"] * 2
    assert kinds("NONE", v4, v1) == []


REF = 'syntax = "proto3";\npackage common;\nmessage Money { int64 units = 1; string currency = 2; }\n'
REF_V2 = 'syntax = "proto3";\npackage common;\nmessage Money { double units = 1; string currency = 2; }\n'
USES_REF = 'syntax = "proto3";\npackage shop;\nimport "common/money.proto";\nmessage Order { common.Money total = 1; }\n'


def test_references_are_compiled_and_a_changed_referenced_type_is_compared() -> None:
    one = parse("PROTOBUF", USES_REF, [Referenced("common/money.proto", "money", 1, "PROTOBUF", REF)], validate=True)
    same = parse("PROTOBUF", USES_REF, [Referenced("common/money.proto", "money", 1, "PROTOBUF", REF)], validate=True)
    assert kinds("FULL", same, one) == []
    moved = parse("PROTOBUF", USES_REF, [Referenced("common/money.proto", "money", 2, "PROTOBUF", REF_V2)],
                  validate=True)
    assert kinds("BACKWARD", moved, one) == ["FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"]
    with pytest.raises(RegistryError) as refused:  # the import resolves through a reference only
        parse("PROTOBUF", USES_REF, [], validate=True)
    assert refused.value.error_code == 42201 and "common/money.proto" in refused.value.message


def test_well_known_imports_and_invalid_texts() -> None:
    stamp = proto('import "google/protobuf/timestamp.proto";\nmessage E { google.protobuf.Timestamp at = 1; }')
    assert kinds("FULL", proto('import "google/protobuf/timestamp.proto";\n'
                               "message E { google.protobuf.Timestamp at = 1; string s = 2; }"), stamp) == []
    with pytest.raises(RegistryError) as refused:
        proto("message E { Unknown u = 1; }")
    assert refused.value.error_code == 42201 and "Unknown" in refused.value.message
    with pytest.raises(RegistryError):
        proto("message E { string s = 1 }")  # no ';'
    # a stored text is compiled only when the rules need it (parse without validate accepts it)
    parse("PROTOBUF", 'syntax = "proto3"; message E { Unknown u = 1; }')


def descriptor(body: str) -> str:
    from google.protobuf import descriptor_pb2
    from grpc_tools import _protoc_compiler  # noqa: F401 (protoc is what compiles the texts)

    from tidelog.schema_registry.protobuf_schema import _protoc

    files = _protoc("order.proto", {"order.proto": 'syntax = "proto3";\npackage shop;\n' + body})
    file = files["order.proto"]
    assert isinstance(file, descriptor_pb2.FileDescriptorProto)
    return base64.standard_b64encode(file.SerializeToString()).decode()


def test_the_descriptor_form_is_compared_like_text_and_against_text() -> None:
    v1 = parse("PROTOBUF", descriptor("message Order { string id = 1; int32 qty = 2; }"), validate=True)
    v2 = parse("PROTOBUF", descriptor("message Order { string id = 1; int64 qty = 2; string n = 3; }"), validate=True)
    v3 = parse("PROTOBUF", descriptor("message Order { string id = 1; float qty = 2; }"), validate=True)
    assert kinds("FULL", v2, v1) == []
    assert kinds("BACKWARD", v3, v1) == ["FIELD_SCALAR_KIND_CHANGED"]
    assert kinds("BACKWARD", v3, BASE) == ["FIELD_SCALAR_KIND_CHANGED"]  # a text version, a descriptor new one


def test_a_descriptor_importing_well_known_types_resolves_them_from_the_runtime() -> None:
    stamped = 'import "google/protobuf/timestamp.proto";\nmessage E { google.protobuf.Timestamp at = 1; }'
    v1 = parse("PROTOBUF", descriptor(stamped), validate=True)  # no reference: the serializer skips built-ins
    compiled = v1.parsed.compiled()
    assert "google/protobuf/timestamp.proto" in compiled.files
    v2 = parse("PROTOBUF", descriptor('import "google/protobuf/duration.proto";\n'
                                      "message E { google.protobuf.Duration at = 1; }"), validate=True)
    assert kinds("BACKWARD", v2, v1) == ["FIELD_NAMED_TYPE_CHANGED"]
    assert kinds("FULL", parse("PROTOBUF", descriptor(stamped + " message F { string s = 1; }")), v1) == [
        "MESSAGE_REMOVED"]  # F is in the new schema only: FORWARD's reader (the old one) lacks it


def test_a_stored_version_that_does_not_compile_makes_the_check_fail_with_a_reason() -> None:
    stored = parse("PROTOBUF", 'syntax = "proto3"; message E { Unknown u = 1; }')  # as read back from _schemas
    problems = compatibility.check("BACKWARD", proto("message E { string s = 1; }"), [stored])
    assert "SCHEMA_NOT_COMPILED" in problems[0] and "old schema does not compile" in problems[0]
    assert compatibility.check("NONE", proto("message E { string s = 1; }"), [stored]) == []
