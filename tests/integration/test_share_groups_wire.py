"""Share groups (KIP-932) against a real ``tidelog serve`` with ``share.version=1``: ApiVersions advertises
the share APIs and finalizes share.version; ShareGroupHeartbeat and ShareGroupDescribe over a real socket;
ListGroups filtered by type ``share`` over the wire; confluent-kafka's AdminClient (librdkafka 2.16 has no
``share`` type to filter on) lists consumer groups only, without the share group.

The broker has no share coordinator yet (issue 27: built beside this), so the share partitions stay
uninitialized and the member holds no partition: membership, epochs and describe are what is checked."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient

from tests.integration.kafka_io import create_topic
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = pytest.mark.xdist_group("share_groups_wire")

BROKER_OVERRIDES = {"share.version": "1"}


def wait_for_coordinator(wire: WireClient, group: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        r = wire.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4)
        if r.coordinators[0].error_code == 0:
            return
        assert time.monotonic() < deadline, r
        time.sleep(0.2)


def test_share_group_heartbeat_describe_and_list(broker: BrokerProcess, wire: WireClient) -> None:
    versions = wire.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
    served = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    assert served[76] == (1, 1) and served[77] == (1, 1)
    assert [(f.name, f.max_version_level) for f in versions.finalized_features if f.name == "share.version"] == [
        ("share.version", 1)]

    create_topic(broker, "share-q", 2)
    wait_for_coordinator(wire, "wire-sg")
    joined = wire.request(ShareGroupHeartbeatRequest(group_id="wire-sg", member_id="member-1", member_epoch=0,
                                                     subscribed_topic_names=["share-q"]), 1)
    assert joined.error_code == ErrorCode.NONE, joined
    assert joined.member_id == "member-1" and joined.member_epoch >= 1
    assert joined.heartbeat_interval_ms == 5000
    again = wire.request(ShareGroupHeartbeatRequest(group_id="wire-sg", member_id="member-1",
                                                    member_epoch=joined.member_epoch), 1)
    assert again.error_code == ErrorCode.NONE and again.member_epoch >= joined.member_epoch

    (described,) = wire.request(ShareGroupDescribeRequest(group_ids=["wire-sg"]), 1).groups
    assert described.error_code == 0 and described.group_state == "Stable"
    assert described.assignor_name == "simple"
    assert [(m.member_id, m.client_host, m.subscribed_topic_names) for m in described.members] == [
        ("member-1", "/127.0.0.1", ["share-q"])]

    listed = wire.request(ListGroupsRequest(types_filter=["share"]), 5)
    assert [(g.group_id, g.group_type, g.group_state) for g in listed.groups] == [("wire-sg", "share", "Stable")]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    groups = admin.list_consumer_groups().result(30)
    # librdkafka lists consumer groups only: a group whose protocol type is "share" is left out (as
    # it does against Kafka, whose share groups have the same protocol type).
    assert groups.errors == [] and "wire-sg" not in {g.group_id for g in groups.valid}

    left = wire.request(ShareGroupHeartbeatRequest(group_id="wire-sg", member_id="member-1", member_epoch=-1), 1)
    assert (left.error_code, left.member_epoch) == (0, -1)
    (described,) = wire.request(ShareGroupDescribeRequest(group_ids=["wire-sg"]), 1).groups
    assert described.group_state == "Empty" and described.members == []
