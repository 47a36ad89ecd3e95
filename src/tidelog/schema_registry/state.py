"""The registry's state, as the records of ``_schemas`` build it (pure: no I/O).

Every change is a record; :meth:`RegistryState.apply` replays one. The broker reads the whole topic
at start and then applies each record it wrote once committed, so this state is always what the log
says. Schema ids are global: one id per distinct schema (its type, identity text and references),
shared by every subject and version that registers it; the next id is one above the highest ever read.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from tidelog.schema_registry import records
from tidelog.schema_registry.records import Reference, SchemaValue

log = logging.getLogger(__name__)


@dataclass(slots=True)
class StoredSchema:
    """One schema id: its type, text and references, and the identity it is found by."""

    schema_id: int
    schema_type: str
    schema: str
    references: tuple[Reference, ...]
    #: what two registrations of "the same schema" share (type, canonical text, references)
    identity: tuple[str, str, tuple[Reference, ...]] | None = None


@dataclass(slots=True)
class RegistryState:
    #: subject -> version -> its value (soft-deleted versions included; hard-deleted ones gone)
    subjects: dict[str, dict[int, SchemaValue]] = field(default_factory=dict)
    schemas: dict[int, StoredSchema] = field(default_factory=dict)
    #: compatibility levels: None is the global one
    configs: dict[str | None, str] = field(default_factory=dict)
    modes: dict[str | None, str] = field(default_factory=dict)
    #: the highest schema id ever read (ids are never handed out twice while the log holds it)
    max_id: int = 0
    #: the next offset of _schemas to apply
    next_offset: int = 0
    #: schema id -> the (subject, version) pairs registered with it, deleted ones included
    by_id: dict[int, set[tuple[str, int]]] = field(default_factory=dict)
    #: ids first read since the owner last took them (to parse and index them once)
    new_ids: list[int] = field(default_factory=list)

    # ---------------------------------------------------------------- replay

    def apply(self, key: bytes | None, value: bytes | None) -> None:
        """Replay one record (records that are not the registry's are skipped, as Confluent does)."""
        if key is None:
            return
        parsed = records.parse_key(key)
        if parsed is None:
            log.warning("_schemas: skipped a record whose key is not a schema registry key: %r", key[:100])
            return
        keytype = parsed["keytype"]
        subject = parsed.get("subject")
        try:
            if keytype == records.SCHEMA:
                self._apply_schema(str(subject), int(parsed["version"]), value)
            elif keytype == records.CONFIG:
                self._apply_setting(self.configs, subject, value, "compatibilityLevel")
            elif keytype == records.MODE:
                self._apply_setting(self.modes, subject, value, "mode")
            elif keytype == records.DELETE_SUBJECT and value is not None:
                upto = int(json.loads(value)["version"])
                for version, entry in self.subjects.get(str(subject), {}).items():
                    if version <= upto and not entry.deleted:
                        self.subjects[str(subject)][version] = _soft_deleted(entry)
        except (ValueError, KeyError, TypeError) as e:
            log.warning("_schemas: skipped a malformed %s record (%s): %r", keytype, e, (value or b"")[:200])

    def _apply_schema(self, subject: str, version: int, value: bytes | None) -> None:
        if value is None:  # hard delete
            versions = self.subjects.get(subject, {})
            gone = versions.pop(version, None)
            if gone is not None:
                self.by_id.get(gone.schema_id, set()).discard((subject, version))
            if not versions:
                self.subjects.pop(subject, None)
            return
        entry = records.parse_schema_value(value)
        previous = self.subjects.setdefault(subject, {}).get(version)
        if previous is not None:
            self.by_id.get(previous.schema_id, set()).discard((subject, version))
        self.subjects[subject][version] = entry
        self.by_id.setdefault(entry.schema_id, set()).add((subject, version))
        self.max_id = max(self.max_id, entry.schema_id)
        if entry.schema_id not in self.schemas:
            self.schemas[entry.schema_id] = StoredSchema(entry.schema_id, entry.schema_type, entry.schema,
                                                         entry.references)
            self.new_ids.append(entry.schema_id)

    @staticmethod
    def _apply_setting(table: dict[str | None, str], subject: object, value: bytes | None, name: str) -> None:
        key = None if subject is None else str(subject)
        if value is None:
            table.pop(key, None)
        else:
            table[key] = str(json.loads(value)[name])

    # ---------------------------------------------------------------- reads

    def versions(self, subject: str, *, deleted: bool = False) -> list[SchemaValue]:
        """A subject's versions in order (soft-deleted ones only if ``deleted``)."""
        entries = self.subjects.get(subject, {})
        return [entries[v] for v in sorted(entries) if deleted or not entries[v].deleted]

    def subject_names(self, *, deleted: bool = False) -> list[str]:
        return sorted(s for s in self.subjects if self.versions(s, deleted=deleted))

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of live schemas whose references name ``subject`` at ``version``."""
        out = set()
        for versions in self.subjects.values():
            for entry in versions.values():
                if not entry.deleted and any(r.subject == subject and r.version == version for r in entry.references):
                    out.add(entry.schema_id)
        return sorted(out)

    def usages(self, schema_id: int, *, deleted: bool = False) -> list[SchemaValue]:
        """Every subject version registered with ``schema_id``, by subject and version."""
        entries = (self.subjects[subject][version] for subject, version in sorted(self.by_id.get(schema_id, ())))
        return [entry for entry in entries if deleted or not entry.deleted]


def _soft_deleted(entry: SchemaValue) -> SchemaValue:
    return SchemaValue(entry.subject, entry.version, entry.schema_id, entry.schema_type, entry.schema,
                       entry.references, deleted=True)


__all__ = ["RegistryState", "StoredSchema"]
