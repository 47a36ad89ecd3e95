"""ShareFetch and ShareAcknowledge (KIP-932) through the broker's request dispatcher, in process: a real
Broker on the test loop with a ManualClock (acquisition locks expire when the test advances it), built
with share.version=1; the share state goes through the broker's own share coordinator
(``__share_group_state``), as in production."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from tests.inprocess.harness import InProcessBroker, batch, run
from tests.inprocess.test_transactions import Producer, stable_at
from tests.inprocess.wire import produce, produced, values
from tests.share_state_wire import find_share
from tidelog.coordinator.share.persister import SharePartitionKey, ShareState, StateWrite
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    CreateAclsRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
)
from tidelog.security.principal import KafkaPrincipal
from tidelog.storage.segment import FileSlice

GROUP = "sg"
SHARE_ON = {"share.version": "1"}


class BrokerShareState:
    """The share state of the broker a scenario runs on, through its own share coordinator: what the group
    coordinator would initialize, and what the share partitions wrote (read at leader epoch -1, which
    neither fences nor records anything)."""

    def __init__(self) -> None:
        self.broker: InProcessBroker | None = None

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> ErrorCode:
        assert self.broker is not None
        # FindCoordinator first, as a broker's persister does: it creates __share_group_state
        found = await self.broker.request(find_share(f"{key.group_id}:{key.topic_id}:{key.partition}"), 6)
        assert found.coordinators[0].error_code == 0, found
        return await self.broker.broker.share_persister.initialize(key, state_epoch, start_offset)

    async def write(self, key: SharePartitionKey, write: StateWrite) -> ErrorCode:
        """A state written as a share partition's leader would (a broker that died after it, say)."""
        assert self.broker is not None
        return await self.broker.broker.share_persister.write(key, write)

    async def state(self, key: SharePartitionKey) -> ShareState:
        assert self.broker is not None
        state = await self.broker.broker.share_persister.read(key, -1)
        assert state.error == ErrorCode.NONE, state
        return state


def share_run(tmp_path: Path, scenario, overrides: dict[str, str] | None = None,
              persister: BrokerShareState | None = None) -> BrokerShareState:
    persister = persister or BrokerShareState()

    async def bound(b: InProcessBroker) -> None:
        persister.broker = b
        await scenario(b)

    run(tmp_path, bound, overrides={**SHARE_ON, **(overrides or {})})
    return persister


async def topic_id(b: InProcessBroker, name: str) -> uuid.UUID:
    r = await b.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)]), 12)
    (t,) = r.topics
    assert t.error_code == 0
    return t.topic_id


async def queue(b: InProcessBroker, persister: BrokerShareState, name: str = "q", start: int = 0) -> uuid.UUID:
    """A topic whose share partition 0 is initialized for GROUP (what the group coordinator does before it
    first assigns the partition)."""
    await b.create_topic(name, 1)
    tid = await topic_id(b, name)
    assert await persister.initialize(SharePartitionKey(GROUP, tid, 0), 0, start) == ErrorCode.NONE
    return tid


def share_fetch(tid: uuid.UUID, member: str, epoch: int, *, acks: list[tuple[int, int, list[int]]] | None = None,
                max_wait_ms: int = 0, max_records: int = 500, partitions: tuple[int, ...] = (0,),
                group: str = GROUP) -> ShareFetchRequest:
    return ShareFetchRequest(
        group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait_ms, min_bytes=1,
        max_bytes=50 << 20, max_records=max_records, batch_size=500,
        topics=[ShareFetchRequest.FetchTopic(topic_id=tid, partitions=[
            ShareFetchRequest.FetchPartition(partition_index=p, acknowledgement_batches=[
                ShareFetchRequest.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=types)
                for f, last, types in (acks or [])]) for p in partitions])])


def share_ack(tid: uuid.UUID, member: str, epoch: int, acks: list[tuple[int, int, list[int]]]) -> ShareAcknowledgeRequest:
    return ShareAcknowledgeRequest(group_id=GROUP, member_id=member, share_session_epoch=epoch, topics=[
        ShareAcknowledgeRequest.AcknowledgeTopic(topic_id=tid, partitions=[
            ShareAcknowledgeRequest.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                ShareAcknowledgeRequest.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=t)
                for f, last, t in acks])])])


