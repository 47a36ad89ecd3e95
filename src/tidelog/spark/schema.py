"""The fixed schema of the source, its Arrow twin, and the input columns the sink accepts.

Source rows (Spark's Kafka source schema; every field nullable)::

    key            binary     null when the record has no key
    value          binary
    topic          string
    partition      int
    offset         bigint
    timestamp      timestamp  from the record's epoch-ms timestamp
    timestampType  int        0 = CreateTime, 1 = LogAppendTime, -1 = none
    headers        array<struct<key:string,value:binary>>   only with includeHeaders=true; null when none

Sink input columns: ``value`` (string or binary) is required; ``key`` (string or binary), ``topic``
(string; the ``topic`` option overrides it), ``partition`` (int), ``headers`` (as above) and
``timestamp`` (timestamp, or double epoch seconds) are optional; other columns are ignored. Immutable.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))

_BASE_FIELDS = [
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
]

ARROW_HEADERS_TYPE = pa.list_(pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())])))
ARROW_TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
_ARROW_BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", ARROW_TIMESTAMP_TYPE),
    pa.field("timestampType", pa.int32()),
]


def source_schema(include_headers: bool) -> StructType:
    fields = list(_BASE_FIELDS)
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def arrow_source_schema(include_headers: bool) -> pa.Schema:
    """What ``read()`` yields; equal to PySpark's ``to_arrow_schema(source_schema(...), timezone="UTC")``."""
    fields = list(_ARROW_BASE_FIELDS)
    if include_headers:
        fields.append(pa.field("headers", ARROW_HEADERS_TYPE))
    return pa.schema(fields)


def check_user_schema(schema: StructType, include_headers: bool) -> None:
    """Spark hands ``reader()`` the user's ``.schema(...)`` instead of ours: refuse anything else."""
    if schema != source_schema(include_headers):
        raise ValueError("Kafka source has a fixed schema and cannot be set with a custom one "
                         f"(the tidelog source's schema is {source_schema(include_headers).simpleString()})")


def check_sink_schema(schema: StructType, topic_option: str | None) -> None:
    """Spark's ``KafkaWriter.validateQuery``: required columns present, every known column well typed."""
    columns = {f.name: f.dataType for f in schema.fields}
    if topic_option is None and "topic" not in columns:
        raise ValueError("topic option required when no 'topic' attribute is present. "
                         "Use the topic option for setting a topic.")
    if "value" not in columns:
        raise ValueError("Required attribute 'value' not found")
    wanted: list[tuple[str, tuple[DataType, ...]]] = [
        ("topic", (StringType(),)),
        ("key", (StringType(), BinaryType())),
        ("value", (StringType(), BinaryType())),
        ("headers", (HEADERS_TYPE,)),
        ("partition", (IntegerType(),)),
        ("timestamp", (DoubleType(), TimestampType())),
    ]
    for name, types in wanted:
        if name == "topic" and topic_option is not None:
            continue
        actual = columns.get(name)
        if actual is not None and not any(_same_type(actual, t) for t in types):
            expected = " or ".join(t.simpleString() for t in types)
            raise ValueError(f"{name} attribute unsupported type {actual.simpleString()}. "
                             f"{name} must be a(n) {expected}")


def _same_type(actual: DataType, expected: DataType) -> bool:
    """Type equality that ignores nullability, as Spark's ``DataTypeUtils.sameType``."""
    if isinstance(actual, ArrayType) and isinstance(expected, ArrayType):
        return _same_type(actual.elementType, expected.elementType)
    if isinstance(actual, StructType) and isinstance(expected, StructType):
        return len(actual.fields) == len(expected.fields) and all(
            a.name == e.name and _same_type(a.dataType, e.dataType) for a, e in zip(actual.fields, expected.fields))
    return type(actual) is type(expected)


__all__ = ["ARROW_HEADERS_TYPE", "HEADERS_TYPE", "arrow_source_schema", "check_sink_schema", "check_user_schema",
           "source_schema"]
