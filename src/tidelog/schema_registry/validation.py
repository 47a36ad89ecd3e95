"""Broker-side schema id validation (Confluent Server's ``confluent.{key,value}.schema.validation``).

A topic with ``confluent.value.schema.validation=true`` (or ``.key.``) takes only records whose value
(key) is in the schema registry's wire format, the magic byte 0 then a 4-byte big-endian schema id,
and whose id is registered, in a version not deleted, under the subject the topic's
``confluent.{key,value}.subject.name.strategy`` names:

* ``TopicNameStrategy`` (the default): ``<topic>-value`` / ``<topic>-key``;
* ``RecordNameStrategy``: the record name of the schema the id names (Avro: the full name of a named
  schema; Protobuf: the first message's full name; JSON Schema: its ``title``);
* ``TopicRecordNameStrategy``: ``<topic>-<record name>``.

A null value (a tombstone) and a null key pass, as in Confluent Server. The payload after the id is
not looked at. Every refused record is named in one :class:`~tidelog.errors.RecordValidationError`
(INVALID_RECORD with KIP-467's record errors): the produce handler answers it for that partition
and nothing of its batch is written; the request's other partitions are not affected.

Pure: reads the registry's state (:class:`~tidelog.schema_registry.state.RegistryState`), decodes
records, raises. Topics without validation cost one look at two booleans of their config.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any, Protocol

from tidelog.config import TopicConfig
from tidelog.config_def import RECORD_NAME_STRATEGY, TOPIC_NAME_STRATEGY
from tidelog.errors import KafkaError, RecordValidationError
from tidelog.records import RecordBatchView, RecordsError, legacy_to_batches
from tidelog.schema_registry.state import RegistryState, StoredSchema

#: the wire format: magic byte 0, then the schema id as a 4-byte big-endian int
MAGIC_BYTE = 0
HEADER_SIZE = 5


class HasState(Protocol):
    """The schema registry as validation sees it (:class:`~tidelog.schema_registry.service.SchemaRegistry`)."""

    state: RegistryState


def validates(config: TopicConfig) -> bool:
    """Whether a topic's records are checked at all (the only cost for topics without validation)."""
    return config.confluent_value_schema_validation or config.confluent_key_schema_validation


class SchemaIdValidation:
    """Checks produced records of the topics that ask for it; ``registry`` is None while the broker
    serves no schema registry (then such topics refuse every record that needs a check)."""

    def __init__(self, registry: HasState | None = None) -> None:
        self.registry = registry
        #: schema id -> its record name (None: it has none); ids name one schema for good
        self._record_names: dict[int, str | None] = {}

    def check(self, topic: str, config: TopicConfig, records: Any) -> None:
        """Raise :class:`RecordValidationError` naming every record of ``records`` (a Produce
        partition's bytes) that the topic's validation refuses; return if none, or if the topic
        validates nothing. Bytes that are not record batches are left to the log to refuse."""
        if not validates(config):
            return
        try:
            decoded = list(_records(records))
        except (RecordsError, KafkaError, ValueError):
            return  # malformed: the log refuses it with the right code
        errors: list[tuple[int, str]] = []
        for index, (key, value) in enumerate(decoded):
            reason = None
            if config.confluent_key_schema_validation and key is not None:
                reason = self._reason(topic, "key", config.confluent_key_subject_name_strategy, key)
            if reason is None and config.confluent_value_schema_validation and value is not None:
                reason = self._reason(topic, "value", config.confluent_value_subject_name_strategy, value)
            if reason is not None:
                errors.append((index, reason))
        if errors:
            raise RecordValidationError(errors, bad_timestamp=False)

    def _reason(self, topic: str, field: str, strategy: str, data: bytes) -> str | None:
        """Why ``data`` (the record's key or value) is refused, or None."""
        if len(data) < HEADER_SIZE or data[0] != MAGIC_BYTE:
            shown = f"starts with byte {data[0]}" if data else "is empty"
            if data and data[0] == MAGIC_BYTE:
                shown = f"has {len(data)} bytes"
            return (f"The record's {field} {shown}: it is not in the schema registry's wire format (the magic "
                    f"byte 0 and a 4-byte schema id), which topic {topic} requires "
                    f"(confluent.{field}.schema.validation=true)")
        schema_id = int.from_bytes(data[1:HEADER_SIZE], "big")
        if self.registry is None:
            return (f"Topic {topic} validates schema ids (confluent.{field}.schema.validation=true), but this "
                    "broker serves no schema registry (schema.registry.enable)")
        state = self.registry.state
        stored = state.schemas.get(schema_id)
        if stored is None or not state.usages(schema_id):
            return f"The record's {field} names schema id {schema_id}, which the schema registry does not have"
        subject = self._subject(topic, field, strategy, stored)
        if subject is None:
            return (f"The record's {field} names schema id {schema_id}, a {stored.schema_type} schema without a "
                    f"record name, which {strategy.rsplit('.', 1)[-1]} needs for the subject")
        if any(entry.subject == subject for entry in state.usages(schema_id)):
            return None
        return (f"The record's {field} names schema id {schema_id}, which is not registered under subject "
                f"'{subject}'")

    def _subject(self, topic: str, field: str, strategy: str, stored: StoredSchema) -> str | None:
        if strategy == TOPIC_NAME_STRATEGY:
            return f"{topic}-{field}"
        if stored.schema_id not in self._record_names:
            self._record_names[stored.schema_id] = record_name(stored.schema_type, stored.schema)
        name = self._record_names[stored.schema_id]
        if name is None:
            return None
        return name if strategy == RECORD_NAME_STRATEGY else f"{topic}-{name}"


