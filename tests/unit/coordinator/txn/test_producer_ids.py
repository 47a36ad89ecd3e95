"""ProducerIdManager: ids come from claimed blocks, each handed out once; a failed claim hands out nothing."""

from __future__ import annotations

import pytest

from tidelog.coordinator.txn.producer_ids import ProducerIdManager
from tidelog.errors import ErrorCode, KafkaError


def test_ids_come_from_the_blocks_claimed_in_order() -> None:
    claims: list[int] = []
    starts = iter([0, 100, 7])  # another broker may claim in between: the next block need not follow

    def allocate(size: int) -> int:
        claims.append(size)
        return next(starts)

    manager = ProducerIdManager(allocate, block_size=3)
    assert [manager.next_producer_id() for _ in range(8)] == [0, 1, 2, 100, 101, 102, 7, 8]
    assert claims == [3, 3, 3]


def test_a_failed_claim_hands_out_nothing_and_the_next_call_claims_again() -> None:
    results: list = [KafkaError(ErrorCode.REQUEST_TIMED_OUT, "ZooKeeper is unavailable"), 50]

    def allocate(size: int) -> int:
        r = results.pop(0)
        if isinstance(r, Exception):
            raise r
        return r

    manager = ProducerIdManager(allocate, block_size=2)
    with pytest.raises(KafkaError):
        manager.next_producer_id()
    assert [manager.next_producer_id() for _ in range(2)] == [50, 51]
