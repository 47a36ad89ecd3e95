"""Tidelog's Kafka wire codec: sans-IO, generated from Apache Kafka's JSON message specs.

Bytes in, objects out, and back; no sockets, files, clocks or asyncio.
"""

from tidelog.protocol.api_keys import API_REGISTRY, ApiEntry, ApiKey, api_entry
from tidelog.protocol.exceptions import (
    FrameTooLargeError,
    MalformedMessageError,
    ProtocolEncodeError,
    ProtocolError,
    UnknownApiKeyError,
    UnsupportedVersionError,
)
from tidelog.protocol.framing import FrameDecoder, frame
from tidelog.protocol.headers import (
    Request,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    encode_response_buffers,
)
from tidelog.protocol.message import FieldInfo, Message, Struct

__all__ = [
    "API_REGISTRY",
    "ApiEntry",
    "ApiKey",
    "FieldInfo",
    "FrameDecoder",
    "FrameTooLargeError",
    "MalformedMessageError",
    "Message",
    "ProtocolEncodeError",
    "ProtocolError",
    "Request",
    "Struct",
    "UnknownApiKeyError",
    "UnsupportedVersionError",
    "api_entry",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_buffers",
    "frame",
]
