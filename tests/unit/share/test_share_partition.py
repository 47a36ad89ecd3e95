"""SharePartition (tidelog.share.partition): the in-flight state machine of one share partition, on a
ManualClock with the in-memory share-state persister (tests/share_state_memory.py)."""

from __future__ import annotations

import asyncio
import uuid

from tests.share_state_memory import MemorySharePersister
from tidelog.coordinator.share.persister import DeliveryState, SharePartitionKey, ShareState, StateBatch
from tidelog.errors import ErrorCode, KafkaError
from tidelog.share.config import AcquireMode, ShareGroupSettings
from tidelog.share.deliveries import AckBatch, AckType, AcquiredRange, FetchedBatch
from tidelog.share.partition import RecordState, SharePartition
from tidelog.testing import ManualClock

KEY = SharePartitionKey("g", uuid.UUID(int=7), 0)
LOCK_MS = 30_000


def singles(first: int, last: int) -> list[FetchedBatch]:
    """One record per batch, offsets first..last."""
    return [FetchedBatch(o, o) for o in range(first, last + 1)]


async def partition(persister: MemorySharePersister | None = None, *, clock: ManualClock | None = None,
                    start: int = 0, log_start: int = 0, latest: int = 0, initialize: bool = True,
                    **settings) -> tuple[SharePartition, MemorySharePersister, ManualClock]:
    persister = persister or MemorySharePersister()
    clock = clock or ManualClock()
    if initialize:
        assert await persister.initialize(KEY, 0, start) == ErrorCode.NONE
    sp = SharePartition(KEY, "t", ShareGroupSettings(record_lock_duration_ms=LOCK_MS, **settings), persister, clock)
    await sp.initialize(log_start, latest)
    return sp, persister, clock


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def test_acquire_gives_available_records_once_with_delivery_count_one() -> None:
    async def main() -> None:
        sp, _, _ = await partition()
        got = sp.acquire("m1", [FetchedBatch(0, 4), FetchedBatch(5, 9)], max_records=500)
        assert got == [AcquiredRange(0, 9, 1)]
        assert sp.holder_of(3) == "m1" and sp.state_of(3) == (RecordState.ACQUIRED, 1)
        # held records are not handed to another member; new ones are
        assert sp.acquire("m2", [FetchedBatch(0, 4), FetchedBatch(5, 9), FetchedBatch(10, 10)], 500) == [
            AcquiredRange(10, 10, 1)]
        assert sp.next_fetch_offset() == 11

    asyncio.run(main())


def test_lock_expiry_redelivers_with_delivery_count_plus_one() -> None:
    async def main() -> None:
        sp, persister, clock = await partition()
        assert sp.acquire("m1", singles(0, 2), 500) == [AcquiredRange(0, 2, 1)]
        clock.advance(LOCK_MS - 1)
        await settle()
        assert sp.state_of(0) == (RecordState.ACQUIRED, 1)
        clock.advance(1)
        await settle()
        assert sp.state_of(0) == (RecordState.AVAILABLE, 1) and sp.holder_of(0) is None
        # the expiry is written through the persister: delivery count 1, AVAILABLE
        assert persister.states[KEY].state_batches == (StateBatch(0, 2, DeliveryState.AVAILABLE, 1),)
        assert sp.next_fetch_offset() == 0
        assert sp.acquire("m2", singles(0, 2), 500) == [AcquiredRange(0, 2, 2)]

    asyncio.run(main())


def test_delivery_count_limit_archives_and_start_offset_moves() -> None:
    async def main() -> None:
        sp, persister, clock = await partition(delivery_count_limit=2)
        for count in (1, 2):
            assert sp.acquire("m1", singles(0, 1), 500) == [AcquiredRange(0, 1, count)]
            clock.advance(LOCK_MS)
            await settle()
        assert sp.state_of(0)[0] == RecordState.ARCHIVED
        assert sp.start_offset == 2 and sp.acquire("m1", singles(0, 1), 500) == []
        assert persister.states[KEY].start_offset == 2

    asyncio.run(main())