def _records(records: Any):
    """(key, value) of every record in a Produce partition's bytes (v2 batches or legacy message sets)."""
    data = bytes(records) if not isinstance(records, (bytes, bytearray)) else records
    if len(data) > 16 and data[16] < 2:  # magic v0/v1 message set (Produce v0-v2)
        data = b"".join(legacy_to_batches(data, base_offset=0))
    mv = memoryview(data)
    pos = 0
    while pos < len(mv):
        view = RecordBatchView(mv[pos:])
        for record in view.records():
            yield record.key, record.value
        pos += view.size_in_bytes


_PROTO_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.M)
_PROTO_MESSAGE = re.compile(r"^\s*message\s+(\w+)", re.M)
_PROTO_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def record_name(schema_type: str, text: str) -> str | None:
    """The name RecordNameStrategy gives a schema, as Confluent's serializers do; None if it has none."""
    try:
        if schema_type == "AVRO":
            obj = json.loads(text)
            if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
                return None
            name, namespace = obj["name"], obj.get("namespace")
            return name if "." in name or not namespace else f"{namespace}.{name}"
        if schema_type == "JSON":
            obj = json.loads(text)
            title = obj.get("title") if isinstance(obj, dict) else None
            return title if isinstance(title, str) and title else None
        return _proto_record_name(text)
    except ValueError:
        return None


def _proto_record_name(text: str) -> str | None:
    stripped = text.strip()
    if stripped and " " not in stripped and "\n" not in stripped:  # a base64 FileDescriptorProto
        from google.protobuf import descriptor_pb2
        from google.protobuf.message import DecodeError

        descriptor = descriptor_pb2.FileDescriptorProto()
        try:
            descriptor.ParseFromString(base64.standard_b64decode(stripped))
        except (DecodeError, ValueError):
            return None
        if not descriptor.message_type:
            return None
        first = descriptor.message_type[0].name
        return f"{descriptor.package}.{first}" if descriptor.package else first
    source = _PROTO_COMMENTS.sub(" ", text)
    message = _PROTO_MESSAGE.search(source)
    if message is None:
        return None
    package = _PROTO_PACKAGE.search(source)
    return f"{package.group(1)}.{message.group(1)}" if package else message.group(1)


__all__ = ["HEADER_SIZE", "MAGIC_BYTE", "SchemaIdValidation", "record_name", "validates"]
