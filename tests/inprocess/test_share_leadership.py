"""Share partitions and leadership: two brokers' replica layers in this process (tests/inprocess/replicas.py)
with a share-partition manager each, over one in-memory share-state persister. Only the leader serves a
share partition (NOT_LEADER_OR_FOLLOWER elsewhere, with the leader named to the client); when leadership
moves, the new leader reads the persisted state: what was acknowledged stays done, what was in flight is
delivered again."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from tests.inprocess.harness import batch
from tests.inprocess.replicas import LISTENER, ReplicaPair
from tests.share_state_memory import MemorySharePersister
from tidelog.coordinator.share.persister import SharePartitionKey
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import RequestHeader, ShareFetchRequest
from tidelog.server.context import RequestContext
from tidelog.server.handlers.share import ShareHandlers
from tidelog.share.deliveries import AckBatch, AcquiredRange
from tidelog.share.manager import SharePartitionManager

GROUP = "sg"


def run(tmp_path: Path, scenario) -> None:
    async def main() -> None:
        p = ReplicaPair(tmp_path, replica_lag_time_max_ms=30_000, fetch_backoff_ms=1000, fetch_wait_max_ms=500)
        await p.start()
        try:
            await asyncio.wait_for(scenario(p), 120)
        finally:
            await p.close()

    asyncio.run(main())


def test_only_the_leader_serves_and_a_new_leader_reads_the_persisted_state(tmp_path: Path) -> None:
    async def scenario(p: ReplicaPair) -> None:
        persister = MemorySharePersister()
        managers = {i: SharePartitionManager(b.replicas, persister, p.clock, {}) for i, b in p.brokers.items()}
        p.create("q", leader=1)
        tid = p.store.image.topics["q"].topic_id
        tp = (tid, 0)
        assert await persister.initialize(SharePartitionKey(GROUP, tid, 0), 0, 0) == ErrorCode.NONE
        p.brokers[1].replicas.append_records("q", 0, bytearray(batch(b"a", b"b", b"c", b"d")), acks=1)
        await p.wait_until(lambda: p.log_end(2, "q") == 4, "the follower's copy")
        await p.wait_until(lambda: p.brokers[1].replicas.leader_offsets("q", 0).high_watermark == 4,
                           "the high watermark")

        async def fetch(broker: int, member: str):
            got = await managers[broker].fetch(GROUP, member, [tp], max_wait_ms=0, max_bytes=1 << 20,
                                               max_records=500)
            return got[tp]

        follower = await fetch(2, "m1")
        assert follower.error == ErrorCode.NOT_LEADER_OR_FOLLOWER
        # the handler names the leader to the client, with its endpoint
        header = RequestHeader(request_api_key=78, request_api_version=1, correlation_id=1, client_id="t")
        ctx = RequestContext(header, "c", "127.0.0.1", listener_name=LISTENER)
        r = await ShareHandlers(managers[2]).handle_share_fetch(ctx, ShareFetchRequest(
            group_id=GROUP, member_id="m1", share_session_epoch=0, max_records=500, topics=[
                ShareFetchRequest.FetchTopic(topic_id=tid, partitions=[ShareFetchRequest.FetchPartition(
                    partition_index=0)])]))
        (data,) = r.responses[0].partitions
        assert data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (1, 0)
        assert [(e.node_id, e.port) for e in r.node_endpoints] == [(1, p.brokers[1].port)]

        assert (await fetch(1, "m1")).acquired == [AcquiredRange(0, 3, 1)]
        sp = managers[1].partitions[SharePartitionKey(GROUP, tid, 0)]
        assert await sp.acknowledge("m1", [AckBatch(0, 1, (1,))]) == ErrorCode.NONE

        # leadership moves to broker 2
        image = p.store.image
        topic = image.topics["q"]
        moved = replace(topic.partitions[0], leader=2, leader_epoch=1)
        p.store.publish(replace(image, topics={**image.topics, "q": replace(topic, partitions=(moved,))}))
        await p.settle()
        assert (await fetch(1, "m2")).error == ErrorCode.NOT_LEADER_OR_FOLLOWER

        got = None
        for _ in range(200):
            got = await fetch(2, "m2")
            if got.error == ErrorCode.NONE and got.acquired:
                break
            await p.settle(0.05)
        assert got is not None and got.error == ErrorCode.NONE
        # 0-1 were acknowledged on the old leader; 2-3 were in flight there, never persisted: offered again
        assert got.acquired == [AcquiredRange(2, 3, 1)]
        for m in managers.values():
            await m.close()

    run(tmp_path, scenario)
