"""Apache Kafka's JSON message specs, loaded into plain objects for the code generator.

A spec file is JSON with ``//`` comments. It names one request, response, header or data schema
(``apiKey``, ``type``, ``name``), the versions it has (``validVersions``), from which version it is flexible
(``flexibleVersions``), and an ordered list of fields. Each field has a type (``int8`` ... ``float64``,
``bool``, ``string``, ``bytes``, ``records``, ``uuid``, a struct name, or ``[]T``), the versions it
exists in, optionally the versions it may be null in, the versions it is a tagged field in (and its tag),
a default, and ``ignorable``. ``commonStructs`` defines struct types shared by several fields. A field
without ``versions`` exists in its ``taggedVersions`` (as in Kafka's generator); one with neither is an
error.

Tidelog reads three message folders, oldest first (:data:`MESSAGE_LAYERS`): ``messages`` (an older
trunk that still defines the versions 4.0 removed), ``messages-4.1`` and ``messages-4.4`` (Kafka 4.4.0).
For each message, the versions inside a newer folder's ``validVersions`` follow the newer file and the
others follow the older one; :func:`merge_specs` builds one spec that covers the union, field by field.
Files are matched by API key and type, so a renamed API (key 74, ``ListConfigResources`` since 4.1)
keeps its newest name. ``records-4.4`` holds the ``coordinator-key`` / ``coordinator-value`` schemas of the
keys and values in Kafka's internal topics (``__consumer_offsets``, ``__share_group_state``,
``__transaction_state``); they are loaded as they are (:func:`load_records`).

This module only reads files; it is part of the development tool :mod:`tools.codegen` and never
imported by the broker at run time. Objects here are immutable after loading.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

MAX_VERSION = 0x7FFF

PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "string", "bytes", "records", "uuid"}
)


@dataclass(frozen=True)
class Versions:
    """A set of versions, as sorted disjoint inclusive ranges."""

    ranges: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none" or text == "":
            return cls()
        text = text.strip()
        if text.endswith("+"):
            return cls(((int(text[:-1]), MAX_VERSION),))
        if "-" in text:
            lo, hi = text.split("-")
            return cls(((int(lo), int(hi)),))
        v = int(text)
        return cls(((v, v),))

    @classmethod
    def of(cls, lo: int, hi: int) -> Versions:
        return cls(((lo, hi),)) if lo <= hi else cls()

    def __contains__(self, version: int) -> bool:
        return any(lo <= version <= hi for lo, hi in self.ranges)

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __iter__(self):
        for lo, hi in self.ranges:
            yield from range(lo, min(hi, MAX_VERSION) + 1)

    @property
    def lowest(self) -> int:
        return self.ranges[0][0]

    @property
    def highest(self) -> int:
        return self.ranges[-1][1]

    def intersect(self, other: Versions) -> Versions:
        out = []
        for a_lo, a_hi in self.ranges:
            for b_lo, b_hi in other.ranges:
                lo, hi = max(a_lo, b_lo), min(a_hi, b_hi)
                if lo <= hi:
                    out.append((lo, hi))
        return Versions._normalize(out)

    def union(self, other: Versions) -> Versions:
        return Versions._normalize([*self.ranges, *other.ranges])

    def minus(self, other: Versions) -> Versions:
        out = []
        for lo, hi in self.ranges:
            pieces = [(lo, hi)]
            for b_lo, b_hi in other.ranges:
                nxt = []
                for p_lo, p_hi in pieces:
                    if b_hi < p_lo or b_lo > p_hi:
                        nxt.append((p_lo, p_hi))
                        continue
                    if p_lo < b_lo:
                        nxt.append((p_lo, b_lo - 1))
                    if b_hi < p_hi:
                        nxt.append((b_hi + 1, p_hi))
                pieces = nxt
            out.extend(pieces)
        return Versions._normalize(out)

    @staticmethod
    def _normalize(ranges: list[tuple[int, int]]) -> Versions:
        ranges = sorted(r for r in ranges if r[0] <= r[1])
        merged: list[tuple[int, int]] = []
        for lo, hi in ranges:
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        return Versions(tuple(merged))

    def __str__(self) -> str:
        if not self.ranges:
            return "none"
        parts = []
        for lo, hi in self.ranges:
            parts.append(f"{lo}+" if hi == MAX_VERSION else (f"{lo}" if lo == hi else f"{lo}-{hi}"))
        return ",".join(parts)


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str  # "int32", "string", "[]int32", "[]SomeStruct", "SomeStruct"
    versions: Versions
    nullable_versions: Versions = Versions()
    tagged_versions: Versions = Versions()
    tag: int | None = None
    flexible_versions: Versions | None = None  # field-level override (RequestHeader.ClientId)
    default: str | None = None
    ignorable: bool = False
    about: str = ""
    fields: tuple[FieldSpec, ...] = ()  # for struct types defined inline

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES


@dataclass(frozen=True)
class StructSpec:
    name: str
    versions: Versions
    fields: tuple[FieldSpec, ...]


@dataclass(frozen=True)
class MessageSpec:
    name: str
    type: str  # request | response | header | data
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    fields: tuple[FieldSpec, ...]
    common_structs: tuple[StructSpec, ...] = ()
    listeners: tuple[str, ...] = ()
    latest_version_unstable: bool = False
    sources: tuple[str, ...] = field(default=())


_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)
_TRAILING_COMMENT = re.compile(r'("(?:[^"\\]|\\.)*")|//[^\n]*')


def _strip_comments(text: str) -> str:
    # Keep string literals intact; drop // comments elsewhere.
    return _TRAILING_COMMENT.sub(lambda m: m.group(1) or "", text)


def _default_text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class SpecError(ValueError):
    """A spec file the generator cannot read."""


def _field(raw: dict) -> FieldSpec:
    tagged = Versions.parse(raw.get("taggedVersions"))
    if "versions" not in raw and not tagged:
        raise SpecError(f"field {raw.get('name')!r} has neither versions nor taggedVersions")
    return FieldSpec(
        name=raw["name"],
        type=raw["type"],
        versions=Versions.parse(raw["versions"]) if "versions" in raw else tagged,
        nullable_versions=Versions.parse(raw.get("nullableVersions")),
        tagged_versions=tagged,
        tag=raw.get("tag"),
        flexible_versions=Versions.parse(raw["flexibleVersions"]) if "flexibleVersions" in raw else None,
        default=_default_text(raw.get("default")),
        ignorable=bool(raw.get("ignorable", False)),
        about=raw.get("about", ""),
        fields=tuple(_field(f) for f in raw.get("fields", ())),
    )


def load_file(path: Path) -> MessageSpec:
    raw = json.loads(_strip_comments(path.read_text(encoding="utf-8")))
    return MessageSpec(
        name=raw["name"],
        type=raw["type"],
        api_key=raw.get("apiKey"),
        valid_versions=Versions.parse(raw.get("validVersions")),
        flexible_versions=Versions.parse(raw.get("flexibleVersions")),
        fields=tuple(_field(f) for f in raw.get("fields", ())),
        common_structs=tuple(
            StructSpec(s["name"], Versions.parse(s.get("versions")), tuple(_field(f) for f in s["fields"]))
            for s in raw.get("commonStructs", ())
        ),
        listeners=tuple(raw.get("listeners", ())),
        latest_version_unstable=bool(raw.get("latestVersionUnstable", False)),
        sources=(f"{path.parent.name}/{path.name}",),
    )


# ---------------------------------------------------------------------------------------------- merging


class SpecConflict(Exception):
    """The two spec folders disagree in a way the merge cannot express."""


def _restrict(f: FieldSpec, allowed: Versions) -> FieldSpec:
    return replace(
        f,
        versions=f.versions.intersect(allowed),
        nullable_versions=f.nullable_versions.intersect(allowed),
        tagged_versions=f.tagged_versions.intersect(allowed),
        fields=tuple(_restrict(c, allowed) for c in f.fields),
    )


def _merge_field(a: FieldSpec, b: FieldSpec, where: str) -> FieldSpec:
    """Merge field ``a`` (older folder, restricted) with ``b`` (newer folder, restricted)."""
    if not a.versions:
        return b
    if not b.versions:
        return a
    if a.element_type != b.element_type and not (a.is_struct and b.is_struct):
        raise SpecConflict(f"{where}.{a.name}: type {a.type} vs {b.type}")
    if a.is_array != b.is_array:
        raise SpecConflict(f"{where}.{a.name}: array vs non-array")
    if a.tag != b.tag and a.tagged_versions and b.tagged_versions:
        raise SpecConflict(f"{where}.{a.name}: tag {a.tag} vs {b.tag}")
    if a.default != b.default:
        raise SpecConflict(f"{where}.{a.name}: default {a.default!r} vs {b.default!r}")
    return replace(
        b,
        versions=a.versions.union(b.versions),
        nullable_versions=a.nullable_versions.union(b.nullable_versions),
        tagged_versions=a.tagged_versions.union(b.tagged_versions),
        tag=b.tag if b.tag is not None else a.tag,
        ignorable=a.ignorable or b.ignorable,
        fields=_merge_fields(a.fields, b.fields, f"{where}.{a.name}"),
    )


def _merge_fields(old: tuple[FieldSpec, ...], new: tuple[FieldSpec, ...], where: str) -> tuple[FieldSpec, ...]:
    """Merge two ordered field lists by name, keeping both orders (a shortest common supersequence)."""
    old = tuple(f for f in old if f.versions)
    new_names = [f.name for f in new]
    old_by_name = {f.name: f for f in old}
    out: list[FieldSpec] = []
    i = 0
    for f in new:
        if f.name in old_by_name:
            # Emit old-only fields that come before this one in the old order.
            while i < len(old) and old[i].name != f.name:
                if old[i].name not in new_names:
                    out.append(old[i])
                i += 1
            if i == len(old):
                raise SpecConflict(f"{where}: field order of {f.name} differs between folders")
            out.append(_merge_field(old[i], f, where))
            i += 1
        else:
            out.append(f)
    while i < len(old):
        if old[i].name not in new_names:
            out.append(old[i])
        i += 1
    return tuple(x for x in out if x.versions)


def _check_disjoint_positional(fields: tuple[FieldSpec, ...], where: str) -> None:
    for f in fields:
        _check_disjoint_positional(f.fields, f"{where}.{f.name}")


def merge_specs(old: MessageSpec | None, new: MessageSpec | None) -> MessageSpec:
    """One spec covering the union of both folders' versions; the newer folder wins where both define one."""
    if old is None:
        assert new is not None
        return new
    if new is None:
        return old
    old_only = old.valid_versions.minus(new.valid_versions)
    if not old_only:
        return new
    where = new.name
    old_fields = tuple(_restrict(f, old_only) for f in old.fields)
    new_fields = tuple(_restrict(f, new.valid_versions) for f in new.fields)
    fields = _merge_fields(old_fields, new_fields, where)
    structs: dict[str, StructSpec] = {}
    for s in new.common_structs:
        structs[s.name] = StructSpec(s.name, s.versions, tuple(_restrict(f, new.valid_versions) for f in s.fields))
    for s in old.common_structs:
        restricted = tuple(_restrict(f, old_only) for f in s.fields)
        if s.name in structs:
            cur = structs[s.name]
            structs[s.name] = StructSpec(
                s.name, cur.versions.union(s.versions), _merge_fields(restricted, cur.fields, f"{where}.{s.name}")
            )
        else:
            structs[s.name] = StructSpec(s.name, s.versions, restricted)
    flexible = old.flexible_versions.intersect(old_only).union(new.flexible_versions.intersect(new.valid_versions))
    return MessageSpec(
        name=new.name,
        type=new.type,
        api_key=new.api_key,
        valid_versions=old.valid_versions.union(new.valid_versions),
        flexible_versions=flexible,
        fields=fields,
        common_structs=tuple(structs.values()),
        listeners=tuple(dict.fromkeys((*new.listeners, *old.listeners))),
        latest_version_unstable=new.latest_version_unstable,
        sources=(*old.sources, *new.sources),
    )


