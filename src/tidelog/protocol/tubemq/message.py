"""A TubeMQ message's payload and attributes, and how they map onto a Kafka record's key, value and headers.

Payload (``SendMessageRequestP2B.data``, ``TransferedMessage.payLoadData``)::

    flag bit 0 clear:  body
    flag bit 0 set:    int32 attrLen | attribute (UTF-8, attrLen bytes) | body

The attribute is ``k=v,k=v...``; TubeMQ's system keys ``$msgType$`` (the filter type) and
``$msgTime$`` (yyyyMMddHHmm) come first. Checksums are ``crc32(payload) & 0x7FFFFFFF``.

The mapping (docs/tubemq.md has the table):

* body <-> value (a Kafka record without a value becomes an empty body);
* each attribute item <-> one header, in order: ``k=v`` <-> header ``k`` with value ``v`` (split at
  the first ``=``), a bare ``k`` <-> header ``k`` with a null value; ``$msgType$`` and ``$msgTime$``
  are headers of those names;
* the Kafka key <-> item ``$msgKey$`` (the key as text) or, for a key that is not UTF-8 text without
  ``,``, item ``$msgKeyBase64$`` (base64); without either the key is null;
* a header that an attribute item cannot hold (a name with ``,`` or ``=``, a value that is not UTF-8
  or contains ``,``) is left out of what TubeMQ consumers see; the record keeps it for Kafka ones.

Pure functions; safe from any thread.
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib
from collections.abc import Iterable, Sequence

from tidelog.protocol.exceptions import ProtocolError

ATTRIBUTE_FLAG = 0x1
MSG_TYPE = "$msgType$"
MSG_TIME = "$msgTime$"
MSG_KEY = "$msgKey$"
MSG_KEY_BASE64 = "$msgKeyBase64$"
ITEM_SEP = ","
KEY_VALUE_SEP = "="
_SYSTEM_KEYS = (MSG_TYPE, MSG_TIME)
_ATTR_LEN = struct.Struct(">i")

#: A header as the mapping sees it: a name and a nullable value (Kafka's record header).
HeaderPair = tuple[str, bytes | None]


class PayloadError(ProtocolError):
    """A payload whose attribute prefix does not fit it, or whose attribute is not UTF-8."""


def checksum(data: bytes | bytearray | memoryview) -> int:
    """TubeMQ's message checksum: CRC-32 masked to 31 bits."""
    return zlib.crc32(data) & 0x7FFFFFFF


def split_payload(data: bytes, flag: int) -> tuple[str | None, bytes]:
    """``(attribute or None, body)`` of a payload; PayloadError if the attribute prefix is wrong."""
    if not flag & ATTRIBUTE_FLAG:
        return None, data
    if len(data) < _ATTR_LEN.size:
        raise PayloadError(f"the attribute flag is set but the payload has only {len(data)} bytes")
    (length,) = _ATTR_LEN.unpack_from(data)
    if not 0 <= length <= len(data) - _ATTR_LEN.size:
        raise PayloadError(f"attribute length {length} does not fit a payload of {len(data)} bytes")
    end = _ATTR_LEN.size + length
    try:
        attribute = data[_ATTR_LEN.size : end].decode("utf-8")
    except UnicodeDecodeError:
        raise PayloadError("the attribute is not UTF-8") from None
    return attribute, data[end:]


def join_payload(attribute: str, body: bytes) -> tuple[bytes, int]:
    """``(payload, flag)``: the body alone when the attribute is empty, as TubeMQ's producer sends it."""
    if not attribute:
        return body, 0
    encoded = attribute.encode("utf-8")
    return _ATTR_LEN.pack(len(encoded)) + encoded + body, ATTRIBUTE_FLAG


# --------------------------------------------------------------------------- attribute <-> headers


def attribute_items(attribute: str | None) -> list[HeaderPair]:
    """The items of an attribute string as headers (empty items are skipped)."""
    out: list[HeaderPair] = []
    for item in (attribute or "").split(ITEM_SEP):
        if not item:
            continue
        name, sep, value = item.partition(KEY_VALUE_SEP)
        out.append((name, value.encode("utf-8") if sep else None))
    return out


def _carried(name: str, value: bytes | None) -> str | None:
    """The attribute item of a header, or None if an item cannot hold it."""
    if ITEM_SEP in name or KEY_VALUE_SEP in name:
        return None
    if value is None:
        return name if name else None
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if ITEM_SEP in text:
        return None
    return f"{name}{KEY_VALUE_SEP}{text}"


def record_from_message(attribute: str | None, msg_type: str | None = None,
                        msg_time: str | None = None) -> tuple[bytes | None, list[HeaderPair]]:
    """A TubeMQ message's ``(key, headers)`` for a Kafka record. ``msg_type`` / ``msg_time`` are the
    send request's own fields: added as headers when the attribute does not carry them."""
    headers = attribute_items(attribute)
    names = {name for name, _ in headers}
    system = [(k, v.encode("utf-8")) for k, v in ((MSG_TYPE, msg_type), (MSG_TIME, msg_time)) if v and k not in names]
    key: bytes | None = None
    rest: list[HeaderPair] = []
    for name, value in headers:
        if key is None and value is not None and name in (MSG_KEY, MSG_KEY_BASE64):
            if name == MSG_KEY:
                key = value
                continue
            try:
                key = base64.b64decode(value, validate=True)
                continue
            except (binascii.Error, ValueError):
                pass  # not base64 after all: an ordinary header
        rest.append((name, value))
    return key, system + rest


def message_attribute(key: bytes | None, headers: Iterable[tuple[str, bytes | bytearray | None]]) -> tuple[str, int]:
    """The TubeMQ attribute of a Kafka record, and how many of its headers it could not carry.
    System headers (``$msgType$``, ``$msgTime$``) go first, then the key, then the other headers."""
    system: list[str] = []
    items: list[str] = []
    dropped = 0
    for name, value in headers:
        item = _carried(name, None if value is None else bytes(value))
        if item is None:
            dropped += 1
        elif name in _SYSTEM_KEYS:
            system.append(item)
        else:
            items.append(item)
    if key is not None:
        key_item = _carried(MSG_KEY, key)
        if key_item is None:
            key_item = f"{MSG_KEY_BASE64}{KEY_VALUE_SEP}{base64.b64encode(key).decode('ascii')}"
        system.append(key_item)
    return ITEM_SEP.join(system + items), dropped


def header_value(headers: Sequence[HeaderPair], name: str) -> str | None:
    """The first value of header ``name`` as text (None if absent, null or not UTF-8)."""
    for n, v in headers:
        if n == name and v is not None:
            try:
                return v.decode("utf-8")
            except UnicodeDecodeError:
                return None
    return None


__all__ = [
    "ATTRIBUTE_FLAG",
    "MSG_KEY",
    "MSG_KEY_BASE64",
    "MSG_TIME",
    "MSG_TYPE",
    "HeaderPair",
    "PayloadError",
    "attribute_items",
    "checksum",
    "header_value",
    "join_payload",
    "message_attribute",
    "record_from_message",
    "split_payload",
]
