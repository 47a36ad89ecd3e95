"""The schema registry's operations (Confluent's REST API, one method per call; the HTTP layer in
:mod:`tidelog.web.schema_registry` decodes, calls one method, encodes).

Reads answer from :class:`~tidelog.schema_registry.state.RegistryState`. A change is written to
``_schemas`` (partition 0) through the broker's own append path as an acks=all write, and answered
only once committed; the state then catches up by reading the log from where it stood, so what is
answered is what the log holds. Changes are made one at a time (ids and versions are allocated in
order). At start the broker replays the whole topic (:meth:`SchemaRegistry.load`).

In a cluster (:mod:`tidelog.schema_registry.leader`) only the leader of ``_schemas`` partition 0 runs
the changes: before its first change as leader (of a leader epoch) it appends a NOOP record and waits
until it is committed and read, so that every id handed out before is known (Confluent's leader does
the same); the other brokers follow the topic (:meth:`SchemaRegistry.apply_batches`) and answer
:class:`~tidelog.schema_registry.errors.NotLeader` to a change, which the HTTP layer forwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Protocol

from tidelog.errors import KafkaError
from tidelog.records import RecordBatchBuilder
from tidelog.schema_registry import compatibility, errors, records
from tidelog.schema_registry.records import Reference, SchemaValue
from tidelog.schema_registry.schemas import ParsedSchema, Referenced, check_type, parse
from tidelog.schema_registry.state import RegistryState, StoredSchema

#: What an append answers while ``_schemas`` has no leader yet (just created); retried every _RETRY_MS.
_NOT_LED_YET = frozenset({"NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION", "LEADER_NOT_AVAILABLE"})
_RETRY_MS = 50

log = logging.getLogger(__name__)

MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
MAX_VERSION = 2**31 - 1


class SchemasLog(Protocol):
    """Partition 0 of ``_schemas`` (:class:`tidelog.coordinator.runtime.ReplicaWriter` is one)."""

    def append(self, partition: int, batch: bytes) -> int: ...
    def batches(self, partition: int, start_offset: int = -1) -> Any: ...
    async def wait_committed(self, partition: int, offset: int, timeout_ms: int) -> Any: ...
    def is_committed(self, partition: int, offset: int) -> bool: ...


class Leadership(Protocol):
    """Who writes ``_schemas`` in a cluster (:class:`tidelog.schema_registry.leader.RegistryCluster`)."""

    def leads(self) -> bool: ...
    def leader_epoch(self) -> int: ...


class SchemaRegistry:
    def __init__(self, log_: SchemasLog, now_ms: Callable[[], int], *, timeout_ms: int = 30_000) -> None:
        self.log = log_
        self.now_ms = now_ms
        self.timeout_ms = timeout_ms
        self.state = RegistryState()
        self._lock = asyncio.Lock()
        #: identity -> schema id (schemas parsed once, on load or when written)
        self._ids: dict[tuple, int] = {}
        self._parsed: dict[int, ParsedSchema] = {}
        #: the whole of _schemas has been read once (nothing is answered before: ids would be reused)
        self.loaded = False
        #: a cluster's leadership of _schemas (None: a single node, which always leads)
        self.cluster: Leadership | None = None
        #: the leader epoch of _schemas-0 whose NOOP this broker has read (caught up as that leader)
        self._caught_up_epoch: int | None = None

    # ------------------------------------------------------------------ the log

    def load(self) -> int:
        """Apply every committed record of ``_schemas`` in the local log (this broker leads it, or a
        single node) not applied yet; returns how many were read."""
        count = 0
        try:
            count = self.apply_batches(self.log.batches(0, self.state.next_offset), committed=True)
        except KafkaError as e:  # no such topic yet: nothing registered (in a cluster: led elsewhere)
            log.debug("_schemas not readable (%s): nothing to load", e)
        self.loaded = True
        return count

    def apply_batches(self, batches: Iterable[Any], committed: bool = False) -> int:
        """Apply the records of ``batches`` (from the state's next offset on; with ``committed``, only
        up to the high watermark); returns how many were applied."""
        count = 0
        for batch in batches:
            if batch.next_offset <= self.state.next_offset:
                continue
            if committed and not self.log.is_committed(0, batch.next_offset):
                break
            if not batch.is_control_batch:
                for record in batch.records():
                    if record.offset >= self.state.next_offset:
                        self.state.apply(record.key, record.value)
                        count += 1
            self.state.next_offset = batch.next_offset
        new_ids, self.state.new_ids = sorted(self.state.new_ids), []
        for schema_id in new_ids:  # in id order: what a schema references was registered before it
            self._index(self.state.schemas[schema_id])
        return count

    def reset(self) -> None:
        """Forget the state (the log it was read from is gone: read it again from the start)."""
        self.state = RegistryState()
        self._ids.clear()
        self._parsed.clear()
        self._caught_up_epoch = None

    @contextlib.asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """One change at a time, made by the leader of ``_schemas`` once it has read the whole log
        (raises NotLeader on another broker of a cluster)."""
        async with self._lock:
            cluster = self.cluster
            if cluster is not None:
                if not cluster.leads():
                    raise errors.NotLeader()
                epoch = cluster.leader_epoch()
                if epoch != self._caught_up_epoch:  # a new leader: read up to a record of its own
                    await self._write([(records.noop_key(), None)])
                    self._caught_up_epoch = epoch
            yield

    def _index(self, stored: StoredSchema) -> None:
        try:
            parsed = parse(stored.schema_type, stored.schema, self._reference_texts(stored.references))
            identity: tuple = (stored.schema_type, parsed.canonical, stored.references)
            self._parsed[stored.schema_id] = parsed
        except errors.RegistryError:
            identity = (stored.schema_type, stored.schema, stored.references)
        stored.identity = identity
        self._ids.setdefault(identity, stored.schema_id)

    async def _write(self, pairs: list[tuple[bytes, bytes | None]]) -> None:
        """Append ``pairs`` as one batch, wait until committed, then catch up the state."""
        builder = RecordBatchBuilder()
        now = self.now_ms()
        for key, value in pairs:
            builder.append(now, key, value)
        batch = builder.build()
        waited_ms = 0
        while True:
            try:
                base = self.log.append(0, batch)
                error = await self.log.wait_committed(0, base + len(pairs), self.timeout_ms)
                break
            except KafkaError as e:
                # _schemas created by this very write: its leader is decided by the controller a moment later
                if e.code.name == "NOT_LEADER_OR_FOLLOWER" and self.cluster is not None and not self.cluster.leads():
                    raise errors.NotLeader() from None
                if e.code.name not in _NOT_LED_YET or waited_ms >= self.timeout_ms:
                    raise errors.store_error(f"{e.code.name}: {e.message}") from None
            await asyncio.sleep(_RETRY_MS / 1000)
            waited_ms += _RETRY_MS
        if getattr(error, "value", 0) != 0:
            raise errors.operation_timeout(f"the write to _schemas was not committed: {error.name}")
        self.load()

    def check_ready(self) -> None:
        """Raises 503 until :meth:`load` has read the topic at start."""
        if not self.loaded:
            raise errors.not_ready()

    # ------------------------------------------------------------------ settings

    def level(self, subject: str | None) -> str:
        configs = self.state.configs
        if subject is not None and subject in configs:
            return configs[subject]
        return configs.get(None, compatibility.DEFAULT_LEVEL)

    def mode(self, subject: str | None) -> str:
        modes = self.state.modes
        if subject is not None and subject in modes:
            return modes[subject]
        return modes.get(None, "READWRITE")

    def get_config(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        if subject is not None and subject not in self.state.configs and not default_to_global:
            raise errors.subject_config_not_found(subject)
        return {"compatibilityLevel": self.level(subject)}

    async def set_config(self, subject: str | None, body: dict[str, Any]) -> dict[str, Any]:
        level = compatibility.parse_level(body.get("compatibility", body.get("compatibilityLevel")))
        if level is None:
            raise errors.invalid_compatibility_level(body.get("compatibility"))
        async with self._writing():
            await self._write([(records.config_key(subject), records.config_value(level))])
        return {"compatibility": level}

    async def delete_config(self, subject: str | None) -> dict[str, Any]:
        async with self._writing():
            if subject is not None and subject not in self.state.configs:
                raise errors.subject_config_not_found(subject)
            previous = self.level(subject)
            await self._write([(records.config_key(subject), None)])
        return {"compatibilityLevel": previous}

    def get_mode(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        if subject is not None and subject not in self.state.modes and not default_to_global:
            raise errors.subject_mode_not_found(subject)
        return {"mode": self.mode(subject)}

    async def set_mode(self, subject: str | None, body: dict[str, Any], force: bool = False) -> dict[str, Any]:
        mode = body.get("mode")
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise errors.invalid_mode(mode)
        mode = mode.upper()
        async with self._writing():
            if mode == "IMPORT" and not force:
                names = [subject] if subject is not None else list(self.state.subjects)
                if any(self.state.versions(s, deleted=True) for s in names if s is not None):
                    raise errors.operation_not_permitted(
                        "Cannot import since found existing subjects" if subject is None
                        else f"Cannot import since found existing subject '{subject}'")
            await self._write([(records.mode_key(subject), records.mode_value(mode))])
        return {"mode": mode}

    async def delete_mode(self, subject: str) -> dict[str, Any]:
        async with self._writing():
            if subject not in self.state.modes:
                raise errors.subject_mode_not_found(subject)
            previous = self.state.modes[subject]
            await self._write([(records.mode_key(subject), None)])
        return {"mode": previous}

    # ------------------------------------------------------------------ schemas by id

    def schema_types(self) -> list[str]:
        return ["JSON", "PROTOBUF", "AVRO"]

    def schema_by_id(self, schema_id: int) -> dict[str, Any]:
        stored = self.state.schemas.get(schema_id)
        if stored is None or not self.state.usages(schema_id, deleted=True):
            raise errors.schema_not_found(schema_id)
        return _schema_body(stored.schema_type, stored.schema, stored.references)

    def subjects_of_id(self, schema_id: int, deleted: bool = False) -> list[str]:
        self.schema_by_id(schema_id)
        return sorted({e.subject for e in self.state.usages(schema_id, deleted=deleted)})

    def versions_of_id(self, schema_id: int, deleted: bool = False) -> list[dict[str, Any]]:
        self.schema_by_id(schema_id)
        return [{"subject": e.subject, "version": e.version} for e in self.state.usages(schema_id, deleted=deleted)]

    # ------------------------------------------------------------------ subjects

    def subjects(self, deleted: bool = False, prefix: str = "") -> list[str]:
        return [s for s in self.state.subject_names(deleted=deleted) if s.startswith(prefix)]

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        entries = self.state.versions(subject, deleted=deleted)
        if not entries:
            raise errors.subject_not_found(subject)
        return [e.version for e in entries]

    def version(self, subject: str, version: str, deleted: bool = False) -> dict[str, Any]:
        entry = self._entry(subject, version, deleted=deleted)
        return _version_body(entry)

    def referenced_by(self, subject: str, version: str) -> list[int]:
        entry = self._entry(subject, version)
        return self.state.referenced_by(subject, entry.version)

    def _entry(self, subject: str, version: str, deleted: bool = False) -> SchemaValue:
        number = parse_version(version)
        entries = self.state.versions(subject, deleted=True)
        if not entries or not (deleted or any(not e.deleted for e in entries)):
            raise errors.subject_not_found(subject)  # none, or only soft-deleted ones (as Confluent answers)
        if number == -1:
            live = [e for e in entries if deleted or not e.deleted]
            if not live:
                raise errors.version_not_found(version)
            return live[-1]
        entry = next((e for e in entries if e.version == number), None)
        if entry is None or (entry.deleted and not deleted):
            raise errors.version_not_found(number)
        return entry

    # ------------------------------------------------------------------ register, look up, check

    def _parse_request(self, body: dict[str, Any]) -> tuple[ParsedSchema, tuple[Reference, ...]]:
        schema_type = check_type(body.get("schemaType"))
        text = body.get("schema")
        if not isinstance(text, str):
            raise errors.unprocessable("The request has no schema (a string in \"schema\")")
        refs = _references(body.get("references"))
        for ref in refs:
            if not any(not e.deleted and e.version == ref.version for e in self.state.versions(ref.subject)):
                raise errors.invalid_schema(f"Invalid schema {text} with refs {[r.to_json() for r in refs]} of type "
                                            f"{schema_type}, details: reference {ref.name!r} names subject "
                                            f"'{ref.subject}' version {ref.version}, which does not exist")
        return parse(schema_type, text, self._reference_texts(refs), validate=True), refs

    def _reference_texts(self, refs: tuple[Reference, ...], seen: frozenset = frozenset()) -> list[Referenced]:
        """Every schema ``refs`` reach (name, subject, version, type, text), dependencies first."""
        out: list[Referenced] = []
        for ref in refs:
            entry = self.state.subjects.get(ref.subject, {}).get(ref.version)
            if entry is None or (ref.subject, ref.version) in seen:
                continue
            out.extend(self._reference_texts(entry.references, seen | {(ref.subject, ref.version)}))
            out.append(Referenced(ref.name, ref.subject, ref.version, entry.schema_type, entry.schema))
        return out

    def _find(self, subject: str, parsed: ParsedSchema, refs: tuple[Reference, ...],
              deleted: bool = False) -> SchemaValue | None:
        schema_id = self._ids.get((parsed.schema_type, parsed.canonical, refs))
        if schema_id is None:
            return None
        matches = [e for e in self.state.versions(subject, deleted=deleted) if e.schema_id == schema_id]
        return matches[-1] if matches else None

    def lookup(self, subject: str, body: dict[str, Any], normalize: bool = False,
               deleted: bool = False) -> dict[str, Any]:
        if not self.state.versions(subject, deleted=deleted):
            raise errors.subject_not_found(subject)
        parsed, refs = self._parse_request(body)
        entry = self._find(subject, parsed, refs, deleted=deleted)
        if entry is None:
            raise errors.schema_not_found()
        return _version_body(entry)

    def registered(self, subject: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """What registering ``body`` under ``subject`` answers with no change (it is registered there
        already, in READWRITE mode), else None: a broker that does not lead answers it itself instead of
        forwarding it, as Confluent's followers do."""
        if self.mode(subject) != "READWRITE" or body.get("id") not in (None, -1, 0) or body.get(
                "version") not in (None, -1, 0):
            return None
        try:
            parsed, refs = self._parse_request(body)
        except errors.RegistryError:
            return None  # the leader's answer, forwarded
        existing = self._find(subject, parsed, refs)
        return None if existing is None else {"id": existing.schema_id}

    async def register(self, subject: str, body: dict[str, Any], normalize: bool = False) -> dict[str, Any]:
        parsed, refs = self._parse_request(body)
        async with self._writing():
            mode = self.mode(subject)
            if mode in ("READONLY", "READONLY_OVERRIDE"):
                raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")
            wanted_id, wanted_version = body.get("id"), body.get("version")
            if mode != "IMPORT" and (wanted_id not in (None, -1, 0) or wanted_version not in (None, -1, 0)):
                raise errors.operation_not_permitted(f"Subject {subject} is not in import mode")
            existing = self._find(subject, parsed, refs)
            if existing is not None and mode != "IMPORT":
                return {"id": existing.schema_id}
            live = self.state.versions(subject)
            if mode != "IMPORT":
                previous = [self._parsed_of(e) for e in live]
                problems = compatibility.check(self.level(subject), parsed, previous)
                if problems:
                    raise errors.incompatible(
                        f"Schema being registered is incompatible with an earlier schema for subject \"{subject}\", "
                        f"details: [{', '.join(problems)}]")
            identity = (parsed.schema_type, parsed.canonical, refs)
            schema_id = self._ids.get(identity)
            if mode == "IMPORT" and isinstance(wanted_id, int) and wanted_id > 0:
                if (schema_id is not None and schema_id != wanted_id) or (
                        schema_id is None and wanted_id in self.state.schemas):
                    raise errors.operation_not_permitted(
                        f"Overwrite new schema with id {wanted_id} is not permitted.")
                schema_id = wanted_id
            elif schema_id is None:
                schema_id = self.state.max_id + 1
            every = self.state.versions(subject, deleted=True)
            version = (wanted_version if mode == "IMPORT" and isinstance(wanted_version, int) and wanted_version > 0
                       else (every[-1].version + 1 if every else 1))
            text = parsed.normalized() if normalize else parsed.text
            value = SchemaValue(subject, version, schema_id, parsed.schema_type, text, refs)
            await self._write([(records.schema_key(subject, version), records.schema_value(value))])
        return {"id": schema_id}

    def _parsed_of(self, entry: SchemaValue) -> ParsedSchema:
        parsed = self._parsed.get(entry.schema_id)
        if parsed is None:
            parsed = parse(entry.schema_type, entry.schema, self._reference_texts(entry.references))
        return parsed

    def check_compatibility(self, subject: str, version: str | None, body: dict[str, Any],
                            verbose: bool = False) -> dict[str, Any]:
        parsed, _refs = self._parse_request(body)
        level = self.level(subject)
        live = self.state.versions(subject)
        if version is None:
            against = live
        else:
            if not self.state.versions(subject, deleted=True):
                raise errors.subject_not_found(subject)
            entry = self._entry(subject, version)
            against = [entry]
            if parse_version(version) == -1 and level.endswith("_TRANSITIVE"):
                against = live
            else:
                level = level.removesuffix("_TRANSITIVE")  # exactly the one version asked for
        problems = compatibility.check(level, parsed, [self._parsed_of(e) for e in against])
        out: dict[str, Any] = {"is_compatible": not problems}
        if verbose:
            out["messages"] = problems
        return out

    # ------------------------------------------------------------------ deletes

    async def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        async with self._writing():
            self._writable(subject)
            every = self.state.versions(subject, deleted=True)
            live = [e for e in every if not e.deleted]
            if not every:
                raise errors.subject_not_found(subject)
            self._not_referenced(subject, every)
            if permanent:
                if live:
                    raise errors.subject_not_soft_deleted(subject)
                pairs: list[tuple[bytes, bytes | None]] = [(records.schema_key(subject, e.version), None) for e in every]
                if subject in self.state.configs:
                    pairs.append((records.config_key(subject), None))
                if subject in self.state.modes:
                    pairs.append((records.mode_key(subject), None))
                await self._write(pairs)
                return [e.version for e in every]
            if not live:
                raise errors.subject_soft_deleted(subject)
            pairs = [(records.schema_key(subject, e.version), records.schema_value(_deleted(e))) for e in live]
            pairs.append((records.delete_subject_key(subject),
                          records.delete_subject_value(subject, live[-1].version)))
            await self._write(pairs)
            return [e.version for e in live]

    async def delete_version(self, subject: str, version: str, permanent: bool = False) -> int:
        number = parse_version(version)
        async with self._writing():
            self._writable(subject)
            every = self.state.versions(subject, deleted=True)
            if not every:
                raise errors.subject_not_found(subject)
            if number == -1:
                live = [e for e in every if not e.deleted]
                entry = live[-1] if live and not permanent else (every[-1] if permanent else None)
            else:
                entry = next((e for e in every if e.version == number), None)
            if entry is None:
                raise errors.version_not_found(version if number == -1 else number)
            self._not_referenced(subject, [entry])
            if permanent:
                if not entry.deleted:
                    raise errors.version_not_soft_deleted(subject, entry.version)
                await self._write([(records.schema_key(subject, entry.version), None)])
            else:
                if entry.deleted:
                    raise errors.version_soft_deleted(subject, entry.version)
                await self._write([(records.schema_key(subject, entry.version), records.schema_value(_deleted(entry)))])
            return entry.version

    def _writable(self, subject: str) -> None:
        if self.mode(subject) in ("READONLY", "READONLY_OVERRIDE"):
            raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")

    def _not_referenced(self, subject: str, entries: list[SchemaValue]) -> None:
        for entry in entries:
            users = self.state.referenced_by(subject, entry.version)
            if users:
                raise errors.reference_exists(f"One or more references exist to the schema "
                                              f"{{subject={subject},version={entry.version}}}: schema ids {users}")


