"""Decoded responses as plain trees, with what depends on the environment taken out.

:func:`to_tree` turns a decoded message into nested dicts, lists and scalars that two brokers'
answers can be compared on, field by field. It keeps only the fields the version has, turns lists
of entities into maps keyed by their identity (Kafka builds most lists from hash maps, so their
order carries no meaning), decodes record batches, and applies :data:`RULES`: the fields whose
value depends on the broker's environment (ports, paths, random ids, clocks, quotas) rather than on
its behaviour. docs/compat.md lists the same rules with their reasons; a test keeps the two alike.

A :class:`Symbols` table per broker turns ids the broker made up (member ids, topic ids) into
names that compare equal when both brokers hand them out in the same order; values the test sent
itself stay as they are. Not thread-safe.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.oracle.wire.difference import Keyed
from tidelog.protocol.message import Message, Struct, in_ranges
from tidelog.protocol.primitives import ZERO_UUID
from tidelog.records import iter_batches
from tidelog.records.errors import InvalidRecordError
from tidelog.records.legacy import LegacyMessageView

Tree = Any
DROPPED = object()


@dataclass(frozen=True)
class Rule:
    """Fields (by snake_case name, anywhere in a response) and what becomes of their values."""

    name: str
    fields: frozenset[str]
    apply: Callable[[Any, Symbols], Any]
    reason: str


def _drop(value: Any, symbols: Symbols) -> Any:
    return DROPPED


def _placeholder(text: str) -> Callable[[Any, Symbols], Any]:
    """Non-null values become ``<text>``; null stays null (whether a value is there at all is behaviour)."""
    return lambda value, symbols: value if value is None else f"<{text}>"


def _time(value: Any, symbols: Symbols) -> Any:
    return value if value is None or value < 0 else "<time>"


def _size(value: Any, symbols: Symbols) -> Any:
    return value if value is None or value < 0 else "<bytes>"


def _session(value: Any, symbols: Symbols) -> Any:
    return "<session>" if value else value


def _member(value: Any, symbols: Symbols) -> Any:
    return symbols.member(value)


def _uuid(value: Any, symbols: Symbols) -> Any:
    return symbols.uuid(value)


#: The normalisation, in the order docs/compat.md gives it.
RULES: tuple[Rule, ...] = (
    Rule("throttle", frozenset({"throttle_time_ms"}), _drop,
         "quotas: both brokers run without quotas, and Kafka may still report a throttle on a busy machine"),
    Rule("error-message", frozenset({"error_message", "batch_index_error_message"}), _drop,
         "free text for people: clients act on the error code; the wording is each broker's own"),
    Rule("documentation", frozenset({"documentation"}), _placeholder("text"),
         "a config's documentation is prose for people, each broker's own; whether there is some is compared"),
    Rule("cluster-id", frozenset({"cluster_id"}), _placeholder("cluster-id"),
         "random per cluster (`kafka-storage format -t`, Tidelog's first start)"),
    Rule("endpoint", frozenset({"host", "port"}), _placeholder("endpoint"),
         "where each broker listens: a free port picked at start, and each fixture's advertised host"),
    Rule("log-dir", frozenset({"log_dir"}), _placeholder("log-dir"), "the data directory each fixture made"),
    Rule("disk-space", frozenset({"total_bytes", "usable_bytes"}), _size,
         "the file system's size and free space at the moment of asking"),
    Rule("append-time", frozenset({"log_append_time_ms"}), _time,
         "the broker's clock when it appended (the records' own timestamps are compared)"),
    Rule("fetch-session", frozenset({"session_id"}), _session,
         "fetch session ids (KIP-227) are random; whether there is a session (0 or not) is compared"),
    Rule("member-id", frozenset({"member_id", "leader"}), _member,
         "member ids the coordinator generates (a UUID); the n-th new id of a run becomes <member#n>"),
    Rule("uuid", frozenset({"topic_id"}), _uuid,
         "topic ids are random: a known topic's id becomes <id:NAME>, another id <uuid#n>; zero stays zero"),
)
_BY_FIELD = {name: rule for rule in RULES for name in rule.fields}

#: Broker config values that name the broker's environment (DescribeConfigs of a BROKER resource).
ENVIRONMENT_CONFIGS = frozenset({
    "listeners", "advertised.listeners", "listener.security.protocol.map", "log.dir", "log.dirs",
    "controller.listener.names", "controller.quorum.voters", "process.roles", "node.id", "broker.id",
})

#: Lists whose order means something: they stay lists (compared position by position).
ORDERED_LISTS = frozenset({"synonyms", "replica_nodes", "isr_nodes", "records", "assignment",
                           "eligible_leader_replicas", "last_known_elr", "offline_replicas"})
#: Fields that identify an entity in a list, in order of preference.
KEYS = ("name", "topic", "topic_name", "topic_id", "resource_name", "group_id", "partition_index", "partition", "api_key",
        "member_id", "node_id", "broker_id", "log_dir", "key", "transactional_id", "producer_id", "index",
        "batch_index", "entity_type")


@dataclass
class Symbols:
    """Ids a broker made up, named in order of first appearance; values the test sent stay raw."""

    sent: set[Any] = field(default_factory=set)
    members: dict[str, str] = field(default_factory=dict)
    topic_names: dict[uuid.UUID, str] = field(default_factory=dict)
    uuids: dict[uuid.UUID, str] = field(default_factory=dict)

    def member(self, value: Any) -> Any:
        if not isinstance(value, str) or value == "":
            return value
        if value in self.members:
            return self.members[value]
        if value in self.sent:
            return value
        if value not in self.members:
            self.members[value] = f"<member#{len(self.members) + 1}>"
        return self.members[value]

    def uuid(self, value: Any) -> Any:
        if not isinstance(value, uuid.UUID) or value == ZERO_UUID:
            return str(value) if value is not None else None
        if value in self.topic_names:
            return f"<id:{self.topic_names[value]}>"
        if value in self.sent:
            return str(value)
        if value not in self.uuids:
            self.uuids[value] = f"<uuid#{len(self.uuids) + 1}>"
        return self.uuids[value]

    def remember_request(self, message: Message, version: int) -> None:
        """Every string and UUID in a request is the test's own: it stays raw in responses."""
        for value in _leaves(message, version):
            if isinstance(value, (str, uuid.UUID)) and value not in self.members and value not in self.topic_names:
                self.sent.add(value)

    def learn_topics(self, message: Message, version: int) -> None:
        """Topic ids named next to their topic anywhere in a response."""
        for struct in _structs(message, version):
            topic_id = getattr(struct, "topic_id", None)
            name = next((getattr(struct, n) for n in ("name", "topic", "topic_name")
                         if isinstance(getattr(struct, n, None), str)), None)
            if isinstance(topic_id, uuid.UUID) and topic_id != ZERO_UUID and name:
                self.topic_names.setdefault(topic_id, name)


