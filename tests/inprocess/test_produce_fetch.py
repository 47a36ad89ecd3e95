"""Produce, Fetch and ListOffsets through the broker's request dispatcher, in process: what a client
reads back from what it wrote, the offsets it is told, and Kafka's error codes for bad requests."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.inprocess.harness import InProcessBroker, batch, run
from tests.inprocess.wire import fetch, fetched, list_offsets, listed, produce, produced, values
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import InitProducerIdRequest
from tidelog.testing import ManualClock

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3


def test_records_produced_are_fetched_back_with_their_offsets(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 2)
        assert produced(await b.request(produce("t", batch(b"a", b"b")), 9)) == (0, 0)
        assert produced(await b.request(produce("t", batch(b"c")), 9)) == (0, 2)
        assert produced(await b.request(produce("t", batch(b"x"), partition=1), 9)) == (0, 0)

        p = fetched(await b.request(fetch("t", 0), 12))
        assert (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset) == (0, 3, 3, 0)
        assert values(p.records) == [b"a", b"b", b"c"]
        assert values(fetched(await b.request(fetch("t", 2), 12)).records) == [b"c"]
        assert values(fetched(await b.request(fetch("t", 0, partition=1), 4)).records) == [b"x"]

    run(tmp_path, scenario)


def test_bad_produce_and_fetch_targets_get_kafkas_error_codes(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1)
        assert produced(await b.request(produce("nowhere", batch(b"a")), 9))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert produced(await b.request(produce("t", batch(b"a"), partition=5), 9))[0] == \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert produced(await b.request(produce("t", batch(b"a"), acks=2), 9))[0] == ErrorCode.INVALID_REQUIRED_ACKS
        assert fetched(await b.request(fetch("t", 7), 12)).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert fetched(await b.request(fetch("nowhere", 0), 12)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    run(tmp_path, scenario)


def test_produce_with_acks_0_is_not_answered_but_written(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1)
        assert await b.request(produce("t", batch(b"quiet"), acks=0), 9) is None
        assert values(fetched(await b.request(fetch("t", 0), 12)).records) == [b"quiet"]

    run(tmp_path, scenario)


def test_a_waiting_fetch_is_answered_when_records_arrive(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1)
        waiting = b.send(fetch("t", 0, max_wait_ms=60_000, min_bytes=1), 12)
        await asyncio.sleep(0.05)
        assert not waiting.done(), "nothing to read yet: the fetch waits"
        assert produced(await b.request(produce("t", batch(b"late")), 9)) == (0, 0)
        p = fetched(await asyncio.wait_for(waiting, 30))
        assert (p.error_code, p.high_watermark, values(p.records)) == (0, 1, [b"late"])

    run(tmp_path, scenario)


def test_a_waiting_fetch_is_answered_empty_after_its_max_wait(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1)
        waiting = b.send(fetch("t", 0, max_wait_ms=30_000, min_bytes=1), 12)
        await b.advance(29_000)
        assert not waiting.done()
        await b.advance(2_000)
        p = fetched(await asyncio.wait_for(waiting, 30))
        assert (p.error_code, p.high_watermark, values(p.records)) == (0, 0, [])

    run(tmp_path, scenario)


def test_log_append_time_is_the_brokers_clock(tmp_path: Path) -> None:
    """message.timestamp.type=LogAppendTime: the Produce answer and ListOffsets name the broker's time
    of the append (here a ManualClock, moved between the writes)."""
    clock = ManualClock(wall_ms=1_800_000_000_000)

    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1, {"message.timestamp.type": "LogAppendTime"})
        (topic,) = (await b.request(produce("t", batch(b"a", timestamp_ms=5)), 9)).responses
        assert topic.partition_responses[0].log_append_time_ms == 1_800_000_000_000
        clock.advance(60_000)
        (topic,) = (await b.request(produce("t", batch(b"b", timestamp_ms=5)), 9)).responses
        assert topic.partition_responses[0].log_append_time_ms == 1_800_000_060_000
        assert listed(await b.request(list_offsets("t", MAX_TIMESTAMP), 7)) == (0, 1_800_000_060_000, 1)
        assert listed(await b.request(list_offsets("t", 1_800_000_000_001), 7)) == (0, 1_800_000_060_000, 1)

    run(tmp_path, scenario, clock=clock)


def test_list_offsets_finds_the_earliest_the_latest_and_by_timestamp(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1)
        await b.request(produce("t", batch(b"a", b"b", timestamp_ms=1000)), 9)  # at 1000, 1001
        await b.request(produce("t", batch(b"c", timestamp_ms=5000)), 9)
        assert listed(await b.request(list_offsets("t", EARLIEST), 7)) == (0, -1, 0)
        assert listed(await b.request(list_offsets("t", LATEST), 7)) == (0, -1, 3)
        assert listed(await b.request(list_offsets("t", 1001), 7)) == (0, 1001, 1)
        assert listed(await b.request(list_offsets("t", 1002), 7)) == (0, 5000, 2)
        assert listed(await b.request(list_offsets("t", 9999), 7)) == (0, -1, -1)  # none as late: no offset
        assert listed(await b.request(list_offsets("t", MAX_TIMESTAMP), 7)) == (0, 5000, 2)
        assert listed(await b.request(list_offsets("nowhere", LATEST), 7))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    run(tmp_path, scenario)


def test_an_idempotent_producers_retry_is_not_written_twice(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1)
        init = await b.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4)
        assert init.error_code == 0 and init.producer_id >= 0
        pid, epoch = init.producer_id, init.producer_epoch
        first = produce("t", batch(b"a", b"b", producer_id=pid, producer_epoch=epoch, base_sequence=0))
        assert produced(await b.request(first, 9)) == (0, 0)
        assert produced(await b.request(first, 9)) == (0, 0)  # the retry: the first write's offset, once
        gap = produce("t", batch(b"z", producer_id=pid, producer_epoch=epoch, base_sequence=5))
        assert produced(await b.request(gap, 9))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert values(fetched(await b.request(fetch("t", 0), 12)).records) == [b"a", b"b"]

    run(tmp_path, scenario)


def test_acks_all_needs_min_insync_replicas_and_acks_1_does_not(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1, {"min.insync.replicas": "2"})  # one node: an ISR of one
        assert produced(await b.request(produce("t", batch(b"a"), acks=-1), 9))[0] == ErrorCode.NOT_ENOUGH_REPLICAS
        assert produced(await b.request(produce("t", batch(b"b"), acks=1), 9)) == (0, 0)
        assert values(fetched(await b.request(fetch("t", 0), 12)).records) == [b"b"]

    run(tmp_path, scenario)