def test_accept_release_reject() -> None:
    async def main() -> None:
        sp, persister, _ = await partition()
        sp.acquire("m1", singles(0, 5), 500)
        code = await sp.acknowledge("m1", [AckBatch(0, 1, (AckType.ACCEPT,)),
                                           AckBatch(2, 4, (AckType.RELEASE, AckType.REJECT, AckType.ACCEPT))])
        assert code == ErrorCode.NONE
        # 0, 1 accepted: the start offset moved past them; 2 released; 3 rejected: archived; 4 accepted
        assert sp.start_offset == 2
        assert [sp.state_of(o)[0] for o in range(2, 6)] == [RecordState.AVAILABLE, RecordState.ARCHIVED,
                                                            RecordState.ACKNOWLEDGED, RecordState.ACQUIRED]
        state = persister.states[KEY]
        assert state.start_offset == 2
        assert state.state_batches == (StateBatch(2, 2, DeliveryState.AVAILABLE, 1),
                                       StateBatch(3, 3, DeliveryState.ARCHIVED, 1),
                                       StateBatch(4, 4, DeliveryState.ACKNOWLEDGED, 1))
        # released: offered again, count 2
        assert sp.acquire("m2", singles(2, 5), 500) == [AcquiredRange(2, 2, 2)]
        assert await sp.acknowledge("m2", [AckBatch(2, 2, (AckType.ACCEPT,))]) == ErrorCode.NONE
        assert await sp.acknowledge("m1", [AckBatch(5, 5, (AckType.ACCEPT,))]) == ErrorCode.NONE
        assert sp.start_offset == 6 and persister.states[KEY].start_offset == 6

    asyncio.run(main())


def test_acknowledging_what_the_member_does_not_hold_is_invalid_record_state_and_changes_nothing() -> None:
    async def main() -> None:
        sp, persister, _ = await partition()
        sp.acquire("m1", singles(0, 3), 500)
        writes = len(persister.writes)
        assert await sp.acknowledge("m2", [AckBatch(0, 0, (AckType.ACCEPT,))]) == ErrorCode.INVALID_RECORD_STATE
        # one bad offset (5 was never acquired) refuses the whole request
        assert await sp.acknowledge("m1", [AckBatch(0, 0, (AckType.ACCEPT,)), AckBatch(5, 5, (AckType.ACCEPT,))]) \
            == ErrorCode.INVALID_RECORD_STATE
        assert sp.state_of(0) == (RecordState.ACQUIRED, 1) and len(persister.writes) == writes
        # a bad type or a types array of the wrong length: INVALID_REQUEST
        assert await sp.acknowledge("m1", [AckBatch(0, 0, (9,))]) == ErrorCode.INVALID_REQUEST
        assert await sp.acknowledge("m1", [AckBatch(0, 2, (1, 1))]) == ErrorCode.INVALID_REQUEST
        assert await sp.acknowledge("m1", [AckBatch(0, 0, (AckType.RENEW,))], allow_renew=False) \
            == ErrorCode.INVALID_REQUEST
        # batches out of order or overlapping
        assert await sp.acknowledge("m1", [AckBatch(0, 1, (1,)), AckBatch(1, 2, (1,))]) == ErrorCode.INVALID_REQUEST
        assert await sp.acknowledge("m1", [AckBatch(2, 2, (1,)), AckBatch(0, 0, (1,))]) == ErrorCode.INVALID_REQUEST
        assert sp.state_of(0) == (RecordState.ACQUIRED, 1) and len(persister.writes) == writes

    asyncio.run(main())


def test_renew_restarts_the_lock() -> None:
    async def main() -> None:
        sp, _, clock = await partition()
        sp.acquire("m1", singles(0, 1), 500)
        clock.advance(LOCK_MS - 1000)
        await settle()
        assert await sp.acknowledge("m1", [AckBatch(0, 0, (AckType.RENEW,))]) == ErrorCode.NONE
        clock.advance(1000)
        await settle()
        # 1 expired with its first lock; 0 was renewed and is still held
        assert sp.state_of(0) == (RecordState.ACQUIRED, 1) and sp.holder_of(0) == "m1"
        assert sp.state_of(1) == (RecordState.AVAILABLE, 1)
        clock.advance(LOCK_MS - 1000)
        await settle()
        assert sp.state_of(0) == (RecordState.AVAILABLE, 1)

    asyncio.run(main())


