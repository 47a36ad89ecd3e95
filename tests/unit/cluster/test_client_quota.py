"""AlterClientQuotas validation and DescribeClientQuotas filters: Kafka's controller's rules and
messages (ClientQuotaControlManager, ClientQuotasImage)."""

from __future__ import annotations

import pytest

from tidelog.cluster import client_quota as cq
from tidelog.cluster.client_quota import QuotaOp, entity
from tidelog.errors import ErrorCode, KafkaError


def alter(quotas, *entries):
    return cq.alter(quotas, list(entries))


@pytest.mark.parametrize(("components", "ops", "message"), [
    ([], [QuotaOp("producer_byte_rate", 1)], "Invalid empty client quota entity"),
    ([("group", "g")], [QuotaOp("producer_byte_rate", 1)], "Unhandled client quota entity type: group"),
    ([("user", "")], [QuotaOp("producer_byte_rate", 1)], "Empty user not supported"),
    ([("user", "a"), ("user", "b")], [], "Invalid client quota entity, duplicate entity entry user"),
    ([("user", "a"), ("ip", "1.2.3.4")], [], "Invalid quota entity combination, IP entity shouldnot be combined "
                                              "with User or ClientId"),
    ([("ip", "not an ip")], [], "not an ip is not a valid IP or resolvable host."),
    ([("user", "a")], [QuotaOp("connection_creation_rate", 1)], "Invalid configuration key connection_creation_rate"),
    ([("user", "a")], [QuotaOp("producer_byte_rate", -1)], "Quota producer_byte_rate must be greater than 0"),
    ([("user", "a")], [QuotaOp("producer_byte_rate", 0)], "Quota producer_byte_rate must be greater than 0"),
    ([("user", "a")], [QuotaOp("producer_byte_rate", 1.5)], "producer_byte_rate cannot be a fractional value."),
    ([("user", "a")], [QuotaOp("producer_byte_rate", 1e19)], "Proposed value for producer_byte_rate is too large "
                                                              "for a LONG."),
    ([("client-id", "c")], [QuotaOp("request_percentage", 1), QuotaOp("request_percentage", None)],
     "Duplicate quota key request_percentage not updating quota for this entity client-id=c"),
])
def test_invalid_entries_are_refused_with_kafkas_message(components, ops, message):
    quotas, [result] = alter({}, (components, ops))
    assert quotas == {}
    assert result.error is not None and result.error.code == ErrorCode.INVALID_REQUEST
    assert result.error.message == message


def test_valid_entries_apply_even_when_others_fail_and_removal_drops_empty_entities():
    quotas, results = alter(
        {},
        ([("user", "alice"), ("client-id", None)], [QuotaOp("producer_byte_rate", 1024), QuotaOp("request_percentage", 12.5)]),
        ([("user", "bob")], [QuotaOp("producer_byte_rate", -5)]),
        ([("client-id", None)], [QuotaOp("consumer_byte_rate", 2048)]),
    )
    assert [r.error is None for r in results] == [True, False, True]
    assert quotas == {entity(user="alice", client_id=None): {"producer_byte_rate": 1024.0, "request_percentage": 12.5},
                      entity(client_id=None): {"consumer_byte_rate": 2048.0}}
    quotas, _ = alter(quotas, ([("client-id", None)], [QuotaOp("consumer_byte_rate", None)]),
                      ([("user", "nobody")], [QuotaOp("producer_byte_rate", None)]))
    assert quotas == {entity(user="alice", client_id=None): {"producer_byte_rate": 1024.0, "request_percentage": 12.5}}


QUOTAS = {
    entity(user="alice"): {"producer_byte_rate": 1.0},
    entity(user=None): {"producer_byte_rate": 2.0},
    entity(user="alice", client_id="app"): {"producer_byte_rate": 3.0},
    entity(client_id="app"): {"consumer_byte_rate": 4.0},
    entity(ip="10.0.0.1"): {"connection_creation_rate": 5.0},
}


@pytest.mark.parametrize(("components", "strict", "expected"), [
    ([], False, list(QUOTAS)),
    ([], True, []),
    ([("user", 0, "alice")], False, [entity(user="alice"), entity(user="alice", client_id="app")]),
    ([("user", 0, "alice")], True, [entity(user="alice")]),
    ([("user", 1, None)], False, [entity(user=None)]),
    ([("user", 2, None)], True, [entity(user="alice"), entity(user=None)]),
    ([("client-id", 2, None)], False, [entity(user="alice", client_id="app"), entity(client_id="app")]),
    ([("user", 0, "alice"), ("client-id", 0, "app")], True, [entity(user="alice", client_id="app")]),
    ([("ip", 2, None)], False, [entity(ip="10.0.0.1")]),
])
def test_describe_filters(components, strict, expected):
    found = [e for e, _ in cq.describe(QUOTAS, components, strict)]
    assert set(found) == set(expected) and len(found) == len(expected)


@pytest.mark.parametrize(("components", "code", "message"), [
    ([("", 2, None)], ErrorCode.INVALID_REQUEST, "Invalid empty entity type."),
    ([("user", 2, None), ("user", 0, "a")], ErrorCode.INVALID_REQUEST,
     "Entity type user cannot appear more than once in the filter."),
    ([("group", 2, None)], ErrorCode.UNSUPPORTED_VERSION, "Unsupported entity type group"),
    ([("user", 0, None)], ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ([("user", 1, "a")], ErrorCode.INVALID_REQUEST,
     "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([("user", 2, "a")], ErrorCode.INVALID_REQUEST,
     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
    ([("user", 7, None)], ErrorCode.INVALID_REQUEST, "Unknown match type 7"),
    ([("ip", 2, None), ("user", 2, None)], ErrorCode.INVALID_REQUEST,
     "Invalid entity filter component combination. IP filter component should not be used with user or "
     "clientId filter component."),
])
def test_describe_refuses_bad_filters(components, code, message):
    with pytest.raises(KafkaError) as e:
        cq.describe(QUOTAS, components, False)
    assert (e.value.code, e.value.message) == (code, message)


@pytest.mark.parametrize(("name", "sanitized"), [
    ("alice", "alice"), ("CN=a b,O=x", "CN%3Da%20b%2CO%3Dx"), ("a*b+c~d", "a%2Ab%2Bc~d"), ("<default>", "%3Cdefault%3E"),
    ("ünï", "%C3%BCn%C3%AF"),
])
def test_sanitize_as_kafka(name, sanitized):
    assert cq.sanitize(name) == sanitized
    assert cq.desanitize(sanitized) == name


def test_json_round_trip():
    assert cq.from_json(cq.to_json(QUOTAS)) == QUOTAS