def partition(response, index: int = 0):
    assert response.error_code == 0, response
    (t,) = response.responses
    (p,) = [p for p in t.partitions if p.partition_index == index]
    return p


def acquired(response) -> list[tuple[int, int, int]]:
    p = partition(response)
    assert p.error_code == 0, p
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records]


def test_members_share_a_partition_and_acknowledgements_move_it_on(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        for records in (batch(b"a", b"b"), batch(b"c"), batch(b"d", b"e")):
            assert produced(await b.request(produce("q", records), 9))[0] == 0

        r = await b.request(share_fetch(tid, "m1", 0), 1)
        assert r.acquisition_lock_timeout_ms == 30_000
        assert acquired(r) == [(0, 4, 1)]
        assert values(partition(r).records) == [b"a", b"b", b"c", b"d", b"e"]
        # another member of the group gets nothing the first holds
        assert partition(await b.request(share_fetch(tid, "m2", 0), 1)).acquired_records == []

        r = await b.request(share_ack(tid, "m1", 1, [(0, 1, [1]), (2, 2, [2]), (3, 4, [3])]), 1)
        assert r.error_code == 0 and [p.error_code for p in r.responses[0].partitions] == [0]
        state = (await persister.state(SharePartitionKey(GROUP, tid, 0)))
        assert state.start_offset == 2
        # the released record goes to the next fetch, its delivery count 2
        r = await b.request(share_fetch(tid, "m2", 1), 1)
        assert acquired(r) == [(2, 2, 2)] and b"c" in values(partition(r).records)

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_an_expired_lock_redelivers_to_another_member(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(b"a", b"b")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 1, 1)]
        await b.advance(9_999)
        assert partition(await b.request(share_fetch(tid, "m2", 0), 1)).acquired_records == []
        await b.advance(1)
        assert acquired(await b.request(share_fetch(tid, "m2", 1), 1)) == [(0, 1, 2)]
        # m1's lock is gone: its acknowledgement of the records now m2's is refused
        r = await b.request(share_fetch(tid, "m1", 1, acks=[(0, 1, [1])]), 1)
        assert partition(r).acknowledge_error_code == ErrorCode.INVALID_RECORD_STATE

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {"group.share.record.lock.duration.ms": "10000"}, persister)


def test_delivery_limit_archives(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(b"poison")), 9)
        await b.request(produce("q", batch(b"next")), 9)
        epoch = 0
        for count in (1, 2):
            r = await b.request(share_fetch(tid, "m1", epoch, max_records=1), 1)
            epoch += 1
            assert acquired(r) == [(0, 0, count)]
            r = await b.request(share_ack(tid, "m1", epoch, [(0, 0, [2])]), 1)
            epoch += 1
            assert r.responses[0].partitions[0].error_code == 0
        # released twice at a limit of 2: archived; the next fetch starts after it
        assert acquired(await b.request(share_fetch(tid, "m1", epoch), 1)) == [(1, 1, 1)]
        assert (await persister.state(SharePartitionKey(GROUP, tid, 0))).start_offset == 1

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {"group.share.delivery.count.limit": "2"}, persister)