def test_max_record_locks_bounds_the_window() -> None:
    async def main() -> None:
        sp, _, _ = await partition(partition_max_record_locks=5)
        assert sp.acquire("m1", singles(0, 9), 500) == [AcquiredRange(0, 4, 1)]
        assert sp.end_offset == 5 and not sp.can_acquire()
        assert sp.acquire("m2", singles(5, 9), 500) == []
        assert await sp.acknowledge("m1", [AckBatch(0, 1, (AckType.ACCEPT,))]) == ErrorCode.NONE
        assert sp.can_acquire() and sp.acquire("m2", singles(5, 9), 500) == [AcquiredRange(5, 6, 1)]

    asyncio.run(main())


def test_the_batch_holding_the_window_limit_is_acquired_whole_in_batch_mode_only() -> None:
    """As Kafka: batch-optimized acquisition takes the batch holding the limit offset to its end (the
    window exceeds the limit by less than a batch); a batch starting past the limit waits; record-limit
    mode stops at the limit."""
    async def main() -> None:
        sp, _, _ = await partition(partition_max_record_locks=5)
        assert sp.acquire("m1", [FetchedBatch(0, 9), FetchedBatch(10, 14)], 500) == [AcquiredRange(0, 9, 1)]
        assert sp.end_offset == 10 and not sp.can_acquire()
        assert sp.acquire("m2", [FetchedBatch(10, 14)], 500) == []
        strict, _, _ = await partition(partition_max_record_locks=5)
        assert strict.acquire("m1", [FetchedBatch(0, 9)], 500, AcquireMode.RECORD_LIMIT) == [AcquiredRange(0, 4, 1)]
        assert strict.end_offset == 5

    asyncio.run(main())


def test_max_records_soft_in_batch_mode_hard_in_record_limit_mode() -> None:
    async def main() -> None:
        sp, _, _ = await partition()
        assert sp.acquire("m1", [FetchedBatch(0, 4), FetchedBatch(5, 9)], 3) == [AcquiredRange(0, 4, 1)]
        assert sp.acquire("m1", [FetchedBatch(5, 9)], 3, AcquireMode.RECORD_LIMIT) == [AcquiredRange(5, 7, 1)]

    asyncio.run(main())


def test_gaps_and_skipped_batches_are_archived_never_delivered() -> None:
    async def main() -> None:
        sp, _, _ = await partition()
        # offsets 2-4 compacted away; 5-6 a control or aborted batch
        got = sp.acquire("m1", [FetchedBatch(0, 1), FetchedBatch(5, 6, skip=True), FetchedBatch(7, 8)], 500)
        assert got == [AcquiredRange(0, 1, 1), AcquiredRange(7, 8, 1)]
        assert [sp.state_of(o)[0] for o in range(2, 7)] == [RecordState.ARCHIVED] * 5
        assert await sp.acknowledge("m1", [AckBatch(0, 1, (AckType.ACCEPT,))]) == ErrorCode.NONE
        assert sp.start_offset == 7

    asyncio.run(main())


def test_gap_acknowledgement_archives() -> None:
    async def main() -> None:
        sp, _, _ = await partition()
        sp.acquire("m1", [FetchedBatch(0, 3)], 500)
        assert await sp.acknowledge("m1", [AckBatch(0, 3, (1, 0, 0, 1))]) == ErrorCode.NONE
        assert sp.start_offset == 4

    asyncio.run(main())


def test_restore_after_a_crash_redelivers_what_was_in_flight() -> None:
    async def main() -> None:
        sp, persister, clock = await partition()
        sp.acquire("m1", singles(0, 5), 500)
        assert await sp.acknowledge("m1", [AckBatch(0, 0, (AckType.ACCEPT,)), AckBatch(1, 1, (AckType.RELEASE,)),
                                           AckBatch(2, 2, (AckType.REJECT,))]) == ErrorCode.NONE
        # the broker dies: the share partition's memory is lost; a new one reads the persisted state
        await sp.close()
        sp2, _, _ = await partition(persister, clock=clock, initialize=False)
        assert sp2.start_offset == 1
        assert sp2.state_of(1) == (RecordState.AVAILABLE, 1) and sp2.state_of(2) == (RecordState.ARCHIVED, 1)
        got = sp2.acquire("m2", singles(1, 5), 500)
        # 1 was released (count 1 persisted -> 2); 3-5 were in flight, never persisted: delivered again
        assert got == [AcquiredRange(1, 1, 2), AcquiredRange(3, 5, 1)]

    asyncio.run(main())


