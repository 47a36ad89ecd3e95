"""Request and response headers, and whole request/response frames.

Wire layout of a frame (the 4-byte size prefix is handled by :mod:`tidelog.protocol.framing`)::

    request:   RequestHeader (v0: api_key int16, api_version int16, correlation_id int32;
                              v1: + client_id nullable int16-length string;
                              v2: + tagged fields)            then the request body
    response:  ResponseHeader (v0: correlation_id int32; v1: + tagged fields)   then the response body

The header version follows the API's flexible versions (see :mod:`tidelog.protocol.api_keys`).
Pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass

from tidelog.protocol.api_keys import api_entry, request_header_version, response_header_version
from tidelog.protocol.exceptions import MalformedMessageError
from tidelog.protocol.message import Message, byte_view
from tidelog.protocol.messages.header import RequestHeader, ResponseHeader
from tidelog.protocol.primitives import INT16, INT32, Writer


def peek_api(frame) -> tuple[int, int]:
    """(api_key, api_version) of a request frame, without decoding anything else."""
    buf = byte_view(frame)
    if len(buf) < 8:
        raise MalformedMessageError("request shorter than its header")
    return INT16.unpack_from(buf, 0)[0], INT16.unpack_from(buf, 2)[0]


def decode_request_header(frame) -> tuple[RequestHeader, int]:
    """The request header and the offset of the body. Raises UnknownApiKeyError for unknown keys."""
    api_key, api_version = peek_api(frame)
    version = request_header_version(api_key, api_version)
    return RequestHeader.decode_from(frame, 0, version)


@dataclass(slots=True)
class Request:
    """A decoded request frame."""

    header: RequestHeader
    body: Message

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def api_version(self) -> int:
        return self.header.request_api_version


def decode_request(frame) -> Request:
    """Decode a whole request frame (without its size prefix): header, then the body of its API."""
    header, pos = decode_request_header(frame)
    entry = api_entry(header.request_api_key)
    body, _ = entry.request.decode_from(frame, pos, header.request_api_version)
    return Request(header, body)


def encode_request(
    body: Message, api_version: int, correlation_id: int, client_id: str | None = "tidelog"
) -> bytes:
    """A request frame body (no size prefix): header then body."""
    api_key = body.API_KEY
    assert api_key is not None
    header = RequestHeader(
        request_api_key=api_key, request_api_version=api_version, correlation_id=correlation_id, client_id=client_id
    )
    w = Writer()
    header.encode_into(w, request_header_version(api_key, api_version))
    body.encode_into(w, api_version)
    return w.getvalue()


def encode_response_buffers(body: Message, api_version: int, correlation_id: int) -> list:
    """A response frame *with* its 4-byte size prefix, as a list of buffers (records not copied)."""
    api_key = body.API_KEY
    assert api_key is not None
    w = Writer()
    w.buf += b"\0\0\0\0"
    ResponseHeader(correlation_id=correlation_id).encode_into(w, response_header_version(api_key, api_version))
    body.encode_into(w, api_version)
    bufs = w.buffers()
    INT32.pack_into(bufs[0], 0, w.size() - 4)
    return bufs


def encode_response(body: Message, api_version: int, correlation_id: int) -> bytes:
    """A response frame with its size prefix, as bytes."""
    return b"".join(encode_response_buffers(body, api_version, correlation_id))


def decode_response(frame, api_key: int, api_version: int) -> tuple[int, Message]:
    """(correlation_id, body) of a response frame without its size prefix."""
    header, pos = ResponseHeader.decode_from(frame, 0, response_header_version(api_key, api_version))
    body, _ = api_entry(api_key).response.decode_from(frame, pos, api_version)
    return header.correlation_id, body


__all__ = [
    "Request",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_buffers",
    "peek_api",
]
