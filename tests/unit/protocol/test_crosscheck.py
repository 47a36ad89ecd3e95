"""Cross-check our codec against an independent implementation: kio (https://github.com/Aiven-Open/kio).

kio is generated from Apache Kafka's JSON specs by other people, with other code: its readers are a Rust
extension, its writers pure Python. For every (API key, version) that both define, request and response,
plus the request and response headers:

* ``test_schemas_agree``: both see the same fields in the same wire order, with the same types, tags and
  nullability (modulo kio's richer Python types, listed in ``KIO_SEMANTIC_TYPES``);
* ``test_kio_reads_and_rewrites_our_bytes``: a generated value is encoded by us, decoded by kio (which must
  consume exactly all bytes and see the same field values), re-encoded by kio to the very same bytes,
  and those bytes decode back with us to the value we started from;
* ``test_defaults_crosscheck``: the same for the all-defaults value of each message.

Versions only one side defines are listed as skipped with the reason: kio follows Kafka ~4.3 and has
dropped what Kafka 4.0 removed (KIP-896), while our layouts come from Kafka 4.4's files (then 4.1's, and an older
pre-4.0 folder for the versions 4.x removed).

What kio's Python types cannot hold is not generated (see ``kio_primitive``): error codes outside its
``ErrorCode`` enum, negative timestamps (kio rejects them, except -1 as null where its field is Optional),
timestamps and durations too large for ``datetime`` (we stay below 2**42 ms), and
unknown tagged fields: KIP-482 says a reader skips tags it does not know, but kio 0.6.5's reader raises
``KeyError('Unknown tagged field tag: N')`` (and its entities could not carry them back anyway).

``TIDELOG_CROSSCHECK_EXAMPLES=200 pytest tests/unit/protocol/test_crosscheck.py`` searches deeper.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import os
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.protocol.strategies import primitive
from tidelog.protocol.message import FieldInfo, Message, in_ranges
from tidelog.protocol.messages import (
    API_MESSAGES,
    DeleteGroupsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    RequestHeader,
    ResponseHeader,
)
from tools.codegen.spec import default_spec_root, load_file

kio = pytest.importorskip("kio", reason="kio is not installed (pip install -e '.[bench]'): no cross-check")

from kio.schema.errors import ErrorCode  # noqa: E402
from kio.schema.index import api_key_map, schema_name_map  # noqa: E402
from kio.serial import entity_reader, entity_writer  # noqa: E402
from kio.serial._introspect import classify_field, is_optional  # noqa: E402  (how kio's own writer reads its types)
from kio.static.constants import EntityType  # noqa: E402

# kio types some integer fields by meaning; on the wire they are the plain integer.
KIO_SEMANTIC_TYPES = {
    "error_code": "int16",  # kio.schema.errors.ErrorCode (an IntEnum)
    "timedelta_i32": "int32",  # datetime.timedelta
    "timedelta_i64": "int64",  # datetime.timedelta
    "datetime_i64": "int64",  # aware datetime.datetime (nullable ones map -1 to None)
}
# kio's datetime and uuid fields are Optional even where the spec's are not: -1 / the zero UUID read as None.
KIO_NONE_AS_SENTINEL = {"datetime_i64": -1, "uuid": uuid.UUID(int=0)}
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
ERROR_CODES = sorted(int(e) for e in ErrorCode)
MAX_TIMESTAMP_MS = 2**42  # year 2109: well inside what kio's datetimes round-trip exactly
MAX_DURATION_MS = 2**42  # well inside datetime.timedelta's range

EXAMPLES = settings(
    # A few examples per pair keep the file under a minute; raise it for a deeper one-off search.
    max_examples=int(os.environ.get("TIDELOG_CROSSCHECK_EXAMPLES", "5")),
    deadline=None,
    derandomize=True,  # the same examples every run: a failure reproduces, an xfail(strict=True) stays strict
    database=None,
    suppress_health_check=list(HealthCheck),
)

# Values that once showed a bug in our codec (found by this cross-check), kept as regression cases: the
# value-test of each pair checks its value first.
_MIN_ITEM_SIZE_BUG = (
    "fixed bug: for a []string field present in classic and flexible versions, the array length bound "
    "used the classic item size (2) for compact arrays too, though a compact string can be 1 byte"
)
REGRESSION_VALUES: dict[tuple[str, int], tuple[str, Callable[[], Message]]] = {
    # 03 01 01 00: 'array of 2 items cannot fit in the 3 bytes left'
    ("DeleteGroupsRequest", 2): (_MIN_ITEM_SIZE_BUG, lambda: DeleteGroupsRequest(groups_names=["", ""])),
    # 04 01 01 01 00 00: 'array of 3 items cannot fit in the 5 bytes left'
    ("DescribeGroupsRequest", 5): (_MIN_ITEM_SIZE_BUG, lambda: DescribeGroupsRequest(groups=["", "", ""])),
    ("DescribeGroupsRequest", 6): (_MIN_ITEM_SIZE_BUG, lambda: DescribeGroupsRequest(groups=["", "", ""])),
    # 07 01x6 00000000 00: 'array of 6 items cannot fit in the 11 bytes left'
    ("DeleteTopicsRequest", 4): (_MIN_ITEM_SIZE_BUG, lambda: DeleteTopicsRequest(topic_names=[""] * 6)),
    ("DeleteTopicsRequest", 5): (_MIN_ITEM_SIZE_BUG, lambda: DeleteTopicsRequest(topic_names=[""] * 6)),
    # 02 00 01 06 01x5 00 00 00 00: 'array of 5 items cannot fit in the 9 bytes left'
    ("DescribeConfigsRequest", 4): (
        _MIN_ITEM_SIZE_BUG,
        lambda: DescribeConfigsRequest(
            resources=[DescribeConfigsRequest.DescribeConfigsResource(configuration_keys=[""] * 5)]
        ),
    ),
}


# --------------------------------------------------------------------------- pairing our classes with kio's


@dataclasses.dataclass(frozen=True)
class Pair:
    ours: type[Message]
    kio: type | None
    version: int
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.ours.__name__}-v{self.version}"


def _kio_entity(path: str) -> type:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _kio_lacks(ours: type[Message], version: int) -> str:
    """Why kio lacks a version we have: below Kafka 4.x's ``validVersions``, we take it from the old folder."""
    path = default_spec_root() / "messages-4.4" / f"{ours.__name__}.json"
    if not path.exists():
        return f"kio lacks {ours.__name__} v{version}; Kafka 4.x no longer defines it"
    valid = load_file(path).valid_versions
    if version in valid:  # kio follows Kafka ~4.3: a version 4.4 added
        return f"kio lacks {ours.__name__} v{version}: kio follows Kafka ~4.3, Kafka 4.4 defines it ({valid.ranges})"
    return (
        f"kio lacks {ours.__name__} v{version}: Kafka 4.x no longer defines it (4.4 has "
        f"{', '.join(f'{lo}-{hi}' if lo != hi else str(lo) for lo, hi in valid.ranges) or 'none'}); "
        "our codec takes it from the pre-4.0 spec folder"
    )


