"""Compatibility levels and the rules behind them (Confluent's levels over each type's own rules).

========================  ==============================================================
level                     a new schema must ...
========================  ==============================================================
NONE                      (nothing checked)
BACKWARD                  read data written with the latest version (new reader, old writer)
FORWARD                   be readable by the latest version (old reader, new writer)
FULL                      both, against the latest version
\\*_TRANSITIVE            the same against every version, not only the latest
========================  ==============================================================

AVRO uses Avro's schema-resolution rules as Apache Avro's own checker implements them
(``avro.compatibility.ReaderWriterCompatibilityChecker``: missing defaults, type promotions, enum
symbols, union branches, names, fixed sizes). JSON uses
:mod:`tidelog.schema_registry.json_compatibility` (a reader must accept every document the writer
accepts). PROTOBUF uses Confluent's Protobuf differences on descriptors
(:mod:`tidelog.schema_registry.protobuf_compat`). A schema of another type than the previous
version's is always incompatible.
"""

from __future__ import annotations

from tidelog.schema_registry.schemas import ParsedSchema

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
DEFAULT_LEVEL = "BACKWARD"


def parse_level(value: object) -> str | None:
    """The level named by ``value`` (any case), or None when it names none."""
    if isinstance(value, str) and value.upper() in LEVELS:
        return value.upper()
    return None


def against(level: str, previous: list[ParsedSchema]) -> list[ParsedSchema]:
    """The versions a new schema is checked against at ``level`` (``previous`` oldest first):
    the latest, every one (transitive), or none."""
    if level == "NONE" or not previous:
        return []
    return list(previous) if level.endswith("_TRANSITIVE") else [previous[-1]]


def check(level: str, new: ParsedSchema, previous: list[ParsedSchema]) -> list[str]:
    """Why ``new`` breaks ``level`` against ``previous`` (oldest first): one message per problem,
    in Confluent's verbose form; empty when it is compatible."""
    messages: list[str] = []
    base = level.removesuffix("_TRANSITIVE")
    for old in reversed(against(level, previous)):
        if old.schema_type != new.schema_type:
            messages.append(_message("TYPE_MISMATCH", f"Incompatible schema type {new.schema_type}: the version it "
                                     f"is checked against is {old.schema_type}", "/"))
        elif new.schema_type == "JSON":
            if base in ("BACKWARD", "FULL"):
                messages.extend(json_problems(reader=new, writer=old, new_is_reader=True))
            if base in ("FORWARD", "FULL"):
                messages.extend(json_problems(reader=old, writer=new, new_is_reader=False))
        elif new.schema_type == "PROTOBUF":
            if base in ("BACKWARD", "FULL"):
                messages.extend(protobuf_problems(reader=new, writer=old, new_is_reader=True))
            if base in ("FORWARD", "FULL"):
                messages.extend(protobuf_problems(reader=old, writer=new, new_is_reader=False))
        else:
            if base in ("BACKWARD", "FULL"):
                messages.extend(avro_problems(reader=new, writer=old, new_is_reader=True))
            if base in ("FORWARD", "FULL"):
                messages.extend(avro_problems(reader=old, writer=new, new_is_reader=False))
        if messages:
            messages.append(f"{{oldSchema: '{old.text}'}}")
            break
    if messages:
        messages.append(f"{{compatibility: '{level}'}}")
    return messages


def avro_problems(reader: ParsedSchema, writer: ParsedSchema, *, new_is_reader: bool) -> list[str]:
    """Avro's schema-resolution problems of reading ``writer``'s data with ``reader`` (empty: none)."""
    from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

    result = ReaderWriterCompatibilityChecker().get_compatibility(reader.parsed, writer.parsed)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    which, other = ("new", "old") if new_is_reader else ("old", "new")
    kinds = [k.name.upper() for k in result.incompatibilities] or ["INCOMPATIBLE"]
    texts = sorted(result.messages) or ["incompatible"]
    locations = sorted(result.locations) or ["/"]
    out = []
    for i, kind in enumerate(kinds):
        text = texts[min(i, len(texts) - 1)]
        location = locations[min(i, len(locations) - 1)]
        describe = _DESCRIPTIONS.get(kind, "{text} at path '{location}' (reading with the {which} schema)")
        out.append(_message(kind, describe.format(text=text, location=location, which=which, other=other),
                            location))
    return out


#: Confluent's wording of each Avro incompatibility (``which``: the reader's side, new or old)
_DESCRIPTIONS = {
    "READER_FIELD_MISSING_DEFAULT_VALUE": "The field '{text}' at path '{location}' in the {which} schema has no "
                                          "default value and is missing in the {other} schema",
    "TYPE_MISMATCH": "The type (path '{location}') of a field in the {which} schema does not match with the "
                     "{other} schema ({text})",
    "NAME_MISMATCH": "The name of the schema has changed (path '{location}'): {text}",
    "MISSING_ENUM_SYMBOLS": "The {which} schema is missing enum symbols '{text}' at path '{location}' in the "
                            "{other} schema",
    "MISSING_UNION_BRANCH": "The {which} schema is missing a type inside a union field at path '{location}' in "
                            "the {other} schema ({text})",
    "FIXED_SIZE_MISMATCH": "The size of FIXED type field at path '{location}' in the {which} schema does not "
                           "match with the {other} schema ({text})",
}


def json_problems(reader: ParsedSchema, writer: ParsedSchema, *, new_is_reader: bool) -> list[str]:
    """JSON Schema: why ``reader`` may refuse documents ``writer`` accepts
    (:mod:`tidelog.schema_registry.json_compatibility`)."""
    import json

    from tidelog.schema_registry.json_compatibility import problems

    which = "new" if new_is_reader else "old"
    return [_message(kind, f"{description} (reading with the {which} schema)", where)
            for kind, where, description in problems(json.loads(writer.text), json.loads(reader.text))]


def protobuf_problems(reader: ParsedSchema, writer: ParsedSchema, *, new_is_reader: bool) -> list[str]:
    """Protobuf: Confluent's incompatible differences of reading ``writer``'s data with ``reader``
    (:mod:`tidelog.schema_registry.protobuf_compat`)."""
    from tidelog.schema_registry import errors
    from tidelog.schema_registry.protobuf_compat import problems

    compiled = []
    for side in (writer, reader):
        try:
            compiled.append(side.parsed.compiled())
        except errors.RegistryError as e:  # a version stored before texts were compiled
            return [_message("SCHEMA_NOT_COMPILED", f"The {'new' if (side is reader) == new_is_reader else 'old'} "
                             f"schema does not compile: {e.message}", "/")]
    return problems(compiled[0], compiled[1], new_is_reader=new_is_reader)


def _message(kind: str, description: str, location: str) -> str:
    return f"{{errorType:'{kind}', description:'{description}', additionalInfo:'{location}'}}"


__all__ = ["DEFAULT_LEVEL", "LEVELS", "against", "avro_problems", "check", "json_problems", "parse_level",
           "protobuf_problems"]
