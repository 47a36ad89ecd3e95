"""The share coordinator's state in ``__share_group_state`` on a real ``tidelog serve`` (share.version=1):
written with Initialize/WriteShareGroupState over the wire, it is read back after a kill -9 and a restart
of the broker (nothing is acknowledged before it is in the log)."""

from __future__ import annotations

import pytest

from tests.share_state_wire import batches, find_share, initialize, only, read, summary, write
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import CreateTopicsRequest, MetadataRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import wait_for

pytestmark = [pytest.mark.integration]

FRESH_BROKER_OVERRIDES = {"share.version": "1", "share.coordinator.state.topic.num.partitions": "3",
                          "share.coordinator.snapshot.update.records.per.snapshot": "4"}
GROUP = "orders-queue"


def test_share_state_survives_a_kill_9_of_the_broker(fresh_broker: BrokerProcess) -> None:
    with WireClient.connect(fresh_broker.bootstrap) as wire:
        created = wire.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="orders", num_partitions=2, replication_factor=1)], timeout_ms=10_000), 7)
        assert created.topics[0].error_code == 0
        tid = next(t.topic_id for t in wire.request(MetadataRequest(topics=None), 12).topics if t.name == "orders")
        # FindCoordinator first, as a broker's persister does: it creates __share_group_state and waits
        # for its leaders (a write to the brand-new topic before that answers NOT_COORDINATOR, as in Kafka)
        found = wire.request(find_share(f"{GROUP}:{tid}:1"), 6)
        assert found.coordinators[0].error_code == 0
        assert only(wire.request(initialize(GROUP, tid, 1, 2, 0), 0)).error_code == 0
        # ten writes: snapshots and updates interleave (a snapshot every 4 updates)
        for n in range(10):
            w = wire.request(write(GROUP, tid, 1, 2, 5, n * 10, [(n * 10, n * 10 + 9, 2, 1), (n * 10 + 3, n * 10 + 3, 4, 5)]),
                             0)
            assert only(w).error_code == 0
        before = only(wire.request(read(GROUP, tid, 1, 5), 0))
        assert (before.error_code, before.state_epoch, before.start_offset) == (0, 2, 90)
        assert batches(before) == [(90, 92, 2, 1), (93, 93, 4, 5), (94, 99, 2, 1)]

    fresh_broker.kill()  # SIGKILL: no shutdown, no flush
    fresh_broker.start()

    with WireClient.connect(fresh_broker.bootstrap) as wire:
        after = wait_for(lambda: (p := only(wire.request(read(GROUP, tid, 1, 5), 0))).error_code
                         != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and p, timeout=60, what="the share state loaded")
        assert (after.error_code, after.state_epoch, after.start_offset, batches(after)) == (
            0, 2, 90, batches(before))
        s = only(wire.request(summary(GROUP, tid, 1), 0))
        assert (s.error_code, s.state_epoch, s.leader_epoch, s.start_offset) == (0, 2, 5, 90)
        # the leader epoch seen before the crash still fences
        stale = only(wire.request(write(GROUP, tid, 1, 2, 4, -1, []), 0))
        assert stale.error_code == ErrorCode.FENCED_LEADER_EPOCH
