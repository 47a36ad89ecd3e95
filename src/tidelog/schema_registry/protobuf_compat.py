"""Protobuf compatibility: the differences Confluent's registry finds between two Protobuf schemas
(its ``io.confluent.kafka.schemaregistry.protobuf.diff``), found here on descriptors
(:mod:`tidelog.schema_registry.protobuf_schema`), with Confluent's names for them.

:func:`differences` compares an *original* schema (the writer's) with an *update* (the reader's):
BACKWARD compares the latest version (original) with the new schema (update), FORWARD the other way.
Every difference has a type and a path (``#/Message/3``: message names, oneof names, field numbers).
A schema is compatible when every difference is of a compatible type (:data:`COMPATIBLE`):

* messages, enums, fields and oneofs added or removed, fields renamed (the wire has numbers),
  enum constants added, renamed or removed, a message moved or reordered (a record's message index
  refers to the schema its id names), a oneof member moved out to the top level, a string or bytes
  field turned repeated (or back);
* incompatible: the package changed (``PACKAGE_CHANGED``), a message removed (``MESSAGE_REMOVED``),
  a field's kind changed between scalar (enums count as numbers), message and map
  (``FIELD_KIND_CHANGED``), a scalar changed to one the wire does not read the same way
  (``FIELD_SCALAR_KIND_CHANGED``; the groups that read each other: int32, int64, uint32, uint64,
  bool and enums; sint32 and sint64; string and bytes; fixed32 and sfixed32; fixed64 and sfixed64;
  float; double), a message field's type renamed or changed incompatibly
  (``FIELD_NAMED_TYPE_CHANGED``, with the referenced type's own differences), a numeric field's
  explicit label changed (``FIELD_NUMERIC_LABEL_CHANGED``), a required field added or removed
  (``REQUIRED_FIELD_ADDED``/``REQUIRED_FIELD_REMOVED``), a oneof member removed while its oneof stays
  (``ONEOF_FIELD_REMOVED``), fields that were independent made members of one oneof
  (``MULTIPLE_FIELDS_MOVED_TO_ONEOF``, ``FIELD_MOVED_TO_EXISTING_ONEOF``).

Labels are as written: proto3 fields without ``optional`` and oneof members have none, so only a
change between explicit labels (``optional``, ``required``, ``repeated``) counts, as in Confluent's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.protobuf.descriptor_pb2 import FieldDescriptorProto as F

from tidelog.schema_registry.protobuf_schema import Compiled

COMPATIBLE = frozenset({
    "MESSAGE_ADDED", "MESSAGE_MOVED", "ENUM_ADDED", "ENUM_REMOVED", "ENUM_CONST_ADDED", "ENUM_CONST_CHANGED",
    "ENUM_CONST_REMOVED", "FIELD_ADDED", "FIELD_REMOVED", "FIELD_NAME_CHANGED", "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
    "ONEOF_ADDED", "ONEOF_REMOVED", "ONEOF_FIELD_ADDED", "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
})

#: what each incompatible difference says, {reader}/{writer} being "new"/"old" (Tidelog's wording; the
#: errorType and the path are Confluent's)
DESCRIPTIONS = {
    "PACKAGE_CHANGED": "The {reader} schema's package differs from the {writer} schema's (path '{path}')",
    "MESSAGE_REMOVED": "The message type at path '{path}' of the {writer} schema is not in the {reader} schema",
    "FIELD_KIND_CHANGED": "The field at path '{path}' is a scalar, a message or a map in the {reader} schema and "
                          "another of these in the {writer} schema",
    "FIELD_SCALAR_KIND_CHANGED": "The scalar field at path '{path}' has a type in the {reader} schema that does not "
                                 "read the wire values of its type in the {writer} schema",
    "FIELD_NAMED_TYPE_CHANGED": "The message field at path '{path}' has another type, or an incompatibly changed one, "
                                "in the {reader} schema than in the {writer} schema",
    "FIELD_NUMERIC_LABEL_CHANGED": "The numeric field at path '{path}' has another label in the {reader} schema than "
                                   "in the {writer} schema",
    "REQUIRED_FIELD_ADDED": "The required field at path '{path}' of the {reader} schema is not in the {writer} schema",
    "REQUIRED_FIELD_REMOVED": "The required field at path '{path}' of the {writer} schema is not in the {reader} "
                              "schema",
    "ONEOF_FIELD_REMOVED": "The oneof member at path '{path}' of the {writer} schema is not in the {reader} schema",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": "The oneof at path '{path}' of the {reader} schema has several members that "
                                      "are independent fields in the {writer} schema",
    "FIELD_MOVED_TO_EXISTING_ONEOF": "The oneof at path '{path}' of the {reader} schema has members that are "
                                     "independent of each other in the {writer} schema",
}

_SCALAR_KIND = {
    F.TYPE_INT32: "GENERAL_NUMBER", F.TYPE_INT64: "GENERAL_NUMBER", F.TYPE_UINT32: "GENERAL_NUMBER",
    F.TYPE_UINT64: "GENERAL_NUMBER", F.TYPE_BOOL: "GENERAL_NUMBER", F.TYPE_ENUM: "GENERAL_NUMBER",
    F.TYPE_SINT32: "SIGNED_NUMBER", F.TYPE_SINT64: "SIGNED_NUMBER",
    F.TYPE_STRING: "STRING_OR_BYTES", F.TYPE_BYTES: "STRING_OR_BYTES",
    F.TYPE_FIXED32: "FIXED32", F.TYPE_SFIXED32: "FIXED32", F.TYPE_FIXED64: "FIXED64", F.TYPE_SFIXED64: "FIXED64",
    F.TYPE_FLOAT: "FLOAT", F.TYPE_DOUBLE: "DOUBLE",
}


@dataclass(frozen=True)
class _Type:
    """A message or enum type as the rules see it."""

    package: str
    #: (subject, version) of the reference that provides it ("", -1: the schema itself; None: a
    #: file no reference names, such as the well-known types)
    origin: tuple[str, int] | None
    proto: Any
    syntax: str
    is_map: bool = False


def _types(compiled: Compiled) -> dict[str, _Type]:
    out: dict[str, _Type] = {}
    for name, file in compiled.files.items():
        origin = compiled.origin.get(name)
        syntax = file.syntax or "proto2"

        def walk(prefix: str, messages: Any, enums: Any) -> None:
            for message in messages:
                full = f"{prefix}.{message.name}" if prefix else message.name
                out[full] = _Type(file.package, origin, message, syntax, message.options.map_entry)  # noqa: B023
                walk(full, message.nested_type, message.enum_type)
            for enum in enums:
                full = f"{prefix}.{enum.name}" if prefix else enum.name
                out[full] = _Type(file.package, origin, enum, syntax)  # noqa: B023

        walk(file.package, file.message_type, file.enum_type)
    return out


@dataclass
class _Diff:
    original: dict[str, _Type]
    update: dict[str, _Type]
    path: list[str] = field(default_factory=list)
    found: list[tuple[str, str]] = field(default_factory=list)
    visiting: set[int] = field(default_factory=set)

    def add(self, kind: str, *extra: str) -> None:
        self.found.append((kind, "#/" + "/".join([*self.path, *extra])))

    def compatible(self) -> bool:
        return all(kind in COMPATIBLE for kind, _ in self.found)

    # ------------------------------------------------------------------ types

    def compare_types(self, o_messages: Any, o_enums: Any, u_messages: Any, u_enums: Any,
                      syntaxes: tuple[str, str]) -> None:
        o_msg = [m for m in o_messages if not m.options.map_entry]
        u_msg = [m for m in u_messages if not m.options.map_entry]
        o_by, u_by = {m.name: m for m in o_msg}, {m.name: m for m in u_msg}
        o_index, u_index = {m.name: i for i, m in enumerate(o_msg)}, {m.name: i for i, m in enumerate(u_msg)}
        for name in sorted(o_by.keys() | u_by.keys()):
            self.path.append(name)
            if name not in u_by:
                self.add("MESSAGE_REMOVED")
            elif name not in o_by:
                self.add("MESSAGE_ADDED")
            else:
                self.compare_message(o_by[name], u_by[name], syntaxes)
                if o_index[name] != u_index[name]:
                    self.add("MESSAGE_MOVED")
            self.path.pop()
        o_en, u_en = {e.name: e for e in o_enums}, {e.name: e for e in u_enums}
        for name in sorted(o_en.keys() | u_en.keys()):
            self.path.append(name)
            if name not in u_en:
                self.add("ENUM_REMOVED")
            elif name not in o_en:
                self.add("ENUM_ADDED")
            else:
                o_values = {v.number: v.name for v in o_en[name].value}
                u_values = {v.number: v.name for v in u_en[name].value}
                for number in sorted(o_values.keys() | u_values.keys()):
                    if number not in u_values:
                        self.add("ENUM_CONST_REMOVED", str(number))
                    elif number not in o_values:
                        self.add("ENUM_CONST_ADDED", str(number))
                    elif o_values[number] != u_values[number]:
                        self.add("ENUM_CONST_CHANGED", str(number))
            self.path.pop()

    # ------------------------------------------------------------------ messages

    def compare_message(self, original: Any, update: Any, syntaxes: tuple[str, str]) -> None:
        if id(original) not in self.visiting:
            self.visiting.add(id(original))
            try:
                self._compare_fields(original, update, syntaxes)
            finally:
                self.visiting.discard(id(original))
        self.compare_types(original.nested_type, original.enum_type, update.nested_type, update.enum_type, syntaxes)

    def _compare_fields(self, original: Any, update: Any, syntaxes: tuple[str, str]) -> None:
        o_fields, o_oneof_of, o_oneofs = _fields(original)
        u_fields, u_oneof_of, u_oneofs = _fields(update)
        deleted = {name for name, members in o_oneofs.items()
                   if name not in u_oneofs and not any(tag in u_fields for tag in members)}
        for name, members in u_oneofs.items():  # independent fields made mutually exclusive
            groups, moved_in = set(), 0
            for tag in members:
                if tag in o_oneof_of:
                    groups.add("oneof:" + o_oneof_of[tag])
                elif tag in o_fields:
                    groups.add(f"field:{tag}")
                    moved_in += 1
            if len(groups) > 1:
                self.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF" if moved_in > 1 else "FIELD_MOVED_TO_EXISTING_ONEOF", name)
        for name in sorted(o_oneofs.keys() | u_oneofs.keys()):
            if name not in u_oneofs:
                self.add("ONEOF_REMOVED", name)
            elif name not in o_oneofs:
                self.add("ONEOF_ADDED", name)
        for tag in sorted(o_fields.keys() | u_fields.keys()):
            o_field, u_field = o_fields.get(tag), u_fields.get(tag)
            o_oneof, u_oneof = o_oneof_of.get(tag), u_oneof_of.get(tag)
            if u_field is None:
                if o_oneof is not None:
                    if o_oneof not in deleted:
                        self.add("ONEOF_FIELD_REMOVED", o_oneof, str(tag))
                else:
                    self.add("REQUIRED_FIELD_REMOVED" if o_field.label == F.LABEL_REQUIRED else "FIELD_REMOVED", str(tag))
            elif o_field is None:
                if u_oneof is not None:
                    self.add("ONEOF_FIELD_ADDED", u_oneof, str(tag))
                else:
                    self.add("REQUIRED_FIELD_ADDED" if u_field.label == F.LABEL_REQUIRED else "FIELD_ADDED", str(tag))
            else:
                if o_oneof is not None and u_oneof is None:
                    self.add("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", str(tag))
                where = [u_oneof, str(tag)] if u_oneof is not None else [str(tag)]
                self.path.extend(where)
                self.compare_field(o_field, u_field, (_label(o_field, o_oneof, syntaxes[0]),
                                                      _label(u_field, u_oneof, syntaxes[1])))
                del self.path[-len(where):]

    # ------------------------------------------------------------------ fields

    def compare_field(self, original: Any, update: Any, labels: tuple[str | None, str | None]) -> None:
        if original.name != update.name:
            self.add("FIELD_NAME_CHANGED")
        self.compare_labels_and_types(labels, original, update)

    def compare_labels_and_types(self, labels: tuple[str | None, str | None], original: Any, update: Any) -> None:
        o_kind, u_kind = self._kind(original, self.original), self._kind(update, self.update)
        if o_kind != u_kind:
            self.add("FIELD_KIND_CHANGED")
        elif o_kind == "SCALAR":
            o_scalar, u_scalar = _SCALAR_KIND.get(original.type), _SCALAR_KIND.get(update.type)
            if o_scalar != u_scalar:
                self.add("FIELD_SCALAR_KIND_CHANGED")
            elif None not in labels and labels[0] != labels[1]:
                self.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED" if o_scalar == "STRING_OR_BYTES"
                         else "FIELD_NUMERIC_LABEL_CHANGED")
        elif o_kind == "MAP":
            o_entry = self.original[original.type_name.lstrip(".")].proto
            u_entry = self.update[update.type_name.lstrip(".")].proto
            for number in (1, 2):  # key, value
                o_part = next(f for f in o_entry.field if f.number == number)
                u_part = next(f for f in u_entry.field if f.number == number)
                self.compare_labels_and_types((None, None), o_part, u_part)
        else:
            self._compare_message_types(original.type_name.lstrip("."), update.type_name.lstrip("."))

    @staticmethod
    def _kind(f: Any, types: dict[str, _Type]) -> str:
        if f.type not in (F.TYPE_MESSAGE, F.TYPE_GROUP):
            return "SCALAR"  # enums too
        known = types.get(f.type_name.lstrip("."))
        return "MAP" if known is not None and known.is_map else "MESSAGE"

    def _compare_message_types(self, o_name: str, u_name: str) -> None:
        o_type, u_type = self.original.get(o_name), self.update.get(u_name)
        if o_type is None or u_type is None:  # not resolved: the names alone
            if o_name != u_name:
                self.add("FIELD_NAMED_TYPE_CHANGED")
            return
        o_local, u_local = _local(o_name, o_type.package), _local(u_name, u_type.package)
        if o_local != u_local:
            self.add("FIELD_NAMED_TYPE_CHANGED")
            return
        if o_type.origin is not None and o_type.origin == u_type.origin:
            return  # both the schema's own type (compared where it is defined) or the same reference
        sub = _Diff(self.original, self.update, list(self.path), [], set(self.visiting))
        sub.compare_message(o_type.proto, u_type.proto, (o_type.syntax, u_type.syntax))
        self.found.extend(sub.found)
        if not sub.compatible():
            self.add("FIELD_NAMED_TYPE_CHANGED")


def _fields(message: Any) -> tuple[dict[int, Any], dict[int, str], dict[str, list[int]]]:
    """Fields by number, the (real) oneof each member is in, and each oneof's members."""
    synthetic = {f.oneof_index for f in message.field if f.HasField("oneof_index") and f.proto3_optional}
    by_tag: dict[int, Any] = {}
    oneof_of: dict[int, str] = {}
    oneofs: dict[str, list[int]] = {message.oneof_decl[i].name: [] for i in range(len(message.oneof_decl))
                                    if i not in synthetic}
    for f in message.field:
        by_tag[f.number] = f
        if f.HasField("oneof_index") and f.oneof_index not in synthetic:
            name = message.oneof_decl[f.oneof_index].name
            oneof_of[f.number] = name
            oneofs[name].append(f.number)
    return by_tag, oneof_of, oneofs


