"""ShareStats (tidelog.share.stats): what a SharePartition counts for the metrics as it acquires,
acknowledges, expires and releases records; on a ManualClock with the in-memory share-state persister."""

from __future__ import annotations

import asyncio

from tests.unit.share.test_share_partition import LOCK_MS, partition, settle, singles
from tidelog.share.deliveries import AckBatch, AckType, FetchedBatch


def test_acquisitions_acknowledgements_by_type_and_archives_are_counted() -> None:
    async def main() -> None:
        sp, _, _ = await partition(delivery_count_limit=2)
        st = sp.stats
        assert sp.acquire("m1", singles(0, 5), 500)
        assert (st.acquired, st.redelivered) == (6, 0)
        code = await sp.acknowledge("m1", [AckBatch(0, 1, (AckType.ACCEPT,)), AckBatch(2, 2, (AckType.RELEASE,)),
                                           AckBatch(3, 3, (AckType.REJECT,)), AckBatch(4, 4, (AckType.GAP,)),
                                           AckBatch(5, 5, (AckType.RENEW,))])
        assert code == 0
        assert st.acknowledged == {1: 2, 2: 1, 3: 1, 4: 1}  # GAP is not an acknowledgement type counted
        assert st.archived == {"delivery_count_limit": 0, "rejected": 1, "not_deliverable": 1}
        # offset 2 was released: its next delivery is a redelivery; released again at the limit: archived
        assert sp.acquire("m1", singles(2, 2), 500)
        assert (st.acquired, st.redelivered) == (7, 1)
        assert await sp.acknowledge("m1", [AckBatch(2, 2, (AckType.RELEASE,))]) == 0
        assert st.acknowledged[2] == 2 and st.archived["delivery_count_limit"] == 1
        # a control batch is archived, never delivered
        assert sp.acquire("m1", [FetchedBatch(6, 6, skip=True)], 500) == []
        assert st.archived["not_deliverable"] == 2

    asyncio.run(main())


def test_lock_expiries_and_member_releases_are_counted_apart() -> None:
    async def main() -> None:
        sp, _, clock = await partition()
        st = sp.stats
        assert sp.acquire("m1", singles(0, 2), 500)
        clock.advance(LOCK_MS)
        await settle()
        assert (st.lock_timeouts, st.released_on_leave) == (3, 0)
        assert sp.acquire("m2", singles(0, 3), 500)
        assert (st.acquired, st.redelivered) == (7, 3)
        task = sp.release_member("m2")
        assert task is not None
        await task
        assert (st.lock_timeouts, st.released_on_leave) == (3, 4)

    asyncio.run(main())


def test_a_share_fetch_reads_about_what_the_window_can_take_not_the_whole_budget() -> None:
    from tidelog.share.manager import FIRST_READ_BYTES, _read_bytes

    async def main() -> None:
        sp, _, _ = await partition(partition_max_record_locks=200)
        budget = 50 << 20
        assert _read_bytes(sp, 0, budget, 1 << 31) == FIRST_READ_BYTES  # the record size is not known yet
        assert _read_bytes(sp, 0, 1000, 1 << 31) == 1000  # never more than the budget
        sp.read_bytes_per_offset = 100.0
        window = _read_bytes(sp, 0, budget, 1 << 31)
        assert 200 * 100 <= window < 200 * 100 * 2 + 16384  # the window's 200 records, with a margin
        assert _read_bytes(sp, 0, budget, 10) < window  # fewer records wanted: less read
        assert _read_bytes(sp, 150, budget, 1 << 31) < window  # a window already partly in flight

    asyncio.run(main())