def _pairs() -> list[Pair]:
    pairs: list[Pair] = []
    for key, (req, resp) in sorted(API_MESSAGES.items()):
        name = api_key_map.get(key)
        kio_versions = schema_name_map[name] if name is not None else {}
        for ours, kind in ((req, EntityType.request), (resp, EntityType.response)):
            ours_versions = range(ours.MIN_VERSION, ours.MAX_VERSION + 1)
            for v in sorted(set(ours_versions) | set(kio_versions)):
                if name is None:
                    pairs.append(
                        Pair(
                            ours,
                            None,
                            v,
                            f"kio has no API key {key} ({req.__name__[:-7]}): Kafka 4.0 removed it",
                        )
                    )
                elif v not in kio_versions or kind not in kio_versions[v]:
                    pairs.append(Pair(ours, None, v, _kio_lacks(ours, v)))
                elif v not in ours_versions:
                    pairs.append(
                        Pair(
                            ours,
                            None,
                            v,
                            f"our codec lacks {ours.__name__} v{v}: kio follows Kafka ~4.3, "
                            "our specs are Kafka 4.4's",
                        )
                    )
                else:
                    pairs.append(Pair(ours, _kio_entity(kio_versions[v][kind]), v))
    for ours, name in ((RequestHeader, "request_header"), (ResponseHeader, "response_header")):
        kio_versions = schema_name_map[name]
        for v in range(ours.MIN_VERSION, ours.MAX_VERSION + 1):
            if v in kio_versions:
                pairs.append(Pair(ours, _kio_entity(kio_versions[v][EntityType.header]), v))
            else:
                pairs.append(
                    Pair(
                        ours, None, v, f"kio has no {ours.__name__} v{v}: only ControlledShutdown v0 used it"
                    )
                )
    return pairs