def default_spec_root() -> Path:
    """``../shared/kafka-protocol`` next to the repository (the generator's input)."""
    repo = Path(__file__).resolve().parents[2]
    return repo.parent / "shared" / "kafka-protocol"


#: The message folders, oldest first: each newer one's ``validVersions`` wins over the older ones'.
MESSAGE_LAYERS = ("messages", "messages-4.1", "messages-4.4")
#: The folder of the internal-topic record schemas (Kafka 4.4's coordinator records).
RECORDS_DIR = "records-4.4"
#: The ``type`` of a record schema: Kafka 4.x's coordinator records (the key's int16 prefix on disk is the
#: record type, ``apiKey``; the key schema itself has version 0), or the older ``data``.
RECORD_TYPES = ("coordinator-key", "coordinator-value", "data")


def _identity(spec: MessageSpec) -> tuple:
    """What makes two files of different folders the same message: the API key and the type (key 74 is
    ``ListClientMetricsResources`` before Kafka 4.1 and ``ListConfigResources`` after), else the name."""
    return (spec.api_key, spec.type) if spec.api_key is not None else (None, spec.name)


def load_all(root: Path | None = None) -> list[MessageSpec]:
    """Every message of the :data:`MESSAGE_LAYERS`, merged by API key and type (the newest folder's name
    and layout win where it defines a version), sorted by (api key, type)."""
    root = root or default_spec_root()
    merged: dict[tuple, MessageSpec] = {}
    for layer in MESSAGE_LAYERS:
        for path in sorted((root / layer).glob("*.json")):
            spec = load_file(path)
            ident = _identity(spec)
            merged[ident] = merge_specs(merged.get(ident), spec)
    specs = [s for s in merged.values() if s.valid_versions]
    specs.sort(key=lambda s: (s.api_key if s.api_key is not None else -1, s.type, s.name))
    return specs


def load_records(root: Path | None = None) -> list[MessageSpec]:
    """The internal-topic record schemas of :data:`RECORDS_DIR`, sorted by name."""
    root = root or default_spec_root()
    specs = [load_file(p) for p in sorted((root / RECORDS_DIR).glob("*.json"))]
    for spec in specs:
        if spec.type not in RECORD_TYPES:
            raise SpecError(f"{spec.sources[0]}: type {spec.type!r}, expected one of {RECORD_TYPES}")
    return specs
