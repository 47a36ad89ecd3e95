"""The records of ``_schemas``, laid out as Confluent's registry writes them (so that its topic can be
read by either): a JSON key naming what the record is, a JSON value (or a tombstone).

========================  ==========================================================  ===========================
key                       value                                                       meaning
========================  ==========================================================  ===========================
``{"keytype":"SCHEMA",    ``{"subject","version","id","schemaType"?,"references"?,    a subject's version (deleted:
"subject","version",      "schema","deleted"}``                                       soft-deleted); a tombstone:
"magic":1}``                                                                          hard-deleted
``{"keytype":"CONFIG",    ``{"compatibilityLevel": "BACKWARD"}``                      compatibility of a subject
"subject","magic":0}``                                                                (subject null: global);
                                                                                      tombstone: unset
``{"keytype":"MODE",...}``  ``{"mode": "READONLY"}``                                  mode, as CONFIG
``{"keytype":             ``{"subject","version"}``                                   a subject's soft delete (its
"DELETE_SUBJECT",...}``                                                               versions up to ``version``)
``{"keytype":"NOOP",      (none)                                                      written to learn the end of
"magic":0}``                                                                          the log; ignored
========================  ==========================================================  ===========================

``schemaType`` is left out for AVRO and ``references`` when there are none, as Confluent does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SCHEMA = "SCHEMA"
CONFIG = "CONFIG"
MODE = "MODE"
DELETE_SUBJECT = "DELETE_SUBJECT"
CLEAR_SUBJECT = "CLEAR_SUBJECT"
NOOP = "NOOP"


@dataclass(frozen=True, slots=True)
class Reference:
    """A schema reference: the name the referring schema uses, and the subject and version it names."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True, slots=True)
class SchemaValue:
    """A subject's version: the value of a SCHEMA key."""

    subject: str
    version: int
    schema_id: int
    schema_type: str
    schema: str
    references: tuple[Reference, ...] = ()
    deleted: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.schema_id}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = [r.to_json() for r in self.references]
        out["schema"] = self.schema
        out["deleted"] = self.deleted
        return out


def _dump(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def schema_key(subject: str, version: int) -> bytes:
    return _dump({"keytype": SCHEMA, "subject": subject, "version": version, "magic": 1})


def config_key(subject: str | None) -> bytes:
    return _dump({"keytype": CONFIG, "subject": subject, "magic": 0})


def mode_key(subject: str | None) -> bytes:
    return _dump({"keytype": MODE, "subject": subject, "magic": 0})


def delete_subject_key(subject: str) -> bytes:
    return _dump({"keytype": DELETE_SUBJECT, "subject": subject, "magic": 0})


def noop_key() -> bytes:
    return _dump({"keytype": NOOP, "magic": 0})


def schema_value(value: SchemaValue) -> bytes:
    return _dump(value.to_json())


def config_value(level: str) -> bytes:
    return _dump({"compatibilityLevel": level})


def mode_value(mode: str) -> bytes:
    return _dump({"mode": mode})


def delete_subject_value(subject: str, version: int) -> bytes:
    return _dump({"subject": subject, "version": version})


def parse_key(raw: bytes) -> dict[str, Any] | None:
    """The key as JSON, or None when it is not one of ours (skipped, as Confluent's reader skips it)."""
    try:
        key = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return key if isinstance(key, dict) and isinstance(key.get("keytype"), str) else None


def parse_schema_value(raw: bytes) -> SchemaValue:
    """A SCHEMA value (raises ValueError, KeyError or TypeError on one that is not)."""
    obj = json.loads(raw)
    refs = tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"])) for r in obj.get("references") or ())
    return SchemaValue(str(obj["subject"]), int(obj["version"]), int(obj["id"]), str(obj.get("schemaType") or "AVRO"),
                       str(obj["schema"]), refs, bool(obj.get("deleted", False)))


__all__ = [
    "CONFIG",
    "DELETE_SUBJECT",
    "MODE",
    "NOOP",
    "SCHEMA",
    "Reference",
    "SchemaValue",
    "config_key",
    "config_value",
    "delete_subject_key",
    "delete_subject_value",
    "mode_key",
    "mode_value",
    "noop_key",
    "parse_key",
    "parse_schema_value",
    "schema_key",
    "schema_value",
]
