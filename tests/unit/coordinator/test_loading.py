"""Loading a ``__consumer_offsets`` partition in the background (coordinator/loader.py): while it
loads, every group API routed to it answers COORDINATOR_LOAD_IN_PROGRESS and the other partitions
are served; afterwards it serves what the log holds; an unload mid-load leaves nothing behind; no
timer of the partition fires before its load ends."""

from __future__ import annotations

import asyncio

from tidelog.coordinator.group import GroupCoordinator, RequestInfo
from tidelog.coordinator.group.classic.group import ClassicGroup
from tidelog.coordinator.group.offsets import PartitionCommit
from tidelog.coordinator.runtime import Result, partition_for
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import JoinGroupRequest, SyncGroupRequest

from .conftest import PARTITIONS, Box, Harness, SwitchableWriter

INFO = RequestInfo("c", "/h", 9)
LOADING = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
COMMITS = 300  # one batch each


def ids_on(partition: int, n: int) -> list[str]:
    return [g for g in (f"g{i}" for i in range(1000)) if partition_for(g, PARTITIONS) == partition][:n]


class OwnedWriter(SwitchableWriter):
    """The real log writer; ``owned`` is the set of partitions this broker leads (the broker's
    ReplicaWriter asks the metadata image)."""

    def __init__(self, logs) -> None:
        super().__init__(logs)
        self.owned = set(range(PARTITIONS))

    def owns(self, partition: int) -> bool:
        return partition in self.owned


def fill(harness: Harness, group: str, n: int = COMMITS) -> None:
    for i in range(n):
        harness.coordinator.commit_offsets(INFO, group, "", None, -1, [PartitionCommit("t", i % 3, i)])


def taking_over(harness: Harness, partition: int, *, chunk: int = 5, group_types=()) -> GroupCoordinator:
    """A coordinator that has every other partition loaded and starts loading ``partition`` in the
    background (as a broker that just became its leader). Call inside a running loop."""
    writer = OwnedWriter(harness.logs)
    c = GroupCoordinator(harness.config, harness.clock, writer, num_partitions=PARTITIONS, group_types=group_types)
    c.load([p for p in range(PARTITIONS) if p != partition])
    c.runtime.loads.chunk_batches = chunk
    c.load([partition], background=True)
    harness.coordinator = c
    return c


async def until_loaded(c: GroupCoordinator, partition: int) -> None:
    task = c.runtime.loads.task(partition)
    if task is not None:
        await task


def committed(c: GroupCoordinator, group: str) -> dict[tuple[str, int], int]:
    fetched = c.fetch_offsets(group, None)
    assert fetched.error_code == 0, fetched
    return {(t.name, p.partition_index): p.committed_offset for t in fetched.topics for p in t.partitions}


def test_every_group_api_answers_load_in_progress_until_the_partition_is_loaded(harness: Harness) -> None:
    loading_group, other_group = ids_on(1, 1)[0], ids_on(2, 1)[0]
    fill(harness, loading_group)
    harness.coordinator.commit_offsets(INFO, other_group, "", None, -1, [PartitionCommit("t", 0, 5)])
    expected = committed(harness.coordinator, loading_group)
    assert expected == {("t", 0): 297, ("t", 1): 298, ("t", 2): 299}

    async def scenario() -> None:
        c = taking_over(harness, 1)
        p = c.partition_for(loading_group)
        assert c.runtime.is_loading(p)
        g = loading_group
        join = Box()
        c.join_group(INFO, JoinGroupRequest(group_id=g, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                            member_id="", protocol_type="consumer", protocols=[
                                                JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]),
                     join)
        assert join.value.error_code == LOADING
        sync = Box()
        c.sync_group(INFO, SyncGroupRequest(group_id=g, generation_id=1, member_id="m"), sync)
        assert sync.value.error_code == LOADING
        assert c.heartbeat(g, "m", None, 1).error_code == 0  # Kafka answers a loading group's heartbeat blindly
        assert g not in c.groups or not c.groups[g].members  # and changes nothing
        assert c.leave_group(g, [("m", None, None)]).error_code == LOADING
        for call in (lambda: c.commit_offsets(INFO, g, "", None, -1, [PartitionCommit("t", 0, 1)]),
                     lambda: c.commit_transactional_offsets(INFO, g, 7, 0, "", None, -1, [PartitionCommit("t", 0, 1)]),
                     lambda: c.delete_offsets(g, [("t", [0])]),
                     lambda: c.list_groups(),
                     lambda: c.runtime.apply(p, lambda: Result()),  # ConsumerGroupHeartbeat's path
                     lambda: c.runtime.check_owned(p)):  # ConsumerGroupDescribe's path
            try:
                call()
                raise AssertionError("served while loading")
            except KafkaError as e:
                assert e.code == LOADING
        assert c.fetch_offsets(g, None).error_code == LOADING
        assert [d.error_code for d in c.describe_groups([g, other_group], 5)] == [LOADING, 0]
        assert [r.error_code for r in c.delete_groups([g])] == [LOADING]
        # the other partitions are served meanwhile
        assert committed(c, other_group) == {("t", 0): 5}
        assert c.commit_offsets(INFO, other_group, "", None, -1, [PartitionCommit("t", 0, 6)]) == {("t", 0): 0}

        await until_loaded(c, p)
        stats = c.runtime.loads.stats[p]
        assert stats.records == COMMITS and stats.chunks > COMMITS // 5  # it yielded to the loop between chunks
        assert not c.runtime.is_loading(p)
        assert committed(c, g) == expected
        assert {lg.group_id for lg in c.list_groups()} == {g, other_group}
        assert c.commit_offsets(INFO, g, "", None, -1, [PartitionCommit("t", 0, 1000)]) == {("t", 0): 0}
        assert committed(c, g)[("t", 0)] == 1000

    asyncio.run(scenario())


