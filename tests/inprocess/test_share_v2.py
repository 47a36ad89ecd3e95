"""Share groups at Kafka 4.4's newest wire versions, in process (a real Broker on the test loop, ManualClock):
ShareFetch/ShareAcknowledge v2 (RENEW acknowledgements, KIP-1222; ShareAcquireMode, KIP-1206),
WriteShareGroupState/ReadShareGroupStateSummary v1 (DeliveryCompleteCount, KIP-1226) and
DescribeShareGroupOffsets v1 (lag, KIP-1226)."""

from __future__ import annotations

from pathlib import Path

from tests.inprocess.harness import InProcessBroker, batch, run
from tests.inprocess.test_groups import find_coordinator
from tests.inprocess.test_share_fetch import (
    GROUP,
    BrokerShareState,
    acquired,
    group_config,
    partition,
    queue,
    share_ack,
    share_fetch,
    share_run,
)
from tests.inprocess.test_share_groups import join_until_assigned, topic_id
from tests.inprocess.wire import produce
from tests.share_state_wire import find_share, initialize, only, summary, write
from tidelog.clock import SystemClock
from tidelog.coordinator.share.persister import DeliveryState, SharePartitionKey, StateBatch, StateWrite
from tidelog.coordinator.share.remote import RemoteSharePersister
from tidelog.errors import ErrorCode
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.protocol.messages import DescribeShareGroupOffsetsRequest

LOCK_MS = 15_000  # group.share.min.record.lock.duration.ms: a group config may not be below it
RENEW = 4


def renewing(request, flag: bool = True):
    request.is_renew_ack = flag
    return request


def test_renew_is_honoured_only_when_asked_for_and_enabled(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(b"a", b"b")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 2)) == [(0, 1, 1)]
        # the group disables renewals (share.renew.acknowledge.enable is true by default, as in Kafka 4.4)
        await group_config(b, GROUP, {"share.renew.acknowledge.enable": "false"})
        r = await b.request(renewing(share_ack(tid, "m1", 1, [(0, 1, [RENEW])])), 2)
        (p,) = r.responses[0].partitions
        assert (r.error_code, p.error_code, p.error_message) == (
            0, ErrorCode.INVALID_RECORD_STATE, "Renewing acquisition locks is not enabled for the group.")
        await group_config(b, GROUP, {"share.renew.acknowledge.enable": "true"})
        # a RENEW in a request that does not say IsRenewAck (or a v1 one) is refused for its partition
        r = await b.request(share_ack(tid, "m1", 2, [(0, 1, [RENEW])]), 2)
        assert [p.error_code for p in r.responses[0].partitions] == [ErrorCode.INVALID_REQUEST]
        r = await b.request(share_ack(tid, "m1", 3, [(0, 1, [RENEW])]), 1)
        assert [p.error_code for p in r.responses[0].partitions] == [ErrorCode.INVALID_REQUEST]

        await b.advance(12_000)
        r = await b.request(renewing(share_ack(tid, "m1", 4, [(0, 1, [RENEW])])), 2)
        assert r.error_code == 0 and [p.error_code for p in r.responses[0].partitions] == [0]
        assert r.acquisition_lock_timeout_ms == LOCK_MS  # v2 answers the lock duration
        # the lock started again at 12 s: at 24 s (past the first lock's end) the records are still m1's
        await b.advance(12_000)
        assert partition(await b.request(share_fetch(tid, "m2", 0), 2)).acquired_records == []
        await b.advance(3_000)
        assert acquired(await b.request(share_fetch(tid, "m2", 1), 2)) == [(0, 1, 2)]

        # a ShareFetch that renews asks for nothing (else INVALID_REQUEST) and acquires nothing, though
        # records are there
        await b.request(produce("q", batch(b"c")), 9)
        r = await b.request(renewing(share_fetch(tid, "m2", 2, acks=[(0, 1, [RENEW])], max_wait_ms=60_000)), 2)
        assert r.error_code == ErrorCode.INVALID_REQUEST
        request = renewing(share_fetch(tid, "m2", 2, acks=[(0, 1, [RENEW])], max_records=0))
        request.min_bytes = request.max_bytes = 0
        r = await b.request(request, 2)
        p = partition(r)
        assert (p.acknowledge_error_code, p.acquired_records) == (0, [])
        await b.advance(LOCK_MS - 1)  # renewed just now: still m2's; offset 2 was not acquired by the renewal
        assert acquired(await b.request(share_fetch(tid, "m3", 0), 2)) == [(2, 2, 1)]

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {"group.share.record.lock.duration.ms": str(LOCK_MS)}, persister)