def test_piggy_backed_acknowledgements_and_a_waiting_fetch(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(b"a")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 0, 1)]
        # acknowledge 0 and wait for more: the fetch parks until a record is produced
        waiting = b.send(share_fetch(tid, "m1", 1, acks=[(0, 0, [1])], max_wait_ms=30_000), 1)
        await b.settle()
        assert not waiting.done()
        await b.request(produce("q", batch(b"b")), 9)
        r = await asyncio.wait_for(waiting, 30)
        assert partition(r).acknowledge_error_code == 0 and acquired(r) == [(1, 1, 1)]
        # nothing to fetch: the wait ends after max_wait_ms, empty
        waiting = b.send(share_fetch(tid, "m1", 2, max_wait_ms=5_000), 1)
        await b.advance(5_000)
        r = await asyncio.wait_for(waiting, 30)
        assert r.error_code == 0 and all(not p.acquired_records for t in r.responses for p in t.partitions)
        # a parked fetch is woken by records released: m2 waits, m1's lock expires
        waiting = b.send(share_fetch(tid, "m2", 0, max_wait_ms=60_000), 1)
        await b.settle()
        await b.advance(30_000)
        assert acquired(await asyncio.wait_for(waiting, 30)) == [(1, 1, 2)]

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_share_session_epochs(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        r = await b.request(share_fetch(tid, "m1", 3), 1)
        assert r.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        r = await b.request(share_fetch(tid, "m1", 0, acks=[(0, 0, [1])]), 1)
        assert r.error_code == ErrorCode.INVALID_REQUEST
        assert (await b.request(share_fetch(tid, "m1", 0), 1)).error_code == 0
        assert (await b.request(share_fetch(tid, "m1", 2), 1)).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        assert (await b.request(share_ack(tid, "m1", 0, []), 1)).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        assert (await b.request(share_fetch(tid, "m1", 1), 1)).error_code == 0
        # the limit of share sessions
        assert (await b.request(share_fetch(tid, "m2", 0), 1)).error_code == 0
        assert (await b.request(share_fetch(tid, "m3", 0), 1)).error_code == ErrorCode.SHARE_SESSION_LIMIT_REACHED

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {"group.share.max.share.sessions": "2"}, persister)


def test_closing_the_session_releases_what_the_member_holds(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(b"a", b"b", b"c")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 2, 1)]
        r = await b.request(share_ack(tid, "m1", -1, [(0, 0, [1])]), 1)
        assert r.error_code == 0 and r.responses[0].partitions[0].error_code == 0
        # 1 and 2 were released when m1 closed its session
        assert acquired(await b.request(share_fetch(tid, "m2", 0), 1)) == [(1, 2, 2)]
        assert (await b.request(share_fetch(tid, "m1", 1), 1)).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_partition_errors(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        # an unknown topic id; a partition the topic does not have; a share partition never initialized
        r = await b.request(share_fetch(uuid.UUID(int=99), "m1", 0), 1)
        assert partition(r).error_code == ErrorCode.UNKNOWN_TOPIC_ID
        r = await b.request(share_fetch(tid, "m2", 0, partitions=(0, 3)), 1)
        assert partition(r, 3).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert partition(r, 0).error_code == 0
        r = await b.request(share_fetch(tid, "m3", 0, group="other"), 1)
        assert partition(r).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # an acknowledgement of offsets never delivered
        r = await b.request(share_ack(tid, "m2", 1, [(5, 6, [1])]), 1)
        assert r.responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
        # RENEW (4) comes with v2; an unknown type: INVALID_REQUEST
        r = await b.request(share_ack(tid, "m2", 2, [(0, 0, [4])]), 1)
        assert r.responses[0].partitions[0].error_code == ErrorCode.INVALID_REQUEST
        # no group or member: INVALID_REQUEST for the whole request
        r = await b.request(share_fetch(tid, "", 0), 1)
        assert r.error_code == ErrorCode.INVALID_REQUEST

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_share_apis_are_served_only_with_share_version_1(tmp_path: Path) -> None:
    async def versions(b: InProcessBroker) -> dict[int, tuple[int, int]]:
        r = await b.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
        return {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}

    async def on(b: InProcessBroker) -> None:
        got = await versions(b)
        assert got[78] == (1, 2) and got[79] == (1, 2)

    async def off(b: InProcessBroker) -> None:
        got = await versions(b)
        assert 78 not in got and 79 not in got
        # as Kafka with share groups disabled: UNSUPPORTED_VERSION
        r = await b.request(share_fetch(uuid.UUID(int=1), "m1", 0), 1)
        assert r.error_code == ErrorCode.UNSUPPORTED_VERSION
        r = await b.request(share_ack(uuid.UUID(int=1), "m1", 1, []), 1)
        assert r.error_code == ErrorCode.UNSUPPORTED_VERSION

    share_run(tmp_path / "on", on)
    run(tmp_path / "off", off, overrides={"share.version": "0"})


async def group_config(b: InProcessBroker, group: str, configs: dict[str, str]) -> None:
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=32, resource_name=group, configs=[
        IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=0, value=v) for k, v in configs.items()])
    (r,) = (await b.request(IncrementalAlterConfigsRequest(resources=[resource]), 1)).responses
    assert r.error_code == 0, r


