"""ShareGroupDescribe and StreamsGroupDescribe answers (tidelog.server.handlers.modern_groups.describe_groups):
refused groups first (as Kafka's KafkaApis) then the request's order, GROUP_AUTHORIZATION_FAILED and INVALID_GROUP_ID without asking the coordinator, each valid
group asked about once, authorized operations only when asked and only for groups that were found; a heartbeat's
topics the member may not DESCRIBE."""

from __future__ import annotations

import asyncio

import pytest

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import ApiKey, ShareGroupDescribeResponse, StreamsGroupDescribeResponse
from tidelog.protocol.messages.header import RequestHeader
from tidelog.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from tidelog.security.authorizer import Authorizer
from tidelog.security.principal import KafkaPrincipal
from tidelog.server.context import RequestContext
from tidelog.server.handlers.modern_groups import describe_groups, require_describable_topics

ALICE = KafkaPrincipal("User", "alice")


def _ctx() -> RequestContext:
    header = RequestHeader(request_api_key=ApiKey.SHARE_GROUP_DESCRIBE, request_api_version=1, correlation_id=1,
                           client_id="t")
    return RequestContext(header, "c1", "127.0.0.1", principal=ALICE, security_protocol="SASL_PLAINTEXT")


def _allow(operation: AclOperation, group: str) -> AclBinding:
    return AclBinding(ResourceType.GROUP, group, PatternType.LITERAL, str(ALICE), "*", operation,
                      AclPermissionType.ALLOW)


AUTHORIZER = Authorizer(lambda: frozenset({_allow(AclOperation.DESCRIBE, "seen"), _allow(AclOperation.READ, "read"),
                                          _allow(AclOperation.DESCRIBE, "gone"), _allow(AclOperation.DESCRIBE, "")}))


def _describe(response: type, include_authorized_operations: bool) -> tuple[list, list[list[str]]]:
    asked: list[list[str]] = []

    async def coordinator(valid: list[str]) -> list:  # what the group coordinator answers for groups it has
        asked.append(valid)
        return [response.DescribedGroup(group_id=g, error_code=int(ErrorCode.GROUP_ID_NOT_FOUND if g == "gone" else 0),
                                        group_epoch=7) for g in valid]

    groups = asyncio.run(describe_groups(_ctx(), AUTHORIZER, ["seen", "hidden", "", "read", "seen", "gone"],
                                         include_authorized_operations, coordinator, response.DescribedGroup))
    return groups, asked


def test_describe_answers_refused_groups_first_then_the_request_order_and_asks_only_about_valid_ones() -> None:
    for response in (ShareGroupDescribeResponse, StreamsGroupDescribeResponse):
        groups, asked = _describe(response, include_authorized_operations=False)
        assert asked == [["seen", "read", "gone"]]
        assert [(g.group_id, g.error_code) for g in groups] == [
            ("hidden", ErrorCode.GROUP_AUTHORIZATION_FAILED), ("seen", 0), ("", ErrorCode.INVALID_GROUP_ID),
            ("read", 0), ("seen", 0), ("gone", ErrorCode.GROUP_ID_NOT_FOUND)]
        assert [g.group_epoch for g in groups] == [0, 7, 0, 7, 7, 7]  # the refused ones were not described
        assert {g.authorized_operations for g in groups} == {-2147483648}  # not asked: Kafka's default


def test_authorized_operations_are_filled_in_for_found_groups_when_asked() -> None:
    groups, _ = _describe(ShareGroupDescribeResponse, include_authorized_operations=True)
    ops = {g.group_id: g.authorized_operations for g in groups}
    assert ops["seen"] == 1 << AclOperation.DESCRIBE
    assert ops["read"] == (1 << AclOperation.READ) | (1 << AclOperation.DESCRIBE)
    assert ops["gone"] == ops["hidden"] == -2147483648


def test_a_heartbeat_naming_topics_the_member_may_not_describe_is_refused_naming_them() -> None:
    topic_acl = AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, str(ALICE), "*", AclOperation.READ,
                           AclPermissionType.ALLOW)
    authorizer = Authorizer(lambda: frozenset({topic_acl}))
    require_describable_topics(_ctx(), authorizer, ["orders", "orders"])  # READ implies DESCRIBE
    with pytest.raises(KafkaError) as refused:
        require_describable_topics(_ctx(), authorizer, ["zeta", "orders", "alpha", "zeta"])
    assert refused.value.code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert refused.value.message == "The following topics are not authorized: alpha, zeta"