def _label(f: Any, oneof: str | None, syntax: str) -> str | None:
    """The label as written (None: none), as Confluent reads it off a descriptor."""
    if oneof is not None:
        return None
    if f.proto3_optional:
        return "OPTIONAL"
    if f.label == F.LABEL_REPEATED:
        return "REPEATED"
    if syntax == "proto3":
        return None
    return "REQUIRED" if f.label == F.LABEL_REQUIRED else "OPTIONAL"


def _local(full_name: str, package: str) -> str:
    return full_name[len(package) + 1:] if package and full_name.startswith(package + ".") else full_name


def differences(original: Compiled, update: Compiled) -> list[tuple[str, str]]:
    """Every difference (type, path) between ``original`` (the writer's schema) and ``update`` (the
    reader's), compatible or not."""
    diff = _Diff(_types(original), _types(update))
    if original.main.package != update.main.package:
        diff.add("PACKAGE_CHANGED")
    syntaxes = (original.main.syntax or "proto2", update.main.syntax or "proto2")
    diff.compare_types(original.main.message_type, original.main.enum_type,
                       update.main.message_type, update.main.enum_type, syntaxes)
    return diff.found


def problems(writer: Compiled, reader: Compiled, *, new_is_reader: bool) -> list[str]:
    """Confluent's verbose messages for the incompatible differences of reading ``writer``'s data
    with ``reader`` (empty: compatible)."""
    names = {"reader": "new", "writer": "old"} if new_is_reader else {"reader": "old", "writer": "new"}
    return [f'{{errorType:"{kind}", description:"{DESCRIPTIONS.get(kind, "").format(path=path, **names)}"}}'
            for kind, path in differences(writer, reader) if kind not in COMPATIBLE]


__all__ = ["COMPATIBLE", "DESCRIPTIONS", "differences", "problems"]