def test_share_auto_offset_reset_decides_where_an_uninitialized_start_is(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister, start=-1)
        assert await persister.initialize(SharePartitionKey("early", tid, 0), 0, -1) == ErrorCode.NONE
        await group_config(b, "early", {"share.auto.offset.reset": "earliest"})
        await b.request(produce("q", batch(b"a", b"b")), 9)
        # latest (the default): only what comes after the share partition starts
        assert partition(await b.request(share_fetch(tid, "m1", 0), 1)).acquired_records == []
        assert (await persister.state(SharePartitionKey(GROUP, tid, 0))).start_offset == 2
        await b.request(produce("q", batch(b"c")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 1), 1)) == [(2, 2, 1)]
        # earliest: from the log's start
        assert acquired(await b.request(share_fetch(tid, "m2", 0, group="early"), 1)) == [(0, 2, 1)]

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_read_committed_share_group_skips_aborted_records_and_stops_at_the_lso(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await group_config(b, GROUP, {"share.isolation.level": "read_committed"})
        p = Producer(b, "tx")
        await p.init()
        assert await p.add_partitions("q", 0) == {0: 0}
        assert await p.send("q", b"gone") == (0, 0)
        assert (await p.end(commit=False)).error_code == 0
        await stable_at(b, "q", 2)  # the record at 0, the abort marker at 1
        assert produced(await b.request(produce("q", batch(b"kept")), 9)) == (0, 2)
        # an open transaction holds the last stable offset at 3
        p2 = Producer(b, "tx2")
        await p2.init()
        assert await p2.add_partitions("q", 0) == {0: 0}
        assert await p2.send("q", b"pending") == (0, 3)
        assert produced(await b.request(produce("q", batch(b"after")), 9)) == (0, 4)

        r = await b.request(share_fetch(tid, "m1", 0), 1)
        assert acquired(r) == [(2, 2, 1)] and values(partition(r).records) == [b"kept"]
        assert partition(await b.request(share_fetch(tid, "m1", 1, acks=[(2, 2, [1])]), 1)).acknowledge_error_code == 0
        # the aborted record and the marker were archived: the start offset is past them
        assert (await persister.state(SharePartitionKey(GROUP, tid, 0))).start_offset == 3
        assert (await p2.end(commit=True)).error_code == 0
        await stable_at(b, "q", 6)
        r = await b.request(share_fetch(tid, "m1", 2), 1)
        assert acquired(r) == [(3, 4, 1)] and values(partition(r).records) == [b"pending", b"after"]

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_acls_read_on_group_and_topic(tmp_path: Path) -> None:
    admin, bob = KafkaPrincipal("User", "admin"), KafkaPrincipal("User", "bob")

    async def allow(b: InProcessBroker, resource_type: int, name: str) -> None:
        r = await b.request(CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=resource_type, resource_name=name, resource_pattern_type=3, principal="User:bob",
            host="*", operation=3, permission_type=3)]), 3, principal=admin)
        assert [c.error_code for c in r.results] == [0]

    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("q", 1)
        tid = await topic_id(b, "q")
        assert await persister.initialize(SharePartitionKey(GROUP, tid, 0), 0, 0) == ErrorCode.NONE
        r = await b.request(share_fetch(tid, "m1", 0), 1, principal=bob)
        assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        r = await b.request(share_ack(tid, "m1", 1, []), 1, principal=bob)
        assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        await allow(b, 3, GROUP)  # GROUP
        r = await b.request(share_fetch(tid, "m1", 0), 1, principal=bob)
        assert partition(r).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        await allow(b, 2, "q")  # TOPIC
        await b.request(produce("q", batch(b"a")), 9, principal=admin)
        assert acquired(await b.request(share_fetch(tid, "m1", 1), 1, principal=bob)) == [(0, 0, 1)]

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                          "super.users": "User:admin;User:ANONYMOUS"}, persister)