def test_share_acquire_mode(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(b"a", b"b", b"c", b"d", b"e")), 9)
        request = share_fetch(tid, "m1", 0, max_records=2)
        request.share_acquire_mode = 1  # record-limit: at most max_records, the batch cut
        assert acquired(await b.request(request, 2)) == [(0, 1, 1)]
        # batch-optimized (0, the default): the rest of the batch, past max_records
        assert acquired(await b.request(share_fetch(tid, "m2", 0, max_records=2), 2)) == [(2, 4, 1)]
        request = share_fetch(tid, "m3", 0)
        request.share_acquire_mode = 2  # as Kafka 4.4 answers an unknown mode
        assert (await b.request(request, 2)).error_code == ErrorCode.UNKNOWN_SERVER_ERROR

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_share_partitions_write_their_delivery_complete_count(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(b"a", b"b", b"c", b"d", b"e")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 2)) == [(0, 4, 1)]
        key = SharePartitionKey(GROUP, tid, 0)
        await b.request(share_ack(tid, "m1", 1, [(1, 1, [1]), (3, 3, [3])]), 2)  # ACCEPT 1, REJECT 3
        state = (await persister.state(key))
        assert (state.start_offset, state.delivery_complete_count) == (0, 2)
        await b.request(share_ack(tid, "m1", 2, [(0, 0, [1])]), 2)  # the start moves past 0 and 1
        state = (await persister.state(key))
        assert (state.start_offset, state.delivery_complete_count) == (2, 1)
        await b.request(share_ack(tid, "m1", 3, [(2, 2, [2])]), 2)  # RELEASE: not complete
        assert (await persister.state(key)).delivery_complete_count == 1

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_write_and_summary_carry_the_delivery_complete_count_at_v1(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("jobs")
        tid = await topic_id(b, "jobs")
        found = await b.request(find_share(f"g:{tid}:0"), 6)
        assert found.coordinators[0].error_code == 0
        assert only(await b.request(initialize("g", tid, 0, 1, 0), 0)).error_code == 0
        w = write("g", tid, 0, 1, 0, 4, [(4, 6, 2, 1)])
        w.topics[0].partitions[0].delivery_complete_count = 3
        assert only(await b.request(w, 1)).error_code == 0
        assert only(await b.request(summary("g", tid, 0), 1)).delivery_complete_count == 3
        # a v0 write has no count: the stored one stays
        assert only(await b.request(write("g", tid, 0, 1, 0, -1, [(7, 7, 2, 1)]), 0)).error_code == 0
        s = only(await b.request(summary("g", tid, 0), 1))
        assert (s.start_offset, s.delivery_complete_count) == (4, 3)
        await b.restart()
        assert only(await b.request(summary("g", tid, 0), 1)).delivery_complete_count == 3

    run(tmp_path, scenario, overrides={"share.version": "1", "share.coordinator.state.topic.num.partitions": "3"})


def test_describe_share_group_offsets_v1_answers_the_lag(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("q", 1)
        tid = await topic_id(b, "q")
        await find_coordinator(b, "og")
        await group_config(b, "og", {"share.auto.offset.reset": "earliest"})
        await join_until_assigned(b, "og", "m1", "q", 1)
        D = DescribeShareGroupOffsetsRequest
        describe = D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id="og", topics=None)])

        async def described(version: int) -> tuple[int, int]:
            (group,) = (await b.request(describe, version)).groups
            assert group.error_code == 0, group
            ((topic_name, p),) = [(t.topic_name, p) for t in group.topics for p in t.partitions]
            assert topic_name == "q" and p.error_code == 0
            return p.start_offset, p.lag

        assert await described(1) == (-1, -1)  # no start offset yet: the lag is unknown
        await b.request(produce("q", batch(b"a", b"b", b"c", b"d", b"e")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0, group="og"), 2)) == [(0, 4, 1)]
        ack = share_ack(tid, "m1", 1, [(1, 1, [1]), (3, 3, [1])])
        ack.group_id = "og"
        r = await b.request(ack, 2)
        assert r.responses[0].partitions[0].error_code == 0
        # 5 records from the start offset 0, two of them done: lag 3
        assert await described(1) == (0, 3)
        assert (await described(0))[0] == 0  # v0 has no lag field (the decoded default)
        await b.request(produce("q", batch(b"f")), 9)
        assert await described(1) == (0, 4)

    run(tmp_path, scenario, overrides={"share.version": "1"})


def test_the_brokers_persister_sends_the_delivery_complete_count_to_its_peer(tmp_path: Path) -> None:
    """The remote persister (a broker reaching the share coordinator on another broker) speaks v1: the
    count it writes comes back in the summary, over a real socket."""

    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("jobs")
        tid = await topic_id(b, "jobs")
        me = b.broker.broker_id
        settings = PeerSettings(lambda i: ("127.0.0.1", b.broker.port) if i == me else None)
        remote = RemoteSharePersister(PeerClient(settings, "share-test"), lambda: [me], SystemClock(),
                                      backoff_ms=10, max_attempts=2)
        try:
            k = SharePartitionKey("g", tid, 0)
            assert await remote.initialize(k, 1, 0) == ErrorCode.NONE
            done = (StateBatch(0, 2, DeliveryState.ACKNOWLEDGED, 1),)
            assert await remote.write(k, StateWrite(1, 0, -1, done, delivery_complete_count=3)) == ErrorCode.NONE
            s = await remote.read_summary(k, 0)
            assert (s.error, s.start_offset, s.delivery_complete_count) == (ErrorCode.NONE, 0, 3)
        finally:
            remote.close()

    run(tmp_path, scenario, overrides={"share.version": "1", "share.coordinator.state.topic.num.partitions": "3"})