def test_requests_are_served_between_chunks(harness: Harness) -> None:
    group = ids_on(3, 1)[0]
    fill(harness, group)
    other = ids_on(0, 1)[0]

    async def scenario() -> None:
        c = taking_over(harness, 3, chunk=10)
        answers = []

        async def client() -> None:  # another request on the loop while the partition loads
            while c.runtime.is_loading(3):
                answers.append((c.runtime.loads.stats.get(3), c.fetch_offsets(other, None).error_code,
                                c.fetch_offsets(group, None).error_code))
                await asyncio.sleep(0)

        await asyncio.gather(until_loaded(c, 3), client())
        assert len(answers) >= COMMITS // 10 - 1  # served between (nearly) every two chunks
        assert {(o, g) for _, o, g in answers} == {(0, LOADING)}
        assert committed(c, group)

    asyncio.run(scenario())


def test_an_unload_during_the_load_leaves_nothing(harness: Harness) -> None:
    groups = ids_on(2, 3)
    for g in groups:
        fill(harness, g, 100)
    member_group = ids_on(2, 4)[3]
    harness.stable_group(member_group)
    loaded_hooks: list[list[str] | None] = []

    class Recorder:
        group_type = "recorder"
        record_types = ()
        replayers: dict = {}
        classic_protocol = None

        def on_loaded(self, group_ids=None) -> None:
            loaded_hooks.append(None if group_ids is None else list(group_ids))

        def on_unloaded(self) -> None:
            pass

    async def scenario() -> None:
        c = taking_over(harness, 2, chunk=20, group_types=[lambda _c: Recorder()])
        loaded_hooks.clear()
        for _ in range(5):
            await asyncio.sleep(0)
        part = [g for g in c.groups if c.partition_for(g) == 2]
        assert part and c.runtime.is_loading(2)  # halfway: some groups replayed
        task = c.runtime.loads.task(2)
        c.runtime.writer.owned.discard(2)  # the leadership moved away (the metadata says so first)
        c.unload([2])
        for _ in range(20):
            await asyncio.sleep(0)
        assert task.cancelled()
        assert not c.runtime.is_loading(2) and 2 not in c.runtime.loads.stats
        assert [g for g in c.groups if c.partition_for(g) == 2] == []
        assert [g for g in c.offsets.groups() if c.partition_for(g) == 2] == []
        assert loaded_hooks == []  # the partition's on_loaded hooks never ran
        assert not any(member_group in key for key in c.runtime._timer_partitions)
        assert c.fetch_offsets(groups[0], None).error_code == ErrorCode.NOT_COORDINATOR
        try:
            c.commit_offsets(INFO, groups[0], "", None, -1, [PartitionCommit("t", 0, 1)])
            raise AssertionError("served after the unload")
        except KafkaError as e:
            assert e.code == ErrorCode.NOT_COORDINATOR
        # regained: it loads again, completely
        c.runtime.writer.owned.add(2)
        c.load([2], background=True)
        await until_loaded(c, 2)
        assert all(committed(c, g) == {("t", 0): 99, ("t", 1): 97, ("t", 2): 98} for g in groups)
        assert len(loaded_hooks) == 1  # once, for the groups of partition 2 only
        assert set(loaded_hooks[0]) == set(groups) | {member_group}

    asyncio.run(scenario())


def test_no_timer_of_the_partition_fires_before_its_load_ends(harness: Harness) -> None:
    group = ids_on(1, 1)[0]
    members = harness.stable_group(group, session_ms=10_000)
    fill(harness, ids_on(1, 2)[1])  # enough records for a load of many chunks

    async def scenario() -> None:
        c = taking_over(harness, 1, chunk=3)
        for _ in range(3):
            await asyncio.sleep(0)
        # far past every session and the offsets' retention: nothing of partition 1 may expire yet
        harness.clock.advance(120_000)
        c.poll()
        assert c.cleanup_group_metadata() == 0
        before = harness.logs[1].log_end_offset
        assert c.runtime.is_loading(1)
        await until_loaded(c, 1)
        assert harness.logs[1].log_end_offset == before  # nothing written while it loaded
        g = c.groups[group]
        assert isinstance(g, ClassicGroup) and set(g.members) == set(members)
        # the sessions start now: a full session from the end of the load
        harness.advance(9_000)
        assert set(c.groups[group].members) == set(members)
        harness.advance(2_000)
        assert c.groups[group].members == {}

    asyncio.run(scenario())
