"""The console's message search filters (web/console/scan.py) on decoded records."""

from __future__ import annotations

from tidelog.records.batch import iter_batches
from tidelog.records.builder import RecordBatchBuilder
from tidelog.web.console.scan import Filters


def _records(*records: tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]):
    builder = RecordBatchBuilder()
    for key, value, headers in records:
        builder.append(1000, key, value, headers)
    (batch,) = iter_batches(builder.build())
    return list(batch.records())


def _matching(filters: Filters, records) -> list[int]:
    return [r.offset for r in records if filters.matches(r)]


RECORDS = _records((b"order-17", b'{"item": "Tea"}', [("trace", b"abc-123")]),
                   (None, b"\xff\x00 tea", []),
                   (b"ORDER-18", None, [("spring_json_header_types", b'{"a": "java.lang.String"}'), ("x", None)]))


def test_no_filter_keeps_everything():
    assert not Filters.of(None, None, None, None).active
    assert _matching(Filters.of(None, None, None, None), RECORDS) == [0, 1, 2]
    assert _matching(Filters.of("", "", "", ""), RECORDS) == [0, 1, 2]  # empty means unset


def test_key_and_value_are_case_insensitive_substrings():
    assert _matching(Filters.of("order", None, None, None), RECORDS) == [0, 2]
    assert _matching(Filters.of(None, "TEA", None, None), RECORDS) == [0, 1]  # undecodable bytes don't hide text
    assert _matching(Filters.of("order-1", "tea", None, None), RECORDS) == [0]  # every filter must match


def test_header_by_name_or_name_and_value():
    assert _matching(Filters.of(None, None, "trace", None), RECORDS) == [0]
    assert _matching(Filters.of(None, None, "trace=ABC", None), RECORDS) == [0]
    assert _matching(Filters.of(None, None, "trace=zzz", None), RECORDS) == []
    assert _matching(Filters.of(None, None, "x", None), RECORDS) == [2]  # a null header value: present by name
    assert _matching(Filters.of(None, None, "Trace", None), RECORDS) == []  # header names are exact


def test_q_looks_in_key_value_and_headers():
    assert _matching(Filters.of(None, None, None, "java.lang"), RECORDS) == [2]
    assert _matching(Filters.of(None, None, None, "spring_json"), RECORDS) == [2]
    assert _matching(Filters.of(None, None, None, "18"), RECORDS) == [2]
    assert _matching(Filters.of(None, None, None, "123"), RECORDS) == [0]
    assert Filters.of("k", None, "h=v", "q").describe() == {"key": "k", "header": "h=v", "q": "q"}