def test_release_member_makes_its_records_available() -> None:
    async def main() -> None:
        sp, persister, _ = await partition()
        sp.acquire("m1", singles(0, 1), 500)
        sp.acquire("m2", singles(2, 2), 500)
        task = sp.release_member("m1")
        assert task is not None
        await task
        assert sp.state_of(0) == (RecordState.AVAILABLE, 1) and sp.holder_of(2) == "m2"
        assert persister.states[KEY].state_batches == (StateBatch(0, 1, DeliveryState.AVAILABLE, 1),)
        assert sp.release_member("m1") is None

    asyncio.run(main())


def test_start_offset_from_share_auto_offset_reset() -> None:
    async def main() -> None:
        latest, _, _ = await partition(start=-1, log_start=3, latest=10)
        assert latest.start_offset == 10
        earliest, persister, _ = await partition(start=-1, log_start=3, latest=10, auto_offset_reset="earliest")
        assert earliest.start_offset == 3 and persister.states[KEY].start_offset == 3

    asyncio.run(main())


def test_uninitialized_share_partition_is_an_error() -> None:
    async def main() -> None:
        try:
            await partition(initialize=False)
        except KafkaError as e:
            assert e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            raise AssertionError("read of an uninitialized share partition succeeded")

    asyncio.run(main())


def test_failed_write_leaves_records_acquired() -> None:
    class Fenced(MemorySharePersister):
        async def write(self, key, write):
            return ErrorCode.FENCED_STATE_EPOCH

    async def main() -> None:
        persister = Fenced()
        persister.states[KEY] = ShareState(0, 0)
        sp, _, _ = await partition(persister, initialize=False)
        sp.acquire("m1", singles(0, 0), 500)
        assert await sp.acknowledge("m1", [AckBatch(0, 0, (AckType.ACCEPT,))]) == ErrorCode.FENCED_STATE_EPOCH
        assert sp.state_of(0) == (RecordState.ACQUIRED, 1) and sp.start_offset == 0

    asyncio.run(main())


def test_a_record_at_the_delivery_limit_after_a_restore_is_archived_not_delivered() -> None:
    async def main() -> None:
        persister = MemorySharePersister()
        persister.states[KEY] = ShareState(0, 0, (StateBatch(0, 0, DeliveryState.AVAILABLE, 3),))
        sp, _, _ = await partition(persister, initialize=False, delivery_count_limit=3)
        assert sp.acquire("m1", singles(0, 1), 500) == [AcquiredRange(1, 1, 1)]
        assert sp.state_of(0)[0] == RecordState.ARCHIVED and sp.start_offset == 1

    asyncio.run(main())


def test_state_counts_of_the_window_for_the_console() -> None:
    async def main() -> None:
        sp, _, _ = await partition()
        assert sum(sp.state_counts().values()) == 0
        sp.acquire("m1", singles(0, 5), 500)
        assert await sp.acknowledge("m1", [AckBatch(0, 3, (AckType.ACCEPT, AckType.RELEASE, AckType.REJECT,
                                                           AckType.ACCEPT))]) == ErrorCode.NONE
        # 0 accepted (the start moved past it); 1 released; 2 archived, 3 acknowledged; 4, 5 still acquired
        assert sp.start_offset == 1 and sp.end_offset == 6
        assert sp.state_counts() == {RecordState.AVAILABLE: 1, RecordState.ACQUIRED: 2,
                                     RecordState.ACKNOWLEDGED: 1, RecordState.ARCHIVED: 1}

    asyncio.run(main())


def test_a_write_fenced_by_a_newer_state_epoch_marks_the_share_partition_fenced_once() -> None:
    """The state was initialized again (AlterShareGroupOffsets): the next write is refused with
    FENCED_STATE_EPOCH; the share partition is fenced and says so once, so its holder reads it again."""
    async def main() -> None:
        sp, persister, _ = await partition()
        fenced: list[SharePartition] = []
        sp.on_fenced = fenced.append
        assert sp.acquire("m1", singles(0, 3), 500) == [AcquiredRange(0, 3, 1)]
        assert await persister.initialize(KEY, 1, 2) == ErrorCode.NONE  # a reset elsewhere
        code = await sp.acknowledge("m1", [AckBatch(0, 1, (AckType.ACCEPT,))])
        assert code == ErrorCode.FENCED_STATE_EPOCH
        assert sp.fenced and fenced == [sp]
        assert await sp.acknowledge("m1", [AckBatch(2, 2, (AckType.ACCEPT,))]) == ErrorCode.FENCED_STATE_EPOCH
        assert fenced == [sp]  # once
        assert persister.states[KEY].start_offset == 2 and persister.states[KEY].state_batches == ()

    asyncio.run(main())