def test_a_waiting_member_acquires_before_the_fetch_whose_acknowledgement_made_room(tmp_path: Path) -> None:
    """m1 holds the whole window and m2's fetch waits; m1's ShareFetch acknowledges everything and asks for
    more: m2's waiting fetch takes the records the acknowledgement let in, not m1's fetch that carried it."""
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(*[b"%d" % i for i in range(100)])), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 99, 1)]
        await b.request(produce("q", batch(*[b"%d" % i for i in range(100)])), 9)
        waiting = b.send(share_fetch(tid, "m2", 0, max_wait_ms=60_000), 1)
        await b.settle()
        assert not waiting.done()
        r = await b.request(share_fetch(tid, "m1", 1, acks=[(0, 99, [1])], max_wait_ms=0), 1)
        assert partition(r).acknowledge_error_code == 0
        assert all(not p.acquired_records for t in r.responses for p in t.partitions), "m1 waits its turn"
        assert acquired(await asyncio.wait_for(waiting, 30)) == [(100, 199, 1)]

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {"group.share.partition.max.record.locks": "100"}, persister)


def test_a_fetch_whose_full_window_holds_its_own_records_does_not_wait_long(tmp_path: Path) -> None:
    """Only the member's own acknowledgements can make room, and they come with its next request: its fetch
    waits 20 ms, not MaxWaitMs. Another member's fetch on the same full window waits as asked."""
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(*[b"%d" % i for i in range(100)])), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 99, 1)]
        await b.request(produce("q", batch(b"over")), 9)
        own = b.send(share_fetch(tid, "m1", 1, max_wait_ms=60_000), 1)
        other = b.send(share_fetch(tid, "m2", 0, max_wait_ms=60_000), 1)
        await b.settle()
        assert not own.done() and not other.done()
        await b.advance(20)
        r = await asyncio.wait_for(own, 30)
        assert r.error_code == 0 and all(not p.acquired_records for t in r.responses for p in t.partitions)
        assert not other.done()
        await b.advance(60_000)
        await asyncio.wait_for(other, 30)

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {"group.share.partition.max.record.locks": "100"}, persister)


def test_a_full_window_parks_the_fetch_until_records_are_acknowledged(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(*[b"%d" % i for i in range(100)])), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 99, 1)]
        await b.request(produce("q", batch(b"over")), 9)
        # 100 records in flight, the limit: new records wait, the fetch parks (it does not spin on them)
        waiting = b.send(share_fetch(tid, "m2", 0, max_wait_ms=60_000), 1)
        await b.settle()
        assert not waiting.done()
        r = await b.request(share_ack(tid, "m1", 1, [(0, 9, [1])]), 1)
        assert r.responses[0].partitions[0].error_code == 0
        assert acquired(await asyncio.wait_for(waiting, 30)) == [(100, 100, 1)]

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {"group.share.partition.max.record.locks": "100"}, persister)


