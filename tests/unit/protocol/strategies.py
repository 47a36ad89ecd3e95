"""Hypothesis strategies that build valid values of any generated message, for any version."""

from __future__ import annotations

from hypothesis import strategies as st

from tidelog.protocol.message import FieldInfo, Struct, in_ranges

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

# Unknown tags far above any tag the specs use, so they never collide with a known tagged field.
UNKNOWN_TAG_BASE = 10_000


def primitive(type_name: str) -> st.SearchStrategy:
    if type_name in INT_RANGES:
        lo, hi = INT_RANGES[type_name]
        return st.one_of(st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]), st.integers(lo, hi))
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        return st.floats(allow_nan=False)
    if type_name == "string":
        return st.text(max_size=12)
    if type_name in ("bytes", "records"):
        return st.binary(max_size=24)
    if type_name == "uuid":
        return st.uuids()
    raise ValueError(type_name)


def field_value(f: FieldInfo, version: int) -> st.SearchStrategy:
    elem = f.type[2:] if f.type.startswith("[]") else f.type
    if f.struct is not None:
        inner = struct_value(f.struct, version)
    else:
        inner = primitive(elem)
    value = st.lists(inner, max_size=3) if f.type.startswith("[]") else inner
    if in_ranges(version, f.nullable_versions):
        value = st.one_of(st.none(), value)
    return value


def unknown_tags() -> st.SearchStrategy:
    return st.lists(
        st.tuples(st.integers(UNKNOWN_TAG_BASE, UNKNOWN_TAG_BASE + 50), st.binary(max_size=6)),
        max_size=2,
        unique_by=lambda t: t[0],
    ).map(lambda tags: sorted(tags) or None)


def struct_value(cls: type[Struct], version: int, flexible: bool | None = None) -> st.SearchStrategy:
    """Instances of ``cls`` whose fields are set only where ``version`` has them."""
    kwargs = {}
    for f in cls.SCHEMA:
        if in_ranges(version, f.versions):
            kwargs[f.name] = field_value(f, version)
    if flexible:
        kwargs["unknown_tagged_fields"] = unknown_tags()
    return st.builds(cls, **kwargs)


def message_value(cls, version: int) -> st.SearchStrategy:
    return struct_value(cls, version, flexible=cls.is_flexible(version))
