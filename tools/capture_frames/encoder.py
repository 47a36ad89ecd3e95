"""Golden responses written by two independent encoders, kio and kafka-python (never by Tidelog's)."""

from __future__ import annotations

import datetime
import io
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

from tidelog.protocol import api_entry
from tools.capture_frames.frame_file import write_frames
from tools.capture_frames.response_case import NO_AUTHORIZED_OPERATIONS, RESPONSE_CASES

log = logging.getLogger("capture_frames")

RESPONSE_CORRELATION_ID = 7


def kio_encode(api_key: int, version: int, content: dict[str, Any]) -> bytes:
    """Response header + body written by kio's entity writers."""
    from kio.index import load_payload_module
    from kio.serial import entity_writer
    from kio.static.constants import EntityType

    module = load_payload_module(api_key, version, EntityType.response)
    (cls,) = [
        c for c in vars(module).values()
        if isinstance(c, type) and getattr(c, "__type__", None) is EntityType.response
        and c.__module__ == module.__name__
    ]
    body = _kio_entity(cls, content)
    header_cls = cls.__header_schema__
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header_cls(correlation_id=RESPONSE_CORRELATION_ID))
    entity_writer(cls)(buf, body)
    return buf.getvalue()


def _kio_entity(entity_type: type, content: dict[str, Any]):
    import dataclasses

    from kio.schema.errors import ErrorCode
    from kio.serial._introspect import EntityField, EntityTupleField, classify_field

    kwargs = {}
    for f in dataclasses.fields(entity_type):
        kafka_type = f.metadata.get("kafka_type")
        key = f.name if f.name in content else f"{f.name}_ms"  # kio drops _ms: throttle_time, log_append_time
        if key not in content:
            continue  # kio's default (a missing required field fails loudly in the constructor)
        value = content[key]
        kind = classify_field(f)
        if value is None:
            pass
        elif isinstance(kind, EntityTupleField):
            value = tuple(_kio_entity(kind.type_, item) for item in value)
        elif isinstance(kind, EntityField):
            value = _kio_entity(kind.type_, value)
        elif isinstance(value, list):
            value = tuple(value)
        elif kafka_type in ("timedelta_i32", "timedelta_i64"):
            value = datetime.timedelta(milliseconds=value)
        elif kafka_type == "datetime_i64":  # kio: log_append_time_ms -> log_append_time, -1 -> None
            value = None if value == -1 else datetime.datetime.fromtimestamp(value / 1000, datetime.UTC)
        elif kafka_type == "error_code":
            value = ErrorCode(value)
        kwargs[f.name] = value
    return entity_type(**kwargs)


def kafka_python_encode(api_key: int, version: int, content: dict[str, Any]) -> bytes:
    """Response header + body written by kafka-python's (new, spec-driven) protocol classes."""
    import kafka.protocol.consumer
    import kafka.protocol.metadata
    import kafka.protocol.producer

    name = f"{api_entry(api_key).name}Response"
    modules = (kafka.protocol.metadata, kafka.protocol.consumer, kafka.protocol.producer)
    cls = next(getattr(m, name) for m in modules if hasattr(m, name))[None]  # [None]: the unversioned class
    if version > cls.max_version:
        raise LookupError(f"kafka-python has {name} up to v{cls.max_version}")
    obj = cls(version=version, **_kafka_python_fields(cls._struct, content, version))
    obj.with_header(correlation_id=RESPONSE_CORRELATION_ID)
    return bytes(obj.encode(header=True))


def _kafka_python_fields(struct, content: dict[str, Any], version: int) -> dict[str, Any]:
    from kafka.protocol.schemas.fields.codecs import BitField

    kwargs = {}
    for f in struct.fields.values():  # not ._fields: a struct array keeps its item fields in .array_of
        if not f.for_version_q(version):
            continue
        key = f.name
        if key == "authorized_operations":  # renamed by kafka-python's MetadataResponse.json_patch
            key = next((k for k in content if k.endswith("_authorized_operations")), key)
        if key not in content:
            continue
        value = content[key]
        if value is None:
            pass
        elif f.is_struct_array():
            value = [f.data_class(version=version, **_kafka_python_fields(f, item, version)) for item in value]
        elif f.is_struct():
            value = f.data_class(version=version, **_kafka_python_fields(f, value, version))
        elif getattr(f, "_type", None) is BitField:
            value = None if value == NO_AUTHORIZED_OPERATIONS else {b for b in range(32) if value >> b & 1}
        kwargs[f.name] = value
    return kwargs


ENCODERS = {"kio": kio_encode, "kafka-python": kafka_python_encode}


def encode_responses(out: Path) -> None:
    for name, encoder in ENCODERS.items():
        frames: dict[tuple[int, int], list[bytes]] = defaultdict(list)
        skipped = []
        for api_key, versions, content in RESPONSE_CASES:
            for version in versions:
                try:
                    frames[(api_key, version)].append(encoder(api_key, version, content))
                except Exception as e:
                    skipped.append(f"{api_entry(api_key).name} v{version}: {type(e).__name__}: {e}")
        written = write_frames(out, name, "response", frames)
        log.info("%s: %d response frames written", name, written)
        for line in skipped:
            log.warning("%s could not encode %s", name, line)

