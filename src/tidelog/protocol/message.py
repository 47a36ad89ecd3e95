"""Base classes of the generated message codecs (:mod:`tidelog.protocol.messages`).

Every generated class is a plain slotted class whose fields are the snake_case of the spec's field
names, with a generated ``__init__`` (keyword or positional arguments, the spec's defaults, a fresh list
or struct per instance) and the ``__eq__`` / ``__repr__`` / ``__hash__`` (frozen classes) of a dataclass.
They are not dataclasses: ``@dataclass`` processing of hundreds of classes was most of a broker's
start-up time (bench/startup.py). :func:`fields` and :func:`replace` stand in for :mod:`dataclasses`'. A struct knows how to read itself from ``(buf, pos, version)`` and write itself to a
:class:`~tidelog.protocol.primitives.Writer`; a :class:`Message` adds the top-level entry points with
version checks and the guarantee that decoding hostile bytes raises only
:class:`~tidelog.protocol.exceptions.ProtocolError`.

Immutable class-level metadata; instances are plain mutable value objects (not thread-safe).
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

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


#: Default of a generated ``__init__`` argument whose default is a new list or struct per instance.
FACTORY: Any = object()


class FrozenInstanceError(AttributeError):
    """Assigning to or deleting a field of a frozen generated class (as :mod:`dataclasses`' of the same name)."""


class Struct:
    """A generated struct: ``__slots__`` (the fields in spec order, then ``unknown_tagged_fields``),
    ``SCHEMA`` and ``_read`` / ``_write``. Equality and ``repr`` as a dataclass's."""

    __slots__ = ()
    SCHEMA: ClassVar[tuple[FieldInfo, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = self.__slots__
        return tuple([getattr(self, n) for n in names]) == tuple([getattr(other, n) for n in names])

    def __repr__(self) -> str:
        # unknown_tagged_fields (always last) is left out, as the dataclasses' field(repr=False) did.
        body = ", ".join([f"{n}={getattr(self, n)!r}" for n in self.__slots__[:-1]])
        return f"{type(self).__qualname__}({body})"


class Frozen:
    """Mixin of the frozen generated classes (internal-topic records): no assignment, hashable by value."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(tuple([getattr(self, n) for n in self.__slots__]))  # type: ignore[attr-defined]

    def __getstate__(self) -> tuple:
        return tuple([getattr(self, n) for n in self.__slots__])  # type: ignore[attr-defined]

    def __setstate__(self, state: tuple) -> None:
        for n, v in zip(self.__slots__, state, strict=True):  # type: ignore[attr-defined]
            object.__setattr__(self, n, v)


def fields(obj_or_cls: Any) -> tuple[str, ...]:
    """The attribute names of a generated class or instance, in ``__init__`` order (the last is
    ``unknown_tagged_fields``)."""
    return obj_or_cls.__slots__


def replace(obj: Any, **changes: Any) -> Any:
    """A copy of a generated message or record with ``changes`` (as :func:`dataclasses.replace`)."""
    kwargs = {n: getattr(obj, n) for n in obj.__slots__}
    unknown = changes.keys() - kwargs.keys()
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field(s) {sorted(unknown)}")
    kwargs.update(changes)
    return type(obj)(**kwargs)


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


__all__ = ["FACTORY", "FieldInfo", "Frozen", "FrozenInstanceError", "Message", "Struct", "fields", "in_ranges", "replace"]
