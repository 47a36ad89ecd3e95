"""JSON Schema compatibility: can a reader's schema accept every document a writer's schema accepts?

Confluent's registry answers this with its own rules (its errorType names are used here); Tidelog checks
the same question over the keywords below, conservatively: a keyword it does not reason about
(``$ref``, ``allOf``/``anyOf``/``oneOf``/``not``, conditionals, patterns, formats ...) must be the
same on both sides, else the change is reported as ``UNCHECKED_KEYWORD_CHANGED`` rather than allowed.

* ``type``: the writer's types must be among the reader's (``integer`` is a ``number``);
* objects: a property the reader requires must be required by the writer; a property both have is
  checked recursively; a property only the writer has must be accepted by the reader's
  ``additionalProperties`` (closed content model: refused); a property only the reader has must accept
  whatever the writer's ``additionalProperties`` allows (open content model: refused unless the
  reader's property accepts anything), as in Confluent's rules;
* arrays: ``items`` recursively;
* ``enum``: the writer's values among the reader's; ``minimum``/``maximum``, ``minLength``/
  ``maxLength``, ``minItems``/``maxItems``: the reader's bounds no tighter than the writer's.

BACKWARD checks the new schema as the reader of the old one's documents, FORWARD the other way.
"""

from __future__ import annotations

import json
from typing import Any

#: keywords not reasoned about: equal on both sides, or the change is reported
UNCHECKED = ("$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "patternProperties",
             "dependencies", "dependentSchemas", "dependentRequired", "propertyNames", "contains", "prefixItems",
             "additionalItems", "unevaluatedProperties", "unevaluatedItems", "pattern", "format", "multipleOf",
             "uniqueItems", "minProperties", "maxProperties", "exclusiveMinimum", "exclusiveMaximum", "const",
             "definitions", "$defs")
LOWER_BOUNDS = {"minimum": "MINIMUM_INCREASED", "minLength": "MIN_LENGTH_INCREASED", "minItems": "MIN_ITEMS_INCREASED"}
UPPER_BOUNDS = {"maximum": "MAXIMUM_DECREASED", "maxLength": "MAX_LENGTH_DECREASED", "maxItems": "MAX_ITEMS_DECREASED"}

Problem = tuple[str, str, str]  # (errorType, path, description)


def problems(writer: Any, reader: Any, path: str = "#") -> list[Problem]:
    """Why ``reader`` may refuse a document ``writer`` accepts (empty: it accepts every one)."""
    if reader is True or reader == {} or writer is False:
        return []
    if reader is False:
        return [("SCHEMA_NARROWED", path, "the reader accepts nothing here")]
    if not isinstance(writer, dict):
        writer = {}
    if not isinstance(reader, dict):
        return [("UNCHECKED_KEYWORD_CHANGED", path, "the reader's schema is neither an object nor a boolean")]
    out: list[Problem] = []
    for key in UNCHECKED:
        if key in writer or key in reader:
            if _same(writer.get(key), reader.get(key)):
                continue
            out.append(("UNCHECKED_KEYWORD_CHANGED", f"{path}/{key}",
                        f"'{key}' changed: Tidelog does not check it, so the change is not allowed"))
    out.extend(_types(writer, reader, path))
    out.extend(_enum(writer, reader, path))
    for key, kind in LOWER_BOUNDS.items():
        if key in reader and (key not in writer or _num(writer[key]) < _num(reader[key])):
            out.append((kind, f"{path}/{key}", f"{key} {writer.get(key)} -> {reader[key]}"))
    for key, kind in UPPER_BOUNDS.items():
        if key in reader and (key not in writer or _num(writer[key]) > _num(reader[key])):
            out.append((kind, f"{path}/{key}", f"{key} {writer.get(key)} -> {reader[key]}"))
    out.extend(_object(writer, reader, path))
    w_items, r_items = writer.get("items", {}), reader.get("items", {})
    if isinstance(w_items, list) or isinstance(r_items, list):
        if not _same(w_items, r_items):
            out.append(("UNCHECKED_KEYWORD_CHANGED", f"{path}/items", "tuple 'items' changed"))
    else:
        out.extend(problems(w_items, r_items, f"{path}/items"))
    return out


def _types(writer: dict, reader: dict, path: str) -> list[Problem]:
    r_types = _type_set(reader)
    if r_types is None:
        return []
    w_types = _type_set(writer)
    if w_types is None:
        return [("TYPE_NARROWED", f"{path}/type", f"the writer allows any type, the reader only {sorted(r_types)}")]
    missing = sorted(t for t in w_types if t not in r_types and not (t == "integer" and "number" in r_types))
    if missing:
        return [("TYPE_CHANGED" if len(missing) == len(w_types) else "TYPE_NARROWED", f"{path}/type",
                 f"{sorted(w_types)} -> {sorted(r_types)}")]
    return []


def _enum(writer: dict, reader: dict, path: str) -> list[Problem]:
    if "enum" not in reader:
        return []
    allowed = {_key(v) for v in reader["enum"]} if isinstance(reader["enum"], list) else set()
    if "enum" not in writer or not isinstance(writer["enum"], list) or any(
            _key(v) not in allowed for v in writer["enum"]):
        return [("ENUM_ARRAY_NARROWED", f"{path}/enum", f"{writer.get('enum')} -> {reader['enum']}")]
    return []


def _object(writer: dict, reader: dict, path: str) -> list[Problem]:
    keys = ("properties", "required", "additionalProperties")
    if not any(k in writer or k in reader for k in keys):
        return []
    w_props, r_props = _dict(writer.get("properties")), _dict(reader.get("properties"))
    w_add, r_add = writer.get("additionalProperties", True), reader.get("additionalProperties", True)
    w_required = set(writer.get("required") or ())
    out: list[Problem] = []
    for name in reader.get("required") or ():
        if name not in w_required:
            out.append(("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required", f"'{name}' is required by the reader only"))
    for name, w_schema in w_props.items():
        where = f"{path}/properties/{name}"
        if name in r_props:
            out.extend(problems(w_schema, r_props[name], where))
        elif problems(w_schema, r_add, where):
            out.append(("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL" if r_add is False
                        else "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where,
                        f"'{name}' is the writer's only and the reader's additionalProperties refuse it"))
    for name, r_schema in r_props.items():
        if name not in w_props and w_add is not False and problems(w_add, r_schema, f"{path}/properties/{name}"):
            out.append(("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", f"{path}/properties/{name}",
                        f"'{name}' is the reader's only, and the writer's open content model may write anything "
                        "under that name"))
    if w_add is not False and problems(w_add, r_add, f"{path}/additionalProperties"):
        out.append(("ADDITIONAL_PROPERTIES_NARROWED", f"{path}/additionalProperties",
                    "the reader's additionalProperties refuse what the writer's allow"))
    return out


def _type_set(schema: dict) -> set[str] | None:
    t = schema.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else {str(x) for x in t} if isinstance(t, list) else None


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _same(a: Any, b: Any) -> bool:
    return _key(a) == _key(b)


__all__ = ["problems"]
