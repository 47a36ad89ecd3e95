"""The controller's event queue of a real broker (a single node, as a cluster's): a new topic's first
leaders are decided there, in turn, and CreateTopics answers once they are in the metadata; a topic
whose leaders do not come within the request's timeout (of the broker's ManualClock) is answered
REQUEST_TIMED_OUT, and gets them once the queue moves."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.inprocess.harness import InProcessBroker, run
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import CreatePartitionsRequest, CreateTopicsRequest, MetadataRequest


def _create(name: str, partitions: int, timeout_ms: int = 30_000) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])],
        timeout_ms=timeout_ms)


async def _topic(b: InProcessBroker, name: str):
    (topic,) = (await b.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                                                allow_auto_topic_creation=False), 12)).topics
    return topic


async def _partitions(b: InProcessBroker, name: str) -> list[tuple[int, int, int, list[int]]]:
    """(partition, error code, leader, ISR) of each partition, as Metadata v12 answers."""
    topic = await _topic(b, name)
    return sorted((p.partition_index, p.error_code, p.leader_id, list(p.isr_nodes)) for p in topic.partitions)


def _hold(b: InProcessBroker) -> asyncio.Future:
    """An event that holds the controller's queue until the returned future is set."""
    gate = asyncio.get_running_loop().create_future()
    b.broker.controller_events.put(lambda: gate)
    return gate


def test_a_new_topic_s_first_leaders_are_decided_in_the_controller_s_queue(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        gate = _hold(b)
        answer = b.send(_create("t", 3), 7)
        await b.settle()
        # the assignment is written, the leaders are not: the decision waits its turn in the queue, and
        # Metadata shows the topic being created (no partitions, LEADER_NOT_AVAILABLE: clients ask again)
        assert not answer.done()
        topic = await _topic(b, "t")
        assert (topic.error_code, list(topic.partitions)) == (ErrorCode.LEADER_NOT_AVAILABLE, [])
        gate.set_result(None)
        (created,) = (await asyncio.wait_for(answer, 30)).topics
        assert (created.error_code, created.num_partitions) == (0, 3)
        assert await _partitions(b, "t") == [(i, 0, 0, [0]) for i in range(3)]  # at once, for the next client

        # CreatePartitions: the new ones too
        gate = _hold(b)
        grown = b.send(CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
            name="t", count=5, assignments=None)], timeout_ms=30_000, validate_only=False), 3)
        await b.settle()
        assert not grown.done()
        # until their leaders are decided, the new partitions are not shown: the topic keeps its 3
        assert await _partitions(b, "t") == [(i, 0, 0, [0]) for i in range(3)]
        gate.set_result(None)
        assert [r.error_code for r in (await asyncio.wait_for(grown, 30)).results] == [0]
        assert await _partitions(b, "t") == [(i, 0, 0, [0]) for i in range(5)]

    run(tmp_path, scenario)


def test_leaders_that_do_not_come_within_the_timeout_of_the_clock_answer_request_timed_out(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        gate = _hold(b)
        answer = b.send(_create("slow", 1, timeout_ms=5_000), 7)
        await b.advance(4_999)
        assert not answer.done()  # real time passing changes nothing: the broker's clock bounds the wait
        await b.advance(1)
        (late,) = (await asyncio.wait_for(answer, 30)).topics
        assert late.error_code == ErrorCode.REQUEST_TIMED_OUT
        # the topic exists (as on Kafka); its leader comes once the queue moves
        (again,) = (await b.request(_create("slow", 1), 7)).topics
        assert again.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        gate.set_result(None)

        async def led() -> bool:
            return await _partitions(b, "slow") == [(0, 0, 0, [0])]

        await b.wait_until(led, "the leader of slow")

    run(tmp_path, scenario)


def test_a_first_state_interrupted_by_a_restart_is_decided_when_the_broker_starts_again(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        _hold(b)  # never released: the decision never runs before the restart
        answer = b.send(_create("later", 2, timeout_ms=1_000), 7)
        await b.advance(1_000)
        assert (await asyncio.wait_for(answer, 30)).topics[0].error_code == ErrorCode.REQUEST_TIMED_OUT
        await b.restart()

        async def led() -> bool:
            return await _partitions(b, "later") == [(0, 0, 0, [0]), (1, 0, 0, [0])]

        await b.wait_until(led, "the leaders of later after the restart")

    run(tmp_path, scenario)
