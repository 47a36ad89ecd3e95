"""How the console shows and takes message bytes, and how Kafka errors become HTTP answers."""

from __future__ import annotations

import json

import pytest

from tidelog.errors import ErrorCode
from tidelog.web.console.api_error import ApiError
from tidelog.web.console.render import MAX_FIELD_BYTES, encode, render


def test_auto_prefers_json_then_text_then_hex():
    assert render(b'{"a": [1, 2]}', "auto") == {"size": 13, "format": "json", "data": {"a": [1, 2]}}
    assert render("caf\u00e9".encode(), "auto") == {"size": 5, "format": "text", "data": "caf\u00e9"}
    assert render(b"\xff\x00", "auto") == {"size": 2, "format": "hex", "data": "ff00"}
    assert render(b"", "auto") == {"size": 0, "format": "text", "data": ""}
    assert render(None, "auto") is None


def test_an_explicit_format_is_kept_or_falls_back_visibly():
    assert render(b'{"a": 1}', "text")["format"] == "text"
    assert render(b"12", "hex") == {"size": 2, "format": "hex", "data": "3132"}
    assert render(b"not json", "json") == {"size": 8, "format": "text", "data": "not json"}
    assert render(b"\xff", "json")["format"] == "hex"
    assert render(b"\xffa", "text") == {"size": 2, "format": "text", "data": "\ufffda"}


def test_large_values_are_cut_and_say_so():
    big = json.dumps(["x" * 100] * 1000).encode()
    shown = render(big, "auto")
    assert shown["truncated"] is True and shown["size"] == len(big)
    assert shown["format"] == "text" and len(shown["data"]) == MAX_FIELD_BYTES
    deep = b"[" * 100_000 + b"]" * 100_000  # too deep for the JSON parser: shown, not a crash
    assert render(deep[:MAX_FIELD_BYTES // 2] + deep[-MAX_FIELD_BYTES // 2:], "auto")["format"] == "text"


@pytest.mark.parametrize("raw", [b"NaN", b"Infinity", b"-Infinity", b'{"x": NaN}', b"[1e400]", b'{"a": -1e999}'])
def test_what_only_python_takes_for_json_is_shown_as_text(raw):
    """Python's parser takes NaN, Infinity and overflowing numbers; strict JSON (what the API must send)
    has none of them: such a field is text, and the rendered field encodes as strict JSON."""
    shown = render(raw, "auto")
    assert shown == {"size": len(raw), "format": "text", "data": raw.decode()}
    json.dumps(shown, allow_nan=False)
    assert render(raw, "json")["format"] == "text"


def test_integers_beyond_javascripts_safe_range_carry_their_exact_text():
    big = 2**53 + 1
    shown = render(f'{{"id": {big}, "small": 7, "f": 1.5}}'.encode(), "auto")
    assert shown["format"] == "json" and shown["data"] == {"id": big, "small": 7, "f": 1.5}
    assert shown["exact"] == f'{{\n  "id": {big},\n  "small": 7,\n  "f": 1.5\n}}'
    assert render(str(-big).encode(), "auto")["exact"] == str(-big)
    assert "exact" not in render(str(2**53 - 1).encode(), "auto")  # still exact in JavaScript
    assert "exact" not in render(b'{"n": 12345678901234567890.5}', "auto")  # a float is a double on both sides


def test_produced_fields_are_encoded_by_format():
    assert encode("héllo", "text", "value") == "héllo".encode()
    assert encode({"a": 1}, "json", "value") == b'{"a": 1}'
    assert encode("00 ff", "hex", "key") == b"\x00\xff"
    assert encode(None, "hex", "key") is None
    for bad, fmt in (("0g", "hex"), ("abc", "hex"), (5, "text"), ([1], "hex")):
        with pytest.raises(ApiError) as e:
            encode(bad, fmt, "value")
        assert e.value.status == 400


@pytest.mark.parametrize("code, status", [
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 404), (ErrorCode.GROUP_ID_NOT_FOUND, 404),
    (ErrorCode.TOPIC_ALREADY_EXISTS, 409), (ErrorCode.NON_EMPTY_GROUP, 409),
    (ErrorCode.TOPIC_AUTHORIZATION_FAILED, 403), (ErrorCode.INVALID_CONFIG, 400),
    (ErrorCode.OFFSET_OUT_OF_RANGE, 400), (ErrorCode.NOT_LEADER_OR_FOLLOWER, 503),
    (ErrorCode.UNKNOWN_SERVER_ERROR, 500),
])
def test_kafka_errors_map_to_http_statuses_by_meaning(code, status):
    error = ApiError.from_kafka(code, "detail")
    assert (error.status, error.code, error.message) == (status, code.name, "detail")
    assert ApiError.from_kafka(int(code)).message == code.message