PAIRS = _pairs()


def _params(test: str) -> list:
    params = []
    for p in PAIRS:
        marks = []
        if p.skip:
            marks.append(pytest.mark.skip(reason=p.skip))
        params.append(pytest.param(p, id=p.id, marks=marks))
    return params


def fields_at(cls: type, version: int) -> list[FieldInfo]:
    return [f for f in cls.SCHEMA if in_ranges(version, f.versions)]


def paired_fields(ours: type, kio_cls: type, version: int) -> list[tuple[FieldInfo, dataclasses.Field]]:
    return list(zip(fields_at(ours, version), dataclasses.fields(kio_cls), strict=True))


def kio_type(kf: dataclasses.Field) -> str | None:
    return kf.metadata.get("kafka_type")


def kio_inner_class(kf: dataclasses.Field) -> type:
    """The entity class of a kio struct or struct-array field (``X``, ``X | None``, ``tuple[X, ...]``)."""
    return classify_field(kf).type_


def kio_is_optional(kf: dataclasses.Field) -> bool:
    return is_optional(kf)


# --------------------------------------------------------------------------- values kio can hold


def kio_primitive(elem: str, kf: dataclasses.Field) -> st.SearchStrategy:
    kt = kio_type(kf)
    if kt == "error_code":
        return st.sampled_from(ERROR_CODES)
    if kt == "timedelta_i64":
        return st.one_of(st.sampled_from([0, -1, 1]), st.integers(-MAX_DURATION_MS, MAX_DURATION_MS))
    if kt == "datetime_i64":
        valid = st.one_of(st.sampled_from([0, 1_700_000_000_000]), st.integers(0, MAX_TIMESTAMP_MS))
        # kio reads -1 as None in its Optional datetimes, and rejects every other negative timestamp.
        return st.one_of(st.just(-1), valid) if kio_is_optional(kf) else valid
    return primitive(elem)


def value_for(ours: type, kio_cls: type, version: int) -> st.SearchStrategy:
    """Values of ``ours`` at ``version`` that kio's types can represent; no unknown tagged fields."""
    kwargs = {}
    for f, kf in paired_fields(ours, kio_cls, version):
        if f.struct is not None:
            inner = value_for(f.struct, kio_inner_class(kf), version)
        else:
            inner = kio_primitive(f.type.removeprefix("[]"), kf)
        value = st.lists(inner, max_size=3) if f.type.startswith("[]") else inner
        if in_ranges(version, f.nullable_versions):
            value = st.one_of(st.none(), value)
        kwargs[f.name] = value
    return st.builds(ours, **kwargs)


# --------------------------------------------------------------------------- kio values back into ours


def _millis(value: Any) -> int:
    if isinstance(value, datetime.datetime):
        value = value - EPOCH
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    return (micros + 500) // 1000  # kio's writer rounds too


def _plain(value: Any, f: FieldInfo, kf: dataclasses.Field, version: int) -> Any:
    if f.struct is not None:
        return to_ours(value, f.struct, version)
    if isinstance(value, datetime.datetime | datetime.timedelta):
        return _millis(value)
    if isinstance(value, ErrorCode):
        return int(value)
    return value


def to_ours(kio_obj: Any, ours: type, version: int) -> Any:
    """kio's decoded entity as an instance of our class, converting kio's richer types back to the wire's."""
    kwargs = {}
    for f, kf in paired_fields(ours, type(kio_obj), version):
        value = getattr(kio_obj, kf.name)
        if value is None and not in_ranges(version, f.nullable_versions):
            value = KIO_NONE_AS_SENTINEL.get(kio_type(kf) or "")
        elif value is not None and f.type.startswith("[]"):
            value = [_plain(v, f, kf, version) for v in value]
        elif value is not None:
            value = _plain(value, f, kf, version)
        kwargs[f.name] = value
    return ours(**kwargs)


# --------------------------------------------------------------------------- the checks


