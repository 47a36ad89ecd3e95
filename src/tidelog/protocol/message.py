"""Base classes of the generated message codecs (:mod:`tidelog.protocol.messages`).

Every generated class is a slotted dataclass whose fields are the snake_case of the spec's field
names. A struct knows how to read itself from ``(buf, pos, version)`` and write itself to a
:class:`~tidelog.protocol.primitives.Writer`; a :class:`Message` adds the top-level entry points with
version checks and the guarantee that decoding hostile bytes raises only
:class:`~tidelog.protocol.exceptions.ProtocolError`.

Immutable class-level metadata; instances are plain mutable value objects (not thread-safe).
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from tidelog.protocol.exceptions import (
    MalformedMessageError,
    ProtocolEncodeError,
    ProtocolError,
    UnsupportedVersionError,
)
from tidelog.protocol.primitives import Writer

Ranges = tuple[tuple[int, int], ...]


def in_ranges(version: int, ranges: Ranges) -> bool:
    return any(lo <= version <= hi for lo, hi in ranges)


class FieldInfo(NamedTuple):
    """One field of a generated struct, as the spec defines it (versions are inclusive ranges)."""

    name: str  # snake_case attribute name
    type: str  # spec type: "int32", "string", "[]int32", "[]Struct", "Struct", "records", ...
    versions: Ranges
    nullable_versions: Ranges
    tagged_versions: Ranges
    tag: int | None
    ignorable: bool
    struct: type | None  # the generated class of a struct (or struct-array) field


class Struct:
    """A generated struct: a dataclass with ``SCHEMA`` and ``_read`` / ``_write``."""

    __slots__ = ()
    SCHEMA: ClassVar[tuple[FieldInfo, ...]] = ()


class Message(Struct):
    """A top-level request, response or header."""

    __slots__ = ()
    API_KEY: ClassVar[int | None] = None
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 0
    #: Lowest flexible version (compact encodings and tagged fields), or None if never flexible.
    FLEXIBLE_FROM: ClassVar[int | None] = None

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return cls.FLEXIBLE_FROM is not None and version >= cls.FLEXIBLE_FROM

    @classmethod
    def _check_version(cls, version: int) -> None:
        if not (cls.MIN_VERSION <= version <= cls.MAX_VERSION):
            raise UnsupportedVersionError(
                f"{cls.__name__} has versions {cls.MIN_VERSION}-{cls.MAX_VERSION}, not {version}"
            )

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int, *, strict: bool = False):
        """Decode one message body. With ``strict``, bytes left over after the message are an error."""
        obj, pos = cls.decode_from(data, 0, version)
        if strict and pos != len(byte_view(data)):
            raise MalformedMessageError(f"{len(byte_view(data)) - pos} unexpected bytes after {cls.__name__}")
        return obj

    @classmethod
    def decode_from(cls, data, pos: int, version: int):
        """Decode at ``pos``; returns ``(message, position after it)``."""
        cls._check_version(version)
        buf = byte_view(data)
        try:
            return cls._read(buf, pos, version)  # type: ignore[attr-defined]
        except ProtocolError:
            raise
        except Exception as e:  # struct.error, IndexError, ValueError ... from hostile bytes
            raise MalformedMessageError(f"cannot decode {cls.__name__} v{version}: {e}") from None

    def encode_into(self, w: Writer, version: int) -> None:
        self._check_version(version)
        try:
            self._write(w, version)  # type: ignore[attr-defined]
        except ProtocolError:
            raise
        except Exception as e:  # struct.error (out of range), TypeError, AttributeError ...
            raise ProtocolEncodeError(f"cannot encode {type(self).__name__} v{version}: {e}") from None

    def encode(self, version: int) -> bytes:
        w = Writer()
        self.encode_into(w, version)
        return w.getvalue()

    def encode_buffers(self, version: int) -> list:
        """The encoding as a list of buffers; record sets are referenced, not copied."""
        w = Writer()
        self.encode_into(w, version)
        return w.buffers()


def byte_view(data) -> memoryview:
    """A flat memoryview of unsigned bytes over ``data`` (bytes, bytearray or any memoryview), without copying."""
    if type(data) is memoryview:
        return data if data.format == "B" and data.ndim == 1 else data.cast("B")
    return memoryview(data)


__all__ = ["FieldInfo", "Message", "Struct", "in_ranges"]