def _fields(struct: Struct, version: int):
    for info in struct.SCHEMA:
        if in_ranges(version, info.versions) or in_ranges(version, info.tagged_versions):
            yield info, getattr(struct, info.name)


def _structs(struct: Struct, version: int):
    yield struct
    for info, value in _fields(struct, version):
        if info.struct is None or value is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            yield from _structs(item, version)


def _leaves(struct: Struct, version: int):
    for s in _structs(struct, version):
        for info, value in _fields(s, version):
            if info.struct is None:
                yield from (value if isinstance(value, list) else [value])


def to_tree(message: Message, version: int, symbols: Symbols) -> Tree:
    """The comparable form of a decoded response (see the module doc)."""
    symbols.learn_topics(message, version)
    return _struct_tree(message, version, symbols)


def _struct_tree(struct: Struct, version: int, symbols: Symbols) -> dict[str, Tree]:
    out: dict[str, Tree] = {}
    for info, value in _fields(struct, version):
        if info.type == "records":
            out[info.name] = records_tree(value)
        elif info.struct is not None:
            if value is None:
                out[info.name] = None
            elif isinstance(value, list):
                out[info.name] = _list_tree(info.name, [_struct_tree(v, version, symbols) for v in value])
            else:
                out[info.name] = _struct_tree(value, version, symbols)
        else:
            rule = _BY_FIELD.get(info.name)
            leaf = _leaf(value)
            if rule is not None:
                leaf = rule.apply(value, symbols)
                if isinstance(leaf, uuid.UUID):
                    leaf = str(leaf)
            if leaf is not DROPPED:
                out[info.name] = [_leaf(v) for v in leaf] if isinstance(leaf, list) and rule is None else leaf
    unknown = getattr(struct, "unknown_tagged_fields", None)
    if unknown:
        out["unknown_tagged_fields"] = {str(tag): data.hex() for tag, data in unknown}
    _environment_configs(out)
    return out