def parse_version(version: str | int) -> int:
    """A version id: 1 .. 2^31-1, or "latest" / -1 (returned as -1). Raises 42202."""
    text = str(version).strip()
    if text.lower() == "latest":
        return -1
    try:
        number = int(text)
    except ValueError:
        raise errors.invalid_version(text) from None
    if number == -1 or 1 <= number <= MAX_VERSION:
        return number
    raise errors.invalid_version(text)


def _references(raw: object) -> tuple[Reference, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise errors.unprocessable("references must be a list of {name, subject, version}")
    out = []
    for item in raw:
        try:
            out.append(Reference(str(item["name"]), str(item["subject"]), int(item["version"])))
        except (KeyError, TypeError, ValueError):
            raise errors.unprocessable(f"Invalid reference {item!r}: it needs name, subject and version") from None
    return tuple(out)


def _schema_body(schema_type: str, schema: str, refs: tuple[Reference, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if schema_type != "AVRO":
        out["schemaType"] = schema_type
    if refs:
        out["references"] = [r.to_json() for r in refs]
    out["schema"] = schema
    return out


def _version_body(entry: SchemaValue) -> dict[str, Any]:
    return {"subject": entry.subject, "version": entry.version, "id": entry.schema_id,
            **_schema_body(entry.schema_type, entry.schema, entry.references)}


def _deleted(entry: SchemaValue) -> SchemaValue:
    return SchemaValue(entry.subject, entry.version, entry.schema_id, entry.schema_type, entry.schema,
                       entry.references, deleted=True)


__all__ = ["MODES", "SchemaRegistry", "SchemasLog", "parse_version"]
