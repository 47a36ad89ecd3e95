"""TubeMQ message payloads (attribute prefix, checksum) and their mapping onto Kafka keys and headers."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.protocol.tubemq.message import (
    ATTRIBUTE_FLAG,
    MSG_KEY,
    MSG_KEY_BASE64,
    MSG_TIME,
    MSG_TYPE,
    PayloadError,
    attribute_items,
    checksum,
    join_payload,
    message_attribute,
    record_from_message,
    split_payload,
)


def test_checksum_is_crc32_masked_to_31_bits() -> None:
    data = b"hello tubemq"
    assert checksum(data) == zlib.crc32(data) & 0x7FFFFFFF
    assert all(0 <= checksum(bytes([b])) < 2**31 for b in range(256))


def test_the_java_producers_payload_layout() -> None:
    # What SimpleMessageProducer.encodePayload writes for attribute "a=b" and body "xyz".
    payload = struct.pack(">i", 3) + b"a=bxyz"
    assert split_payload(payload, ATTRIBUTE_FLAG) == ("a=b", b"xyz")
    assert join_payload("a=b", b"xyz") == (payload, ATTRIBUTE_FLAG)
    assert join_payload("", b"xyz") == (b"xyz", 0)  # no attribute: the plain body, flag 0
    assert split_payload(b"xyz", 0) == (None, b"xyz")


@given(attribute=st.text(min_size=1, max_size=50), body=st.binary(max_size=100))
def test_payloads_round_trip(attribute: str, body: bytes) -> None:
    payload, flag = join_payload(attribute, body)
    assert split_payload(payload, flag) == (attribute, body)


@pytest.mark.parametrize(("payload", "problem"), [
    (b"\x00\x00", "has only 2 bytes"),
    (struct.pack(">i", 10) + b"abc", "attribute length 10 does not fit"),
    (struct.pack(">i", -1) + b"abc", "attribute length -1 does not fit"),
    (struct.pack(">i", 2) + b"\xff\xfe", "not UTF-8"),
])
def test_a_payload_whose_attribute_prefix_does_not_fit_is_refused(payload: bytes, problem: str) -> None:
    with pytest.raises(PayloadError, match=problem):
        split_payload(payload, ATTRIBUTE_FLAG)


def test_attribute_items_become_headers_in_order() -> None:
    assert attribute_items("$msgType$=t,$msgTime$=202601010000,k=v=w,bare,,=x") == [
        (MSG_TYPE, b"t"), (MSG_TIME, b"202601010000"), ("k", b"v=w"), ("bare", None), ("", b"x")]
    assert attribute_items(None) == [] and attribute_items("") == []


def test_the_key_travels_as_msgkey_and_the_send_requests_type_and_time_as_headers() -> None:
    key, headers = record_from_message("k=v,$msgKey$=user-1", msg_type="click", msg_time="202601011200")
    assert key == b"user-1"
    assert headers == [(MSG_TYPE, b"click"), (MSG_TIME, b"202601011200"), ("k", b"v")]
    key, headers = record_from_message(f"{MSG_KEY_BASE64}={base64.b64encode(bytes(range(4))).decode()}")
    assert (key, headers) == (bytes(range(4)), [])
    key, headers = record_from_message(f"{MSG_KEY_BASE64}=not base64!")  # not base64: an ordinary header
    assert (key, headers) == (None, [(MSG_KEY_BASE64, b"not base64!")])
    # The attribute's own $msgType$ wins over the request field (it is not added twice).
    assert record_from_message("$msgType$=a", msg_type="b") == (None, [(MSG_TYPE, b"a")])


def test_a_kafka_records_attribute_puts_system_headers_and_the_key_first() -> None:
    attribute, dropped = message_attribute(b"k1", [("x", b"1"), (MSG_TIME, b"202601011200"), (MSG_TYPE, b"t")])
    assert (attribute, dropped) == ("$msgTime$=202601011200,$msgType$=t,$msgKey$=k1,x=1", 0)
    attribute, dropped = message_attribute(b"a,b", [("bad,name", b"v"), ("bad=name", b"v"), ("v", b"a,b"),
                                                     ("bin", b"\xff"), ("null", None), ("eq", b"a=b")])
    assert attribute == f"{MSG_KEY_BASE64}={base64.b64encode(b'a,b').decode()},null,eq=a=b"
    assert dropped == 4


#: Header names other than the two the key travels in (reserved: docs/tubemq.md).
header_names = st.text(max_size=16).filter(lambda n: n not in (MSG_KEY, MSG_KEY_BASE64))
headers_strategy = st.lists(st.tuples(header_names, st.one_of(st.none(), st.binary(max_size=8))), max_size=6)


@given(key=st.one_of(st.none(), st.binary(max_size=12)), headers=headers_strategy)
def test_kafka_records_come_back_from_their_attribute(key: bytes | None, headers: list) -> None:
    """Key exactly; every header an item can hold, in order (system ones first); the others counted."""
    attribute, dropped = message_attribute(key, headers)
    back_key, back_headers = record_from_message(attribute)
    assert back_key == key

    def carried(name: str, value: bytes | None) -> bool:
        if "," in name or "=" in name or (value is None and not name):
            return False
        if value is None:
            return True
        try:
            return "," not in value.decode("utf-8")
        except UnicodeDecodeError:
            return False

    kept = [(n, v) for n, v in headers if carried(n, v)]
    expected = [h for h in kept if h[0] in (MSG_TYPE, MSG_TIME)] + [h for h in kept if h[0] not in (MSG_TYPE, MSG_TIME)]
    assert back_headers == expected
    assert dropped == len(headers) - len(kept)