class _CountingRecords(dict):
    """The records of a share partition, counting the lookups and walks made of them (a real dict: what
    is stored and found does not change)."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.lookups = 0
        self.walks = 0

    def get(self, key, default=None):
        self.lookups += 1
        return super().get(key, default)

    def values(self):
        self.walks += 1
        return super().values()

    def items(self):
        self.walks += 1
        return super().items()


def test_next_fetch_offset_does_not_walk_the_records_in_flight_at_each_fetch() -> None:
    """Four members holding a large batch each: a fetch looks for the first AVAILABLE offset from where the
    last look ended, not from the window's start (that walk cost a third of the broker's time with four
    consumers of 9,000-record batches), and a record made AVAILABLE again before it is still found first."""
    async def main() -> None:
        sp, _, _ = await partition(partition_max_record_locks=100_000)
        for i, member in enumerate(("m1", "m2", "m3", "m4")):
            assert sp.acquire(member, [FetchedBatch(i * 5000, i * 5000 + 4999)], 500) == [
                AcquiredRange(i * 5000, i * 5000 + 4999, 1)]
        counting = sp._records = _CountingRecords(sp._records)
        for _ in range(10):
            assert sp.next_fetch_offset() == 20_000 and sp.can_acquire()
        assert counting.lookups <= 10
        # m2 leaves: its records are AVAILABLE again and the next fetch starts at them
        task = sp.release_member("m2")
        assert task is not None
        await task
        assert sp.next_fetch_offset() == 5000
        assert sp.acquire("m3", [FetchedBatch(5000, 9999)], 500) == [AcquiredRange(5000, 9999, 2)]
        assert sp.next_fetch_offset() == 20_000
        # m1 releases one record in the middle of its batch: found again, then the window's end
        assert await sp.acknowledge("m1", [AckBatch(1234, 1234, (AckType.RELEASE,))]) == ErrorCode.NONE
        assert sp.next_fetch_offset() == 1234
        assert sp.acquire("m4", [FetchedBatch(0, 4999)], 500) == [AcquiredRange(1234, 1234, 2)]
        assert sp.next_fetch_offset() == 20_000  # one walk after a redelivery, from the record redelivered
        counting.lookups = 0
        assert sp.next_fetch_offset() == 20_000 and counting.lookups <= 1

    asyncio.run(main())


def test_next_fetch_offset_after_a_lock_expiry_and_a_moved_log_start() -> None:
    async def main() -> None:
        sp, _, clock = await partition(partition_max_record_locks=100_000)
        sp.acquire("m1", [FetchedBatch(0, 99)], 500)
        sp.acquire("m2", [FetchedBatch(100, 199)], 500)
        assert sp.next_fetch_offset() == 200
        clock.advance(LOCK_MS)
        await settle()
        assert sp.next_fetch_offset() == 0
        sp.acquire("m3", [FetchedBatch(0, 99)], 50, AcquireMode.RECORD_LIMIT)
        assert sp.next_fetch_offset() == 50
        sp.move_start(150)  # retention removed the log's head
        assert sp.next_fetch_offset() == 150 and sp.state_of(150) == (RecordState.AVAILABLE, 1)


class SlowPersister(MemorySharePersister):
    """The in-memory persister whose writes wait for ``gate`` (a share coordinator failing over) and then
    answer ``error`` instead of writing when it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.error = ErrorCode.NONE

    async def write(self, key, write):
        await self.gate.wait()
        return self.error or await super().write(key, write)


