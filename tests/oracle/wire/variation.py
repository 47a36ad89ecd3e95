"""Requests varied from a template through the codec's schemas.

A template is a valid request. :data:`MUTATIONS` names edge-case values by the *role* of the fields
they go into (a topic name, a topic id, a partition index, a group id); :func:`substitute` puts the
value into every field of that role the request has at a version, found by walking the generated
``SCHEMA`` of the request, so one table of mutations varies every API without a hand-written
request per API, version and case. :func:`has_role` says whether a version has such a field at all
(Fetch v13+ names topics by id only, for instance), so a mutation is only sent where it means
something. Pure functions; templates are deep-copied, never changed.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import Any

from tidelog.protocol.message import FieldInfo, Message, Struct, in_ranges

#: A topic id no broker handed out (fixed, so both brokers see the same request).
UNKNOWN_TOPIC_ID = uuid.UUID("6d1f0000-0000-4000-8000-00000000beef")


def _topic_field(owner: type, info: FieldInfo) -> bool:
    if info.type != "string":
        return False
    if info.name in ("topic", "topic_name"):
        return True
    # "name" of a topic struct (CreatableTopic, MetadataRequestTopic, DeleteRecordsTopic ...)
    return info.name == "name" and "topic" in owner.__qualname__.lower().rsplit(".", 1)[-1]


ROLES: dict[str, Callable[[type, FieldInfo], bool]] = {
    "topic": _topic_field,
    "topic_id": lambda owner, info: info.name == "topic_id" and info.type == "uuid",
    "partition": lambda owner, info: info.type == "int32" and (
        info.name in ("partition", "partition_index")
        or (info.name == "index" and "partition" in owner.__qualname__.lower())),
    "group": lambda owner, info: info.name == "group_id" and info.type == "string",
}

#: name -> (role, value): the edge cases every template is varied with (where it has the role).
MUTATIONS: dict[str, tuple[str, Any]] = {
    "unknown-topic": ("topic", "diff-no-such-topic"),
    "invalid-topic-name": ("topic", "bad topic!"),
    "empty-topic-name": ("topic", ""),
    "dot-topic-name": ("topic", ".."),
    "long-topic-name": ("topic", "t" * 250),
    "unknown-topic-id": ("topic_id", UNKNOWN_TOPIC_ID),
    "unknown-partition": ("partition", 97),
    "negative-partition": ("partition", -1),
    "unknown-group": ("group", "diff-no-such-group"),
    "empty-group-id": ("group", ""),
}


def _present(info: FieldInfo, version: int) -> bool:
    return in_ranges(version, info.versions) or in_ranges(version, info.tagged_versions)


def has_role(cls: type[Struct], role: str, version: int) -> bool:
    """Whether requests of ``cls`` have a field of ``role`` at ``version`` (anywhere inside)."""
    test = ROLES[role]
    for info in cls.SCHEMA:
        if not _present(info, version):
            continue
        if info.struct is not None:
            if has_role(info.struct, role, version):
                return True
        elif test(cls, info):
            return True
    return False


def substitute(message: Message, role: str, value: Any, version: int) -> Message:
    """A copy of ``message`` with every field of ``role`` present at ``version`` set to ``value``."""
    out = copy.deepcopy(message)
    _set(out, ROLES[role], value, version)
    return out


def _set(struct: Struct, test: Callable[[type, FieldInfo], bool], value: Any, version: int) -> None:
    for info in struct.SCHEMA:
        if not _present(info, version):
            continue
        current = getattr(struct, info.name)
        if info.struct is not None:
            for item in current if isinstance(current, list) else ([current] if current is not None else []):
                _set(item, test, value, version)
        elif test(type(struct), info):
            setattr(struct, info.name, value)


def fit(message: Message, version: int) -> Message:
    """A copy of ``message`` whose fields that ``version`` lacks have their defaults, as a client
    writing an older version leaves out what it cannot say (the codec refuses to drop a set field)."""
    out = copy.deepcopy(message)
    _fit(out, version)
    return out


def _fit(struct: Struct, version: int) -> None:
    default = None
    for info in struct.SCHEMA:
        if not _present(info, version):
            if default is None:
                default = type(struct)()
            setattr(struct, info.name, copy.deepcopy(getattr(default, info.name)))
            continue
        current = getattr(struct, info.name)
        if info.struct is not None:
            for item in current if isinstance(current, list) else ([current] if current is not None else []):
                _fit(item, version)


def mutations_for(cls: type[Message], version: int, only: tuple[str, ...] | None = None) -> list[str]:
    """The names of :data:`MUTATIONS` that apply to ``cls`` at ``version``."""
    names = only if only is not None else tuple(MUTATIONS)
    return [name for name in names if has_role(cls, MUTATIONS[name][0], version)]


__all__ = ["MUTATIONS", "ROLES", "UNKNOWN_TOPIC_ID", "fit", "has_role", "mutations_for", "substitute"]
