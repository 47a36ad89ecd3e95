"""Group configs (ConfigResource GROUP = 32, KIP-848): described, altered, validated as Kafka 4.x does,
kept across restarts, and applied to the group's members."""

from __future__ import annotations

import time
import uuid

import pytest

from tidelog.protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = pytest.mark.integration

GROUP = 32
SET, DELETE = 0, 1
GROUP_CONFIG, DEFAULT_CONFIG = 8, 5
# A low floor, so that a group may ask for a session timeout short enough to test.
BROKER_OVERRIDES = {"group.consumer.min.session.timeout.ms": "1000", "group.consumer.min.heartbeat.interval.ms": "100"}


def _describe(client: WireClient, group: str) -> dict[str, tuple[str, int]]:
    request = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=GROUP, resource_name=group, configuration_keys=None)], include_synonyms=True)
    (result,) = client.request(request, 4).results
    assert result.error_code == 0, result.error_message
    return {c.name: (c.value, c.config_source) for c in result.configs}


def _alter(client: WireClient, group: str, *ops: tuple[str, int, str | None]) -> tuple[int, str | None]:
    R = IncrementalAlterConfigsRequest
    request = R(resources=[R.AlterConfigsResource(resource_type=GROUP, resource_name=group, configs=[
        R.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])], validate_only=False)
    (response,) = client.request(request, 1).responses
    return response.error_code, response.error_message


def test_describe_alter_and_validate(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as c:
        before = _describe(c, "configured")
        assert before["consumer.session.timeout.ms"] == ("45000", DEFAULT_CONFIG)
        assert before["consumer.heartbeat.interval.ms"] == ("5000", DEFAULT_CONFIG)
        assert set(before) >= {"share.session.timeout.ms", "share.heartbeat.interval.ms", "share.record.lock.duration.ms"}
        assert _alter(c, "configured", ("consumer.heartbeat.interval.ms", SET, "7000")) == (0, None)
        after = _describe(c, "configured")
        assert after["consumer.heartbeat.interval.ms"] == ("7000", GROUP_CONFIG)
        assert after["consumer.session.timeout.ms"] == ("45000", DEFAULT_CONFIG)
        code, message = _alter(c, "configured", ("consumer.session.timeout.ms", SET, "70000"))
        assert (code, message) == (40, "consumer.session.timeout.ms must be less than or equal to "
                                       "group.consumer.max.session.timeout.ms")
        code, message = _alter(c, "configured", ("consumer.session.timeout.ms", SET, "6000"))
        assert (code, message) == (40, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")
        assert _alter(c, "configured", ("no.such.config", SET, "1")) == (40, "Unknown group config name: no.such.config")
        assert _describe(c, "configured")["consumer.heartbeat.interval.ms"] == ("7000", GROUP_CONFIG)  # unchanged
        assert _alter(c, "configured", ("consumer.heartbeat.interval.ms", DELETE, None)) == (0, None)
        assert _describe(c, "configured")["consumer.heartbeat.interval.ms"] == ("5000", DEFAULT_CONFIG)
        request = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=GROUP, resource_name="", configuration_keys=None)])
        (result,) = c.request(request, 4).results
        assert (result.error_code, result.error_message) == (42, "Group name must not be empty")


def _join(c: WireClient, group: str, member_id: str) -> object:
    return c.request(ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member_id, member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["whatever"], topic_partitions=[]), 1)


def test_the_group_coordinator_applies_them(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as c:
        assert _alter(c, "applied", ("consumer.heartbeat.interval.ms", SET, "300"),
                      ("consumer.session.timeout.ms", SET, "1500")) == (0, None)
        member = str(uuid.uuid4())
        joined = _join(c, "applied", member)
        assert (joined.error_code, joined.heartbeat_interval_ms) == (0, 300)
        described = c.request(ConsumerGroupDescribeRequest(group_ids=["applied"]), 0).groups[0]
        assert [m.member_id for m in described.members] == [member]
        time.sleep(3)  # no heartbeat for twice the group's session timeout: the member is fenced
        described = c.request(ConsumerGroupDescribeRequest(group_ids=["applied"]), 0).groups[0]
        assert described.members == []


def test_group_configs_survive_a_restart(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as c:
        assert _alter(c, "kept", ("consumer.heartbeat.interval.ms", SET, "4000")) == (0, None)
    broker.restart()
    with WireClient.connect(broker.bootstrap) as c:
        assert _describe(c, "kept")["consumer.heartbeat.interval.ms"] == ("4000", GROUP_CONFIG)