def test_a_member_leaving_the_group_has_its_records_released(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(b"a", b"b")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 1, 1)]
        # what the group coordinator calls when a share group's member leaves or its session expires
        manager = b.broker.share_partitions
        assert manager is not None
        await manager.release_member(GROUP, "m1")
        assert acquired(await b.request(share_fetch(tid, "m2", 0), 1)) == [(0, 1, 2)]
        assert (await b.request(share_fetch(tid, "m1", 1), 1)).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_a_closing_share_fetch_acknowledges_and_fetches_nothing(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(b"a", b"b")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 1, 1)]
        r = await b.request(share_fetch(tid, "m1", -1, acks=[(0, 0, [1])]), 1)
        p = partition(r)
        assert (p.acknowledge_error_code, p.acquired_records) == (0, [])
        assert (await persister.state(SharePartitionKey(GROUP, tid, 0))).start_offset == 1
        assert acquired(await b.request(share_fetch(tid, "m2", 0), 1)) == [(1, 1, 2)]
        # closing a session that is not there
        assert (await b.request(share_fetch(tid, "m1", -1), 1)).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_a_closed_connection_ends_its_share_sessions(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await b.request(produce("q", batch(b"a")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1, connection="c1")) == [(0, 0, 1)]
        assert partition(await b.request(share_fetch(tid, "m2", 0), 1, connection="c2")).acquired_records == []
        # what the network layer calls when a client's connection closes
        manager = b.broker.share_partitions
        assert manager is not None
        await manager.connection_closed("c1")
        assert acquired(await b.request(share_fetch(tid, "m2", 1), 1, connection="c2")) == [(0, 0, 2)]
        assert (await b.request(share_fetch(tid, "m1", 1), 1)).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_group_configs_override_the_broker_defaults(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await group_config(b, GROUP, {"share.delivery.count.limit": "2", "share.record.lock.duration.ms": "15000"})
        await b.request(produce("q", batch(b"a")), 9)
        r = await b.request(share_fetch(tid, "m1", 0), 1)
        assert r.acquisition_lock_timeout_ms == 15_000 and acquired(r) == [(0, 0, 1)]
        await b.advance(15_000)
        assert acquired(await b.request(share_fetch(tid, "m1", 1), 1)) == [(0, 0, 2)]
        await b.advance(15_000)
        # the second expiry reached the group's delivery limit of 2: archived
        r = await b.request(share_fetch(tid, "m1", 2), 1)
        assert r.error_code == 0 and r.responses == []  # an incremental answer with nothing new
        assert (await persister.state(SharePartitionKey(GROUP, tid, 0))).start_offset == 1

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)


def test_records_released_behind_other_members_batches_are_fetched_first(tmp_path: Path) -> None:
    """Four members hold a batch each; records one of them releases in the middle of the window go to the
    next fetch before any new record (a fetch finds the first AVAILABLE offset from where the last one ended,
    moved back by the release), and the fetch after that goes on at the window's end."""
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        for i, member in enumerate(("m1", "m2", "m3", "m4")):
            await b.request(produce("q", batch(*[b"%d" % n for n in range(900)])), 9)
            assert acquired(await b.request(share_fetch(tid, member, 0), 1)) == [(i * 900, i * 900 + 899, 1)]
        await b.request(produce("q", batch(b"new")), 9)
        r = await b.request(share_ack(tid, "m2", 1, [(1500, 1509, [2])]), 1)
        assert r.responses[0].partitions[0].error_code == 0
        r = await b.request(share_fetch(tid, "m5", 0), 1)
        assert acquired(r) == [(1500, 1509, 2)]
        assert acquired(await b.request(share_fetch(tid, "m5", 1), 1)) == [(3600, 3600, 1)]

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {"group.share.partition.max.record.locks": "4000"}, persister)


def test_acquired_batches_are_answered_as_a_slice_of_the_segment_file(tmp_path: Path) -> None:
    """The records of a ShareFetch answer are the batches read from the log that hold acquired records: a
    slice of the segment file, which the network layer sends with sendfile as it does Fetch's records (no
    copy through Python); only the batches holding acquired records, from the first to the last of them."""
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        for records in (batch(b"a", b"b"), batch(b"c"), batch(b"d", b"e")):
            assert produced(await b.request(produce("q", records), 9))[0] == 0
        manager = b.broker.share_partitions
        assert manager is not None
        got = await manager.fetch(GROUP, "m1", [(tid, 0)], max_wait_ms=0, max_bytes=50 << 20, max_records=2)
        first = got[(tid, 0)]
        assert [(a.first_offset, a.last_offset) for a in first.acquired] == [(0, 1)]
        assert isinstance(first.records, FileSlice)  # old code: bytes
        assert values(first.records.read()) == [b"a", b"b"]
        got = await manager.fetch(GROUP, "m2", [(tid, 0)], max_wait_ms=0, max_bytes=50 << 20, max_records=500)
        rest = got[(tid, 0)]
        assert [(a.first_offset, a.last_offset) for a in rest.acquired] == [(2, 4)]
        assert isinstance(rest.records, FileSlice)
        assert rest.records.position == first.records.position + first.records.size
        assert values(rest.records.read()) == [b"c", b"d", b"e"]
        first.records.release()
        rest.records.release()
        # through the codec (what the client decodes): the same records
        await b.request(produce("q", batch(b"f", b"g")), 9)
        r = await b.request(share_fetch(tid, "m3", 0), 1)
        assert acquired(r) == [(5, 6, 1)] and values(partition(r).records) == [b"f", b"g"]

    persister = BrokerShareState()
    share_run(tmp_path, scenario, persister=persister)
