"""Hypothesis strategies for TubeMQ's protobuf messages, built from their descriptors: every required
field set, optional ones sometimes, repeated ones 0-3 times, sub-messages to a bounded depth."""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from hypothesis import strategies as st

from tidelog.protocol.tubemq.generated import broker_service_pb2, master_service_pb2, rpc_pb2

#: Every message class the three .proto files define (nested ones included).
MESSAGE_CLASSES: list[type[Message]] = sorted(
    (getattr(module, name) for module in (rpc_pb2, master_service_pb2, broker_service_pb2)
     for name in module.DESCRIPTOR.message_types_by_name),
    key=lambda cls: cls.DESCRIPTOR.full_name)

_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT64 = st.integers(-(2**63), 2**63 - 1)
_SCALARS = {
    FieldDescriptor.TYPE_INT32: _INT32, FieldDescriptor.TYPE_SINT32: _INT32, FieldDescriptor.TYPE_SFIXED32: _INT32,
    FieldDescriptor.TYPE_INT64: _INT64, FieldDescriptor.TYPE_SINT64: _INT64, FieldDescriptor.TYPE_SFIXED64: _INT64,
    FieldDescriptor.TYPE_UINT32: st.integers(0, 2**32 - 1), FieldDescriptor.TYPE_FIXED32: st.integers(0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: st.integers(0, 2**64 - 1), FieldDescriptor.TYPE_FIXED64: st.integers(0, 2**64 - 1),
    FieldDescriptor.TYPE_BOOL: st.booleans(),
    FieldDescriptor.TYPE_STRING: st.text(max_size=20),
    FieldDescriptor.TYPE_BYTES: st.binary(max_size=40),
}


def _value(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return message_of(field.message_type._concrete_class, depth + 1)
    if field.type == FieldDescriptor.TYPE_ENUM:
        return st.sampled_from([v.number for v in field.enum_type.values])
    return _SCALARS[field.type]


@st.composite
def _message(draw: st.DrawFn, cls: type[Message], depth: int) -> Message:
    message = cls()
    for field in cls.DESCRIPTOR.fields:
        if field.is_repeated:
            values = draw(st.lists(_value(field, depth), max_size=0 if depth > 2 else 3))
            container = getattr(message, field.name)
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                for v in values:
                    container.add().CopyFrom(v)
            else:
                container.extend(values)
            continue
        if not field.is_required and (depth > 2 or not draw(st.booleans())):
            continue
        value = draw(_value(field, depth))
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            getattr(message, field.name).CopyFrom(value)
        else:
            setattr(message, field.name, value)
    return message


def message_of(cls: type[Message], depth: int = 0) -> st.SearchStrategy[Message]:
    return _message(cls, depth)


def any_message() -> st.SearchStrategy[Message]:
    return st.sampled_from(MESSAGE_CLASSES).flatmap(message_of)


__all__ = ["MESSAGE_CLASSES", "any_message", "message_of"]