def crosscheck(pair: Pair, value: Message) -> None:
    ours, version = pair.ours, pair.version
    assert pair.kio is not None
    wire = value.encode(version)
    kio_obj, end = entity_reader(pair.kio)(wire, 0)
    assert end == len(wire), f"kio read {end} of our {len(wire)} bytes"
    assert to_ours(kio_obj, ours, version) == value, "kio decoded other field values than we encoded"
    out = io.BytesIO()
    entity_writer(pair.kio)(out, kio_obj)
    kio_wire = out.getvalue()
    assert kio_wire == wire, f"kio re-encoded other bytes:\n ours {wire.hex()}\n kio  {kio_wire.hex()}"
    assert ours.decode(kio_wire, version, strict=True) == value


# Fields Kafka 4.4 renamed after the ~4.3 specs kio follows (same wire layout): our name -> kio's.
KAFKA_44_RENAMES = {
    "TxnOffsetCommitRequest.generation_id_or_member_epoch": "generation_id",  # KIP-1251 (TxnOffsetCommit v6)
    "StreamsGroupHeartbeatResponse.acceptable_recovery_lag_legacy": "acceptable_recovery_lag",  # KIP-1071
}


def _normalized_name(f: FieldInfo, kf: dataclasses.Field) -> str:
    name = kf.name.removesuffix("_")  # kio appends "_" to names that shadow builtins ("id_")
    if kio_type(kf) in ("timedelta_i32", "timedelta_i64", "datetime_i64") and f.name.endswith("_ms"):
        name += "_ms"  # kio drops the unit from fields it types as durations or datetimes
    return name


def _schema_differences(ours: type, kio_cls: type, version: int, path: str) -> list[str]:
    ours_fields, kio_fields = fields_at(ours, version), dataclasses.fields(kio_cls)
    if len(ours_fields) != len(kio_fields):
        return [
            f"{path}: fields {[f.name for f in ours_fields]} (ours) vs {[kf.name for kf in kio_fields]} (kio)"
        ]
    out = []
    for f, kf in zip(ours_fields, kio_fields):
        where = f"{path}.{f.name}"
        if _normalized_name(f, kf) != f.name and KAFKA_44_RENAMES.get(where) != kf.name:
            out.append(f"{where}: kio names it {kf.name!r}")
        tag = f.tag if in_ranges(version, f.tagged_versions) else None
        kio_tag = kf.metadata.get("tag")
        if tag != kio_tag:
            out.append(f"{where}: tag {tag} (ours) vs {kio_tag} (kio)")
        nullable = in_ranges(version, f.nullable_versions)
        kt = kio_type(kf)
        if (
            kio_tag is None
            and nullable != kio_is_optional(kf)
            and not (kt in KIO_NONE_AS_SENTINEL and not nullable)
        ):
            out.append(f"{where}: nullable {nullable} (ours) vs {kio_is_optional(kf)} (kio)")
        if f.struct is not None:
            out += _schema_differences(f.struct, kio_inner_class(kf), version, where)
        else:
            elem = f.type.removeprefix("[]")
            if KIO_SEMANTIC_TYPES.get(kt or "", kt) != elem:
                out.append(f"{where}: type {elem} (ours) vs {kt} (kio)")
    return out


def test_kio_pairs_cover_both_sides() -> None:
    checked = [p for p in PAIRS if p.skip is None]
    assert len(checked) >= 588, len(checked)  # 584 (API, version) request/response pairs + 4 headers today
    for p in checked:
        assert p.kio is not None
        assert p.kio.__name__ == p.ours.__name__, (p.kio, p.ours)
        if p.ours.API_KEY is not None:
            assert p.kio.__api_key__ == p.ours.API_KEY
            assert p.kio.__version__ == p.version
        assert p.kio.__flexible__ == p.ours.is_flexible(p.version), p.id


@pytest.mark.parametrize("pair", _params("schema"))
def test_schemas_agree(pair: Pair) -> None:
    assert pair.kio is not None
    assert _schema_differences(pair.ours, pair.kio, pair.version, pair.ours.__name__) == []


@pytest.mark.parametrize("pair", _params("values"))
@EXAMPLES
@given(data=st.data())
def test_kio_reads_and_rewrites_our_bytes(pair: Pair, data: st.DataObject) -> None:
    assert pair.kio is not None
    known = REGRESSION_VALUES.get((pair.ours.__name__, pair.version))
    if known:
        crosscheck(pair, known[1]())
    crosscheck(pair, data.draw(value_for(pair.ours, pair.kio, pair.version), label="value"))


@pytest.mark.parametrize("pair", _params("defaults"))
def test_defaults_crosscheck(pair: Pair) -> None:
    crosscheck(pair, pair.ours())
