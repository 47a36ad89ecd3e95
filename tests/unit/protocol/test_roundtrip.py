"""Round-trip every (message, version) the specs define with generated values, and every (record schema,
version) of Kafka's internal topics (:mod:`tidelog.protocol.coordinator_records`).

Encoding then decoding must give back an equal object, and encoding that again the same bytes.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tidelog.protocol.coordinator_records as coordinator_records
import tidelog.protocol.messages as messages
from tests.unit.protocol.strategies import message_value
from tidelog.protocol.message import Message

ALL_MESSAGES = [
    getattr(messages, name)
    for name in messages.__all__
    if isinstance(getattr(messages, name), type) and issubclass(getattr(messages, name), Message)
]
ALL_RECORDS = [getattr(coordinator_records, name) for name in coordinator_records.__all__]
CASES = [(cls, v) for cls in ALL_MESSAGES + ALL_RECORDS for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)]


def test_every_message_of_both_spec_folders_is_generated() -> None:
    assert len(ALL_MESSAGES) == 192  # 190 requests/responses in the union (94 API keys) + 2 headers
    assert len(ALL_RECORDS) == 50  # the 25 key/value pairs of ../shared/kafka-protocol/records-4.4
    assert len(CASES) >= 740 + 50  # every version of every message and record schema


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
def test_roundtrip(cls: type[Message], version: int, data: st.DataObject) -> None:
    value = data.draw(message_value(cls, version))
    encoded = value.encode(version)
    decoded = cls.decode(encoded, version, strict=True)
    assert decoded == value
    assert decoded.encode(version) == encoded


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
def test_defaults_roundtrip(cls: type[Message], version: int) -> None:
    value = cls()
    encoded = value.encode(version)
    assert cls.decode(encoded, version, strict=True) == value
