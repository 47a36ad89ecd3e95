"""TubeMQ's RPC envelope: services, methods, and the three delimited protobufs inside a frame.

A frame's payload (:mod:`tidelog.protocol.tubemq.frame`) is three protobuf messages, each prefixed
with its length as an unsigned varint (Java's ``writeDelimitedTo``)::

    request            RpcConnHeader{flag=0} | RequestHeader{serviceType, protocolVer} | RequestBody{method, timeout, request}
    success response   RpcConnHeader{flag=1} | ResponseHeader{status=SUCCESS, protocolVer=3} | RspResponseBody{method, data}
    error response     RpcConnHeader{flag=1} | ResponseHeader{status=ERROR|FATAL, protocolVer=3} | RspExceptionBody{exceptionName, stackTrace}

``RequestBody.request`` and ``RspResponseBody.data`` hold the inner message of the method
(:data:`METHODS`). RPC-level failures are exception bodies whose ``exceptionName`` is a Java class
name: TubeMQ's own ones carry the package prefix of the caller's protocol version (3:
``org.apache.inlong.tubemq.``, 2: ``com.apache.tubemq.``, 1: ``com.tencent.tubemq.``), as its
server writes them.

Decoding never trusts the bytes: every length is checked against what is left, proto2 required
fields must be present, and string fields must be UTF-8; anything else is a
:class:`MalformedRequestError` naming what was wrong. Pure functions over immutable tables.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from tidelog.protocol.exceptions import ProtocolError
from tidelog.protocol.tubemq.frame import Frame, encode_frame
from tidelog.protocol.tubemq.generated import broker_service_pb2 as broker_pb
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.protocol.tubemq.generated import rpc_pb2
from tidelog.varint import VarintError, read_uvarint, uvarint_bytes

FLAG_REQUEST = 0
FLAG_RESPONSE = 1
#: The protocol version TubeMQ's current servers answer with.
PROTOCOL_VERSION = 3

Status = rpc_pb2.ResponseHeader.Status


class Service(IntEnum):
    MASTER = 1
    BROKER_READ = 2  # consumers
    BROKER_WRITE = 3  # producers
    BROKER_ADMIN = 4
    MASTER_ADMIN = 5


class Method(IntEnum):
    """Method ids (TubeMQ's ``RpcConstants``), named after its Java methods."""

    PRODUCER_REGISTER_P2M = 1
    PRODUCER_HEARTBEAT_P2M = 2
    PRODUCER_CLOSE_CLIENT_P2M = 3
    CONSUMER_REGISTER_C2M = 4
    CONSUMER_HEARTBEAT_C2M = 5
    CONSUMER_CLOSE_CLIENT_C2M = 6
    BROKER_REGISTER_B2M = 7
    BROKER_HEARTBEAT_B2M = 8
    BROKER_CLOSE_CLIENT_B2M = 9
    SEND_MESSAGE_P2B = 13
    CONSUMER_REGISTER_C2B = 15
    CONSUMER_HEARTBEAT_C2B = 16
    GET_MESSAGES_C2B = 17
    CONSUMER_COMMIT_C2B = 18
    CONSUMER_REGISTER_C2M_V2 = 20
    CONSUMER_HEARTBEAT_C2M_V2 = 21
    CONSUMER_GET_PART_META_C2M = 22


@dataclass(frozen=True, slots=True)
class MethodSpec:
    method: Method
    java_name: str
    services: frozenset[Service]
    request: type[Message]
    response: type[Message]


def _spec(method: Method, java_name: str, services: tuple[Service, ...], request: type[Message],
          response: type[Message]) -> MethodSpec:
    return MethodSpec(method, java_name, frozenset(services), request, response)


_M, _R, _W = (Service.MASTER,), (Service.BROKER_READ,), (Service.BROKER_WRITE, Service.BROKER_READ)

#: Every method TubeMQ's codec knows, the services it is valid under, and its messages.
METHODS: dict[int, MethodSpec] = {s.method: s for s in (
    _spec(Method.PRODUCER_REGISTER_P2M, "producerRegisterP2M", _M, master_pb.RegisterRequestP2M,
          master_pb.RegisterResponseM2P),
    _spec(Method.PRODUCER_HEARTBEAT_P2M, "producerHeartbeatP2M", _M, master_pb.HeartRequestP2M,
          master_pb.HeartResponseM2P),
    _spec(Method.PRODUCER_CLOSE_CLIENT_P2M, "producerCloseClientP2M", _M, master_pb.CloseRequestP2M,
          master_pb.CloseResponseM2P),
    _spec(Method.CONSUMER_REGISTER_C2M, "consumerRegisterC2M", _M, master_pb.RegisterRequestC2M,
          master_pb.RegisterResponseM2C),
    _spec(Method.CONSUMER_HEARTBEAT_C2M, "consumerHeartbeatC2M", _M, master_pb.HeartRequestC2M,
          master_pb.HeartResponseM2C),
    _spec(Method.CONSUMER_CLOSE_CLIENT_C2M, "consumerCloseClientC2M", _M, master_pb.CloseRequestC2M,
          master_pb.CloseResponseM2C),
    _spec(Method.BROKER_REGISTER_B2M, "brokerRegisterB2M", _M, master_pb.RegisterRequestB2M,
          master_pb.RegisterResponseM2B),
    _spec(Method.BROKER_HEARTBEAT_B2M, "brokerHeartbeatB2M", _M, master_pb.HeartRequestB2M,
          master_pb.HeartResponseM2B),
    _spec(Method.BROKER_CLOSE_CLIENT_B2M, "brokerCloseClientB2M", _M, master_pb.CloseRequestB2M,
          master_pb.CloseResponseM2B),
    _spec(Method.SEND_MESSAGE_P2B, "sendMessageP2B", _W, broker_pb.SendMessageRequestP2B,
          broker_pb.SendMessageResponseB2P),
    _spec(Method.CONSUMER_REGISTER_C2B, "consumerRegisterC2B", _R, broker_pb.RegisterRequestC2B,
          broker_pb.RegisterResponseB2C),
    _spec(Method.CONSUMER_HEARTBEAT_C2B, "consumerHeartbeatC2B", _R, broker_pb.HeartBeatRequestC2B,
          broker_pb.HeartBeatResponseB2C),
    _spec(Method.GET_MESSAGES_C2B, "getMessagesC2B", _R, broker_pb.GetMessageRequestC2B,
          broker_pb.GetMessageResponseB2C),
    _spec(Method.CONSUMER_COMMIT_C2B, "consumerCommitC2B", _R, broker_pb.CommitOffsetRequestC2B,
          broker_pb.CommitOffsetResponseB2C),
    _spec(Method.CONSUMER_REGISTER_C2M_V2, "consumerRegisterC2MV2", _M, master_pb.RegisterRequestC2MV2,
          master_pb.RegisterResponseM2CV2),
    _spec(Method.CONSUMER_HEARTBEAT_C2M_V2, "consumerHeartbeatC2MV2", _M, master_pb.HeartRequestC2MV2,
          master_pb.HeartResponseM2CV2),
    _spec(Method.CONSUMER_GET_PART_META_C2M, "consumerGetPartMetaInfoC2M", _M, master_pb.GetPartMetaRequestC2M,
          master_pb.GetPartMetaResponseM2C),
)}


class MalformedRequestError(ProtocolError):
    """A frame whose envelope or inner message does not decode; answered with an exception body."""


# ------------------------------------------------------------------------------- exception names

#: Java class names (TubeMQ's own, as protocol version 3 writes them) the server sends.
STANDBY_EXCEPTION = "org.apache.inlong.tubemq.corerpc.exception.StandbyException"
SERVER_NOT_READY_EXCEPTION = "org.apache.inlong.tubemq.corerpc.exception.ServerNotReadyException"
SERVICE_STOPPING_EXCEPTION = "org.apache.inlong.tubemq.corerpc.exception.ServiceStoppingException"
UNKNOWN_PROTOCOL_EXCEPTION = "org.apache.inlong.tubemq.corerpc.exception.UnknownProtocolException"
#: What TubeMQ answers for a method it does not serve, and for request bytes that do not parse.
GENERIC_EXCEPTION = "java.lang.Exception"
IO_EXCEPTION = "java.io.IOException"

_PREFIX = "org.apache.inlong.tubemq."
_OLD_PREFIXES = {1: "com.tencent.tubemq.", 2: "com.apache.tubemq."}


def exception_name(name: str, protocol_version: int) -> str:
    """TubeMQ's class name as a client of ``protocol_version`` knows it (MixUtils.replaceClassNamePrefix)."""
    old = _OLD_PREFIXES.get(protocol_version)
    return name.replace(_PREFIX, old, 1) if old and name.startswith(_PREFIX) else name


# ------------------------------------------------------------------------------------- decoding


def _delimited(payload: bytes, pos: int, cls: type[Message], what: str) -> tuple[Any, int]:
    try:
        size, pos = read_uvarint(payload, pos)
    except (IndexError, VarintError):
        raise MalformedRequestError(f"the {what} has no valid length prefix") from None
    if size > len(payload) - pos:
        raise MalformedRequestError(f"the {what} claims {size} bytes, {len(payload) - pos} remain")
    return parse_message(cls, payload[pos : pos + size], what), pos + size


def parse_message(cls: type[Message], data: bytes, what: str | None = None) -> Any:
    """``cls`` parsed from ``data``, with its required fields present and its strings UTF-8
    (the Python protobuf runtime checks neither); MalformedRequestError otherwise."""
    what = what or cls.DESCRIPTOR.name
    message = cls()
    try:
        message.ParseFromString(data)
    except (DecodeError, RecursionError, ValueError) as e:
        raise MalformedRequestError(f"the {what} does not parse: {e}") from None
    if not message.IsInitialized():
        missing = ", ".join(message.FindInitializationErrors())
        raise MalformedRequestError(f"the {what} misses required fields: {missing}")
    bad = _non_utf8_field(message) if _has_strings(cls.DESCRIPTOR) else None
    if bad is not None:
        raise MalformedRequestError(f"the {what} has a string field that is not UTF-8: {bad}")
    return message


@functools.cache
def _has_strings(descriptor: Any) -> bool:
    """Whether messages of ``descriptor`` can hold a string field (directly or in sub-messages)."""
    return any(f.type == FieldDescriptor.TYPE_STRING
               or (f.type == FieldDescriptor.TYPE_MESSAGE and f.message_type is not descriptor
                   and _has_strings(f.message_type))
               for f in descriptor.fields)


def _non_utf8_field(message: Message, prefix: str = "") -> str | None:
    """The first string field holding bytes that are not UTF-8 (the runtime hands those over as
    ``bytes``), searching nested messages too."""
    for field, value in message.ListFields():
        name = prefix + field.name
        values = value if field.is_repeated else (value,)
        if field.type == FieldDescriptor.TYPE_STRING:
            if any(not isinstance(v, str) for v in values):
                return name
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            for v in values:
                bad = _non_utf8_field(v, name + ".")
                if bad is not None:
                    return bad
    return None


@dataclass(frozen=True, slots=True)
class RpcRequest:
    """A decoded request envelope; ``body`` is the inner request, still serialized."""

    serial_no: int
    service_type: int
    protocol_version: int
    method: int
    timeout_ms: int
    body: bytes


def decode_request(frame: Frame) -> RpcRequest:
    """The envelope of a request frame; MalformedRequestError if it is not one."""
    conn, pos = _delimited(frame.payload, 0, rpc_pb2.RpcConnHeader, "RpcConnHeader")
    if conn.flag != FLAG_REQUEST:
        raise MalformedRequestError(f"RpcConnHeader.flag is {conn.flag}, not {FLAG_REQUEST} (a request)")
    header, pos = _delimited(frame.payload, pos, rpc_pb2.RequestHeader, "RequestHeader")
    body, _ = _delimited(frame.payload, pos, rpc_pb2.RequestBody, "RequestBody")
    return RpcRequest(frame.serial_no, header.serviceType, header.protocolVer, body.method, body.timeout,
                      body.request)


def decode_body(spec: MethodSpec, body: bytes) -> Any:
    """The inner request of ``spec``'s method."""
    return parse_message(spec.request, body, spec.request.DESCRIPTOR.name)


# ------------------------------------------------------------------------------------- encoding


def _delimit(message: Message) -> bytes:
    data = message.SerializeToString()
    return uvarint_bytes(len(data)) + data


_RESPONSE_CONN = _delimit(rpc_pb2.RpcConnHeader(flag=FLAG_RESPONSE))
_SUCCESS_HEADER = _delimit(rpc_pb2.ResponseHeader(status=Status.SUCCESS, protocolVer=PROTOCOL_VERSION))


def encode_response(serial_no: int, method: int, response: Message) -> bytes:
    """A framed success response carrying ``response`` (EncodeError if a required field is unset)."""
    body = rpc_pb2.RspResponseBody(method=method, data=response.SerializeToString())
    return encode_frame(serial_no, _RESPONSE_CONN + _SUCCESS_HEADER + _delimit(body))


def encode_exception(serial_no: int, name: str, text: str, *, protocol_version: int = PROTOCOL_VERSION,
                     status: int = Status.ERROR) -> bytes:
    """A framed error response: exception ``name`` (a Java class name, prefixed for the caller's
    protocol version) and ``text`` as its stack trace."""
    header = rpc_pb2.ResponseHeader(status=status, protocolVer=PROTOCOL_VERSION)
    body = rpc_pb2.RspExceptionBody(exceptionName=exception_name(name, protocol_version), stackTrace=text)
    return encode_frame(serial_no, _RESPONSE_CONN + _delimit(header) + _delimit(body))


def fill_required(message: Message) -> Message:
    """Give every unset required field of ``message`` (and of its set sub-messages) its type's
    default, so that an error response built from a few fields still serializes."""
    for field in message.DESCRIPTOR.fields:
        if not field.is_required:
            continue
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            sub = getattr(message, field.name)
            sub.SetInParent()
            fill_required(sub)
        elif not message.HasField(field.name):
            setattr(message, field.name, b"" if field.type == FieldDescriptor.TYPE_BYTES else _DEFAULTS[field.cpp_type]())
    return message


_DEFAULTS: dict[int, Callable[[], Any]] = {
    FieldDescriptor.CPPTYPE_INT32: int, FieldDescriptor.CPPTYPE_INT64: int,
    FieldDescriptor.CPPTYPE_UINT32: int, FieldDescriptor.CPPTYPE_UINT64: int,
    FieldDescriptor.CPPTYPE_DOUBLE: float, FieldDescriptor.CPPTYPE_FLOAT: float,
    FieldDescriptor.CPPTYPE_BOOL: bool, FieldDescriptor.CPPTYPE_ENUM: int,
    FieldDescriptor.CPPTYPE_STRING: str,
}


# --------------------------------------------------------------------- the client side (tests, bench)


def encode_request(serial_no: int, service: int, method: int, request: Message | bytes, *,
                   timeout_ms: int = 10_000, protocol_version: int = PROTOCOL_VERSION) -> bytes:
    """A framed request, as TubeMQ's clients send it (``request`` may be raw bytes, for tests)."""
    data = request if isinstance(request, bytes) else request.SerializeToString()
    return encode_frame(serial_no, _delimit(rpc_pb2.RpcConnHeader(flag=FLAG_REQUEST))
                        + _delimit(rpc_pb2.RequestHeader(serviceType=service, protocolVer=protocol_version))
                        + _delimit(rpc_pb2.RequestBody(method=method, timeout=timeout_ms, request=data)))


@dataclass(frozen=True, slots=True)
class RpcResponse:
    """A decoded response: ``data`` (the inner response, serialized) or an exception."""

    serial_no: int
    status: int
    method: int | None = None
    data: bytes | None = None
    exception_name: str | None = None
    stack_trace: str | None = None


def decode_response(frame: Frame) -> RpcResponse:
    conn, pos = _delimited(frame.payload, 0, rpc_pb2.RpcConnHeader, "RpcConnHeader")
    if conn.flag != FLAG_RESPONSE:
        raise MalformedRequestError(f"RpcConnHeader.flag is {conn.flag}, not {FLAG_RESPONSE} (a response)")
    header, pos = _delimited(frame.payload, pos, rpc_pb2.ResponseHeader, "ResponseHeader")
    if header.status == Status.SUCCESS:
        body, _ = _delimited(frame.payload, pos, rpc_pb2.RspResponseBody, "RspResponseBody")
        return RpcResponse(frame.serial_no, header.status, body.method, body.data)
    error, _ = _delimited(frame.payload, pos, rpc_pb2.RspExceptionBody, "RspExceptionBody")
    return RpcResponse(frame.serial_no, header.status, exception_name=error.exceptionName,
                       stack_trace=error.stackTrace)


__all__ = [
    "FLAG_REQUEST",
    "FLAG_RESPONSE",
    "GENERIC_EXCEPTION",
    "IO_EXCEPTION",
    "METHODS",
    "PROTOCOL_VERSION",
    "SERVER_NOT_READY_EXCEPTION",
    "SERVICE_STOPPING_EXCEPTION",
    "STANDBY_EXCEPTION",
    "UNKNOWN_PROTOCOL_EXCEPTION",
    "MalformedRequestError",
    "Method",
    "MethodSpec",
    "RpcRequest",
    "RpcResponse",
    "Service",
    "Status",
    "decode_body",
    "decode_request",
    "decode_response",
    "encode_exception",
    "encode_request",
    "encode_response",
    "exception_name",
    "fill_required",
    "parse_message",
]
