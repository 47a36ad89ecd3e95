"""Schemas of the three types as the registry understands them: parsed, checked, and reduced to the
text that identifies them (two registrations with the same identity get the same id).

* **AVRO**: parsed by Apache Avro's Python library (``avro``), with the schemas it references parsed
  first into the same names. Identity: the parsed schema written back as compact JSON with sorted
  keys (whitespace, key order and ``"int"`` vs ``{"type": "int"}`` do not matter; docs, defaults and
  aliases do, as in Confluent's registry). ``normalize``: that same form is what is stored.
* **JSON** (JSON Schema): the text must be a JSON object or boolean. Identity: compact JSON with
  sorted keys; ``normalize`` stores that form.
* **PROTOBUF**: kept in the form it was registered in: ``.proto`` text, or a base64
  ``FileDescriptorProto`` as confluent-kafka's Python serializer sends it. ``parsed`` is a
  :class:`~tidelog.schema_registry.protobuf_schema.ProtobufSchema`, compiled to descriptors when the
  compatibility rules need them, or at once with ``validate`` (a schema in a request: a text protoc
  refuses, or a descriptor that does not decode, is refused with 42201). Identity: the text without
  comments, whitespace collapsed; a descriptor's deterministic serialization.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tidelog.schema_registry import errors
from tidelog.schema_registry.protobuf_schema import (
    ProtobufSchema,
    Referenced,
    decode_descriptor,
    is_descriptor,
)

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")


@dataclass(frozen=True, slots=True)
class ParsedSchema:
    schema_type: str
    #: the text as registered
    text: str
    #: the identity text (see the module docstring)
    canonical: str
    #: AVRO: the parsed ``avro.schema.Schema``; PROTOBUF: a ``ProtobufSchema`` (for the compatibility
    #: rules); else None
    parsed: Any = None

    def normalized(self) -> str:
        """The text stored when the request asks for ``normalize``."""
        return self.canonical if self.schema_type in ("AVRO", "JSON") else self.text


def check_type(schema_type: object) -> str:
    if schema_type is None:
        return "AVRO"
    if not isinstance(schema_type, str) or schema_type.upper() not in SCHEMA_TYPES:
        raise errors.unprocessable(f"Invalid schema type {schema_type!r}: one of {', '.join(SCHEMA_TYPES)}")
    return schema_type.upper()


def parse(schema_type: str, text: str, references: Sequence[Referenced] = (), *,
          validate: bool = False) -> ParsedSchema:
    """Parse ``text`` of ``schema_type``; ``references`` are the schemas it refers to, directly or
    not, dependencies first. ``validate``: compile a Protobuf schema now (else when first needed).
    Raises :class:`~tidelog.schema_registry.errors.RegistryError` (42201)."""
    if not isinstance(text, str) or not text.strip():
        raise errors.invalid_schema("Empty schema")
    if schema_type == "AVRO":
        return _parse_avro(text, [r.text for r in references if r.schema_type == "AVRO"])
    if schema_type == "JSON":
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise errors.invalid_schema(f"Invalid schema {text}, details: not JSON: {e}") from None
        if not isinstance(obj, (dict, bool)):
            raise errors.invalid_schema(f"Invalid schema {text}, details: a JSON Schema is an object or a boolean")
        return ParsedSchema("JSON", text, _compact(obj))
    proto = ProtobufSchema(text, tuple(r for r in references if r.schema_type == "PROTOBUF"))
    if validate:
        proto.compiled()
    return ParsedSchema("PROTOBUF", text, _proto_identity(text), proto)


def _parse_avro(text: str, references: list[str]) -> ParsedSchema:
    import avro.errors
    import avro.name
    import avro.schema

    names = avro.name.Names(validate_names=True)
    try:
        for ref in references:
            avro.schema.make_avsc_object(json.loads(ref), names)
        obj = json.loads(text)
        parsed = avro.schema.make_avsc_object(obj, names)
        canonical = _compact(parsed.to_json(avro.name.Names()))
    except ValueError as e:  # JSONDecodeError too
        raise errors.invalid_schema(f"Invalid schema {text}, details: {e}") from None
    except (avro.errors.AvroException, TypeError, AttributeError, KeyError) as e:
        raise errors.invalid_schema(f"Invalid schema {text}, details: {e}") from None
    return ParsedSchema("AVRO", text, canonical, parsed)


def _compact(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


_PROTO_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _proto_identity(text: str) -> str:
    if is_descriptor(text):
        descriptor = decode_descriptor(text)
        return "descriptor:" + base64.standard_b64encode(descriptor.SerializeToString(deterministic=True)).decode()
    return " ".join(_PROTO_COMMENTS.sub(" ", text).split())


__all__ = ["SCHEMA_TYPES", "ParsedSchema", "Referenced", "check_type", "parse"]