def _environment_configs(out: dict[str, Tree]) -> None:
    """A broker resource's config entries that name its environment keep only their presence."""
    if out.get("resource_type") != 4 or not isinstance(out.get("configs"), dict):
        return
    for name, entry in out["configs"].items():
        if name in ENVIRONMENT_CONFIGS and isinstance(entry, dict) and "value" in entry:
            entry["value"] = "<environment>" if entry["value"] is not None else None
            for synonym in entry.get("synonyms") or []:
                if isinstance(synonym, dict) and synonym.get("value") is not None:
                    synonym["value"] = "<environment>"


def _leaf(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, list):
        return [_leaf(v) for v in value]
    return value


def _list_tree(name: str, items: list[dict[str, Tree]]) -> Tree:
    if name in ORDERED_LISTS:
        return items
    for key in KEYS:
        values = [item.get(key) for item in items]
        if all(key in item for item in items) and len(set(map(repr, values))) == len(values):
            return Keyed((str(v), item) for v, item in zip(values, items, strict=True))
    return items


def records_tree(data: Any) -> Tree:
    """Record batches as dicts (the CRC is left out: it follows from the rest); a partial batch at
    the end of a fetch response becomes ``{"partial": size}``."""
    if data is None:
        return None
    data = bytes(data)
    out: list[Tree] = []
    pos = 0
    try:
        for entry in iter_batches(data, allow_partial=True):
            pos += entry.size_in_bytes
            out.append(_legacy_tree(entry) if isinstance(entry, LegacyMessageView) else _batch_tree(entry))
    except InvalidRecordError as e:
        out.append({"invalid": str(e)})
        return out
    if pos < len(data):
        out.append({"partial": len(data) - pos})
    return out


def _batch_tree(batch) -> dict[str, Tree]:
    log_append_time = batch.timestamp_type == 1
    try:
        records = [{"offset": r.offset, "timestamp": "<time>" if log_append_time else r.timestamp,
                    "key": _leaf(r.key), "value": _leaf(r.value),
                    "headers": [[h.key, _leaf(h.value)] for h in r.headers]} for r in batch.records()]
    except InvalidRecordError as e:
        records = [{"invalid": str(e)}]
    return {
        "base_offset": batch.base_offset, "partition_leader_epoch": batch.partition_leader_epoch,
        "magic": batch.magic, "attributes": batch.attributes, "last_offset_delta": batch.last_offset_delta,
        "base_timestamp": "<time>" if log_append_time else batch.base_timestamp,
        "max_timestamp": "<time>" if log_append_time else batch.max_timestamp,
        "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence, "records": records,
    }


def _legacy_tree(message: LegacyMessageView) -> dict[str, Tree]:
    try:
        records = [{"offset": r.offset, "timestamp": r.timestamp, "key": _leaf(r.key), "value": _leaf(r.value)}
                   for r in message.records()]
    except InvalidRecordError as e:
        records = [{"invalid": str(e)}]
    return {"offset": message.offset, "magic": message.magic, "attributes": message.attributes,
            "records": records}


__all__ = ["ENVIRONMENT_CONFIGS", "RULES", "Rule", "Symbols", "records_tree", "to_tree"]