def test_a_lock_running_out_while_the_acknowledgement_is_written_does_not_release_the_records() -> None:
    """An ACCEPT answered must not be lost: while its write is under way (longer than the rest of the lock:
    a share coordinator failing over), the lock's expiry leaves the records to it, as Kafka's state
    transition does; once written they are ACKNOWLEDGED and never offered again."""

    async def main() -> None:
        sp, persister, clock = await partition(SlowPersister())
        assert sp.acquire("m1", singles(0, 2), 500) == [AcquiredRange(0, 2, 1)]
        persister.gate.clear()
        ack = asyncio.ensure_future(sp.acknowledge("m1", [AckBatch(0, 2, (AckType.ACCEPT,))]))
        await settle()
        clock.advance(LOCK_MS)
        await settle()
        assert sp.acquire("m2", singles(0, 2), 500) == [], "not offered while the ACCEPT is being written"
        assert not ack.done()
        persister.gate.set()
        assert await asyncio.wait_for(ack, 5) == ErrorCode.NONE
        await settle()
        assert sp.start_offset == 3, "all three acknowledged: the start offset moves past them"
        assert sp.acquire("m2", singles(0, 2), 500) == []
        stored = persister.states[KEY]
        assert stored.start_offset == 3 or stored.state_batches == (StateBatch(0, 2, DeliveryState.ACKNOWLEDGED, 1),)

    asyncio.run(main())


def test_holds_records_follows_the_locks_without_walking_the_window() -> None:
    async def main() -> None:
        sp, _, clock = await partition(partition_max_record_locks=100_000)
        sp.acquire("m1", [FetchedBatch(0, 4999)], 500)
        sp.acquire("m2", [FetchedBatch(5000, 9999)], 500)
        counting = sp._records = _CountingRecords(sp._records)
        assert sp.holds_records("m1") and sp.holds_records("m2") and not sp.holds_records("m3")
        assert counting.walks == 0 and counting.lookups == 0
        # acknowledged in two parts: held until the last part
        assert await sp.acknowledge("m1", [AckBatch(0, 2499, (AckType.ACCEPT,))]) == ErrorCode.NONE
        assert sp.holds_records("m1")
        assert await sp.acknowledge("m1", [AckBatch(2500, 4999, (AckType.ACCEPT,))]) == ErrorCode.NONE
        assert not sp.holds_records("m1") and sp.holds_records("m2")
        # a renewal moves m2's records to a new lock: still held; the lock's expiry ends that
        assert await sp.acknowledge("m2", [AckBatch(5000, 5000, (AckType.RENEW,))]) == ErrorCode.NONE
        assert sp.holds_records("m2")
        clock.advance(LOCK_MS)
        await settle()
        assert not sp.holds_records("m2") and sp.state_of(5000) == (RecordState.AVAILABLE, 1)
        assert not sp._locks  # the locks that hold nothing are gone


def test_records_whose_lock_ran_out_during_a_failed_acknowledgement_are_released_after_it() -> None:
    async def main() -> None:
        sp, persister, clock = await partition(SlowPersister())
        assert sp.acquire("m1", singles(0, 2), 500) == [AcquiredRange(0, 2, 1)]
        persister.gate.clear()
        persister.error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        ack = asyncio.ensure_future(sp.acknowledge("m1", [AckBatch(0, 2, (AckType.ACCEPT,))]))
        await settle()
        # a second acknowledgement of the same records while the first is written is refused
        again = sp.acknowledge("m1", [AckBatch(0, 0, (AckType.RELEASE,))])
        assert await asyncio.wait_for(again, 5) == ErrorCode.INVALID_RECORD_STATE
        clock.advance(LOCK_MS)
        await settle()
        persister.gate.set()
        assert await asyncio.wait_for(ack, 5) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        await settle()
        # the lock ran out meanwhile: released now, offered again with the delivery count one higher
        assert sp.state_of(0) == (RecordState.AVAILABLE, 1) and sp.holder_of(0) is None
        persister.error = ErrorCode.NONE
        assert sp.acquire("m2", singles(0, 2), 500) == [AcquiredRange(0, 2, 2)]

    asyncio.run(main())


def test_a_failed_acknowledgement_within_the_lock_leaves_the_records_acquired() -> None:
    async def main() -> None:
        sp, persister, clock = await partition(SlowPersister())
        assert sp.acquire("m1", singles(0, 2), 500) == [AcquiredRange(0, 2, 1)]
        persister.error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert await sp.acknowledge("m1", [AckBatch(0, 2, (AckType.ACCEPT,))]) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert sp.state_of(0) == (RecordState.ACQUIRED, 1) and sp.holder_of(0) == "m1"
        persister.error = ErrorCode.NONE
        assert await sp.acknowledge("m1", [AckBatch(0, 2, (AckType.ACCEPT,))]) == ErrorCode.NONE
        clock.advance(LOCK_MS)  # the lock's timer was cancelled by the acknowledgement
        await settle()
        assert sp.start_offset == 3 and sp.acquire("m2", singles(0, 2), 500) == []

    asyncio.run(main())


