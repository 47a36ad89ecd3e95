"""The typed errors of the protocol codec.

Every decoder raises only :class:`ProtocolError` subclasses on bad input, whatever the bytes; the
server maps them to a closed connection (malformed frame) or to ``UNSUPPORTED_VERSION``.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Base of every error the codec raises."""


class MalformedMessageError(ProtocolError):
    """The bytes do not decode as the message and version they claim to be."""


class FrameTooLargeError(ProtocolError):
    """A frame's size prefix exceeds the configured maximum (``socket.request.max.bytes``)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class UnsupportedVersionError(ProtocolError):
    """The message has no layout for the requested version."""


class UnknownApiKeyError(ProtocolError):
    """The request header names an API key the codec does not know."""

    def __init__(self, api_key: int) -> None:
        super().__init__(f"unknown API key {api_key}")
        self.api_key = api_key


class ProtocolEncodeError(ProtocolError, ValueError):
    """A value cannot be encoded in the requested version (wrong type, out of range, or a
    non-default value in a field the version does not have)."""


__all__ = [
    "FrameTooLargeError",
    "MalformedMessageError",
    "ProtocolEncodeError",
    "ProtocolError",
    "UnknownApiKeyError",
    "UnsupportedVersionError",
]