def test_a_batch_acquired_and_acknowledged_whole_is_one_entry_not_one_per_record() -> None:
    """A batch of new records acquired whole shares one entry (librdkafka's producer writes batches of about
    9,000 records: an entry, a lock bookkeeping and a state change per record made acquire and acknowledge
    cost milliseconds per batch); acknowledged whole at the window's head, they leave the window together."""
    async def main() -> None:
        sp, persister, _ = await partition(partition_max_record_locks=100_000)
        assert sp.acquire("m1", [FetchedBatch(0, 8999)], 500) == [AcquiredRange(0, 8999, 1)]
        assert sp.acquire("m2", [FetchedBatch(9000, 17_999)], 500) == [AcquiredRange(9000, 17_999, 1)]
        assert len({id(rec) for rec in sp._records.values()}) == 2
        assert await sp.acknowledge("m2", [AckBatch(9000, 17_999, (AckType.ACCEPT,))]) == ErrorCode.NONE
        assert len({id(rec) for rec in sp._records.values()}) == 2  # m2's records: one ACKNOWLEDGED entry
        assert sp.state_of(9000) == (RecordState.ACKNOWLEDGED, 1) and sp.start_offset == 0
        assert persister.states[KEY].state_batches == (StateBatch(9000, 17_999, DeliveryState.ACKNOWLEDGED, 1),)
        assert await sp.acknowledge("m1", [AckBatch(0, 8999, (AckType.ACCEPT,))]) == ErrorCode.NONE
        assert sp.start_offset == sp.end_offset == 18_000 and not sp._records
        assert persister.states[KEY].start_offset == 18_000

    asyncio.run(main())


def test_records_of_a_batch_acquired_whole_change_one_by_one() -> None:
    """The records of one shared entry are still each their own: a mixed acknowledgement, a renewal of some
    and a lock expiry change only the records they name, whatever their neighbours share."""
    async def main() -> None:
        sp, _, clock = await partition(partition_max_record_locks=100_000)
        sp.acquire("m1", [FetchedBatch(0, 99)], 500)
        types = tuple([AckType.ACCEPT] * 10 + [AckType.RELEASE] * 10 + [AckType.ACCEPT] * 10)
        assert await sp.acknowledge("m1", [AckBatch(0, 29, types)]) == ErrorCode.NONE
        assert sp.start_offset == 10
        assert [sp.state_of(o) for o in (10, 19, 20, 29, 30, 99)] == [
            (RecordState.AVAILABLE, 1), (RecordState.AVAILABLE, 1), (RecordState.ACKNOWLEDGED, 1),
            (RecordState.ACKNOWLEDGED, 1), (RecordState.ACQUIRED, 1), (RecordState.ACQUIRED, 1)]
        assert sp.acquire("m2", [FetchedBatch(0, 99)], 500) == [AcquiredRange(10, 19, 2)]
        assert sp.state_of(20) == (RecordState.ACKNOWLEDGED, 1) and sp.state_of(30) == (RecordState.ACQUIRED, 1)
        assert sp.holder_of(10) == "m2" and sp.holder_of(30) == "m1"
        clock.advance(LOCK_MS // 2)
        assert await sp.acknowledge("m1", [AckBatch(40, 49, (AckType.RENEW,))]) == ErrorCode.NONE
        clock.advance(LOCK_MS // 2)  # m1's and m2's first locks run out; 40-49 were renewed
        await settle()
        assert [sp.state_of(o) for o in (10, 30, 39, 40, 49, 50)] == [
            (RecordState.AVAILABLE, 2), (RecordState.AVAILABLE, 1), (RecordState.AVAILABLE, 1),
            (RecordState.ACQUIRED, 1), (RecordState.ACQUIRED, 1), (RecordState.AVAILABLE, 1)]
        assert sp.holder_of(40) == "m1" and sp.holder_of(30) is None
        assert await sp.acknowledge("m1", [AckBatch(40, 49, (AckType.ACCEPT,))]) == ErrorCode.NONE
        assert sp.state_of(45) == (RecordState.ACKNOWLEDGED, 1) and sp.state_of(50) == (RecordState.AVAILABLE, 1)
        assert sp.start_offset == 10

    asyncio.run(main())
