"""Dead-letter queues of share groups (KIP-1191, share.version=2), in process: a real Broker on the test loop
(ManualClock) and its own share coordinator. Which records go to the group's DLQ topic (REJECT;
the delivery limit reached by a RELEASE, a lock expiry or a member leaving), what they carry (Kafka 4.4's
``__dlq.errors.*`` headers; key and value only with ``errors.deadletterqueue.copy.record.enable``), the
checks on the DLQ topic, and a broker at share.version 1 (no DLQ)."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.inprocess.harness import InProcessBroker, batch
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
from tests.inprocess.wire import fetch, fetched, produce
from tidelog.coordinator.share.persister import DeliveryState, SharePartitionKey, StateBatch, StateWrite
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import ApiVersionsRequest, IncrementalAlterConfigsRequest
from tidelog.records import iter_batches
from tidelog.records.builder import RecordBatchBuilder

V2 = {"share.version": "2"}
DLQ = "dlq.q"
ACCEPT, RELEASE, REJECT = 1, 2, 3
REJECTED = b"Offset rejected by client."
EXCEEDED = b"Offset delivery count exceeded the threshold."


def keyed(*pairs: tuple[bytes, bytes]) -> bytes:
    builder = RecordBatchBuilder()
    for i, (key, value) in enumerate(pairs):
        builder.append(1_700_000_000_000 + i, key, value, [("h", b"original")])
    return builder.build()


async def dlq_records(b: InProcessBroker, topic: str = DLQ, partition_index: int = 0) -> list:
    """Every record of the DLQ partition (records with absolute offsets)."""
    p = fetched(await b.request(fetch(topic, 0, partition=partition_index), 12))
    assert p.error_code == 0, p
    return [r for batch in iter_batches(bytes(p.records or b"")) for r in batch.records()]


def headers(record) -> dict[str, bytes]:
    return {h.key: h.value for h in record.headers}


async def wait_dlq(b: InProcessBroker, count: int, topic: str = DLQ) -> list:
    async def enough() -> bool:
        return len(await dlq_records(b, topic)) >= count

    await b.wait_until(enough, f"{count} records in {topic}")
    return await dlq_records(b, topic)


async def dlq_queue(b: InProcessBroker, persister: BrokerShareState, *, copy: bool = False,
                    dlq_partitions: int = 1) -> uuid.UUID:
    tid = await queue(b, persister)
    await b.create_topic(DLQ, dlq_partitions, {"errors.deadletterqueue.group.enable": "true"})
    await group_config(b, GROUP, {"errors.deadletterqueue.topic.name": DLQ,
                                  "errors.deadletterqueue.copy.record.enable": str(copy).lower()})
    return tid


def test_rejected_records_go_to_the_dlq_with_kafkas_headers(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await dlq_queue(b, persister)
        await b.request(produce("q", keyed((b"k0", b"v0"), (b"k1", b"v1"), (b"k2", b"v2"))), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 2, 1)]
        r = await b.request(share_ack(tid, "m1", 1, [(0, 0, [ACCEPT]), (1, 2, [REJECT])]), 1)
        assert [p.error_code for p in r.responses[0].partitions] == [0]
        got = await wait_dlq(b, 2)
        assert [headers(r) for r in got] == [
            {"__dlq.errors.topic": b"q", "__dlq.errors.partition": b"0", "__dlq.errors.offset": str(o).encode(),
             "__dlq.errors.group": GROUP.encode(), "__dlq.errors.delivery.count": b"1",
             "__dlq.errors.message": REJECTED} for o in (1, 2)]
        assert [h.key for h in got[0].headers] == [
            "__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset", "__dlq.errors.group",
            "__dlq.errors.delivery.count", "__dlq.errors.message"]
        # copy.record.enable is false by default: headers only
        assert [(r.key, r.value) for r in got] == [(None, None), (None, None)]
        # the rejected records are archived once written: the share partition's start moved past them
        await b.wait_until(lambda: _start_is(persister, tid, 3), "the start offset past the dead letters")
        assert (await persister.state(SharePartitionKey(GROUP, tid, 0))).state_batches == ()
        stats = b.broker.share_partitions.stats[SharePartitionKey(GROUP, tid, 0)]
        assert (stats.dead_lettered, stats.dead_letter_failures, stats.archived["rejected"]) == (2, 0, 2)

    persister = BrokerShareState()
    share_run(tmp_path, scenario, V2, persister)


async def _start_is(persister: BrokerShareState, tid: uuid.UUID, offset: int) -> bool:
    return (await persister.state(SharePartitionKey(GROUP, tid, 0))).start_offset == offset


def test_copy_record_enable_copies_key_and_value_not_headers(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await dlq_queue(b, persister, copy=True, dlq_partitions=3)
        await b.create_topic("q2", 3)
        await b.request(produce("q", keyed((b"k0", b"v0"), (b"k1", b"v1"))), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 1, 1)]
        await b.request(share_ack(tid, "m1", 1, [(0, 1, [REJECT])]), 1)
        # source partition 0 % 3 partitions of the DLQ topic: partition 0
        got = await wait_dlq(b, 2)
        assert [(r.key, r.value) for r in got] == [(b"k0", b"v0"), (b"k1", b"v1")]
        assert all("h" not in headers(r) for r in got)
        assert [headers(r)["__dlq.errors.offset"] for r in got] == [b"0", b"1"]
        assert await dlq_records(b, DLQ, 1) == [] and await dlq_records(b, DLQ, 2) == []

    persister = BrokerShareState()
    share_run(tmp_path, scenario, V2, persister)


def test_delivery_limit_by_release_and_by_lock_expiry_goes_to_the_dlq(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await dlq_queue(b, persister)
        await group_config(b, GROUP, {"share.delivery.count.limit": "2"})
        await b.request(produce("q", batch(b"released")), 9)
        await b.request(produce("q", batch(b"expired")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 1, 1)]
        await b.request(share_ack(tid, "m1", 1, [(0, 1, [RELEASE])]), 1)
        assert acquired(await b.request(share_fetch(tid, "m1", 2), 1)) == [(0, 1, 2)]
        # RELEASE at the limit: offset 0 to the DLQ
        await b.request(share_ack(tid, "m1", 3, [(0, 0, [RELEASE])]), 1)
        (first,) = await wait_dlq(b, 1)
        assert headers(first)["__dlq.errors.offset"] == b"0"
        assert headers(first)["__dlq.errors.delivery.count"] == b"2"
        assert headers(first)["__dlq.errors.message"] == EXCEEDED
        # offset 1's lock expires at the limit: to the DLQ too, never offered again
        await b.advance(15_000)
        got = await wait_dlq(b, 2)
        assert [(headers(r)["__dlq.errors.offset"], headers(r)["__dlq.errors.message"]) for r in got] == [
            (b"0", EXCEEDED), (b"1", EXCEEDED)]
        assert partition(await b.request(share_fetch(tid, "m2", 0), 1)).acquired_records == []
        await b.wait_until(lambda: _start_is(persister, tid, 2), "both archived")

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {**V2, "group.share.record.lock.duration.ms": "15000"}, persister)


def test_a_restart_finds_archiving_records_and_writes_them(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await dlq_queue(b, persister)
        await b.request(produce("q", batch(b"a", b"b", b"c")), 9)
        # the state a broker left when it died after writing ARCHIVING, before its DLQ write
        key = SharePartitionKey(GROUP, tid, 0)
        assert await persister.write(key, StateWrite(0, 0, 0, (
            StateBatch(0, 0, DeliveryState.ARCHIVING, 1), StateBatch(1, 1, DeliveryState.ARCHIVING, 5)))) == 0
        # the first fetch reads the state: the ARCHIVING records go to the DLQ, the rest is delivered
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(2, 2, 1)]
        got = await wait_dlq(b, 2)
        assert [(headers(r)["__dlq.errors.offset"], headers(r)["__dlq.errors.delivery.count"],
                 headers(r)["__dlq.errors.message"]) for r in got] == [(b"0", b"1", REJECTED), (b"1", b"5", EXCEEDED)]
        await b.wait_until(lambda: _start_is(persister, tid, 2), "archived after the DLQ write")

    persister = BrokerShareState()
    share_run(tmp_path, scenario, V2, persister)


def test_dlq_topic_checks_and_auto_creation(tmp_path: Path) -> None:
    async def reject_all(b: InProcessBroker, tid: uuid.UUID, member: str, first: int) -> None:
        await b.request(produce("q", batch(b"x")), 9)
        assert acquired(await b.request(share_fetch(tid, member, 0), 1)) == [(first, first, 1)]
        await b.request(share_ack(tid, member, 1, [(first, first, [REJECT])]), 1)
        await b.wait_until(lambda: _start_is(persister, tid, first + 1), "archived although not written")

    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        # a DLQ topic name may not start with __ (Kafka's GroupConfig: INVALID_CONFIG)
        resource = IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=32, resource_name=GROUP, configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name="errors.deadletterqueue.topic.name",
                                                           config_operation=0, value="__dlq")])
        (r,) = (await b.request(IncrementalAlterConfigsRequest(resources=[resource]), 1)).responses
        assert r.error_code == ErrorCode.INVALID_CONFIG
        assert r.error_message == "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
        # a topic without errors.deadletterqueue.group.enable=true is not written
        await b.create_topic("dlq.plain", 1)
        await group_config(b, GROUP, {"errors.deadletterqueue.topic.name": "dlq.plain"})
        await reject_all(b, tid, "m1", 0)
        assert await dlq_records(b, "dlq.plain") == []
        # a name without the prefix (errors.deadletterqueue.topic.name.prefix, "dlq.") is not written
        await b.create_topic("other", 1, {"errors.deadletterqueue.group.enable": "true"})
        await group_config(b, GROUP, {"errors.deadletterqueue.topic.name": "other"})
        await reject_all(b, tid, "m2", 1)
        assert await dlq_records(b, "other") == []
        # a missing topic is not created unless errors.deadletterqueue.auto.create.topics.enable
        await group_config(b, GROUP, {"errors.deadletterqueue.topic.name": "dlq.missing"})
        await reject_all(b, tid, "m3", 2)
        assert "dlq.missing" not in b.broker.store.image.topics
        stats = b.broker.share_partitions.stats[SharePartitionKey(GROUP, tid, 0)]
        assert (stats.dead_lettered, stats.dead_letter_failures) == (0, 3)

    persister = BrokerShareState()
    share_run(tmp_path, scenario, V2, persister)


def test_auto_created_dlq_topic(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        tid = await queue(b, persister)
        await group_config(b, GROUP, {"errors.deadletterqueue.topic.name": "dlq.auto"})
        await b.request(produce("q", batch(b"x")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 0, 1)]
        await b.request(share_ack(tid, "m1", 1, [(0, 0, [REJECT])]), 1)
        (got,) = await wait_dlq(b, 1, "dlq.auto")
        assert headers(got)["__dlq.errors.message"] == REJECTED
        topic = b.broker.store.image.topics["dlq.auto"]
        assert topic.configs == {"errors.deadletterqueue.group.enable": "true", "message.timestamp.type": "CreateTime"}
        assert len(topic.partitions) == 2  # num.partitions

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {**V2, "errors.deadletterqueue.auto.create.topics.enable": "true",
                                   "num.partitions": "2"}, persister)


def test_share_version_1_archives_rejected_records_without_a_dlq(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        versions = await b.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
        assert [(f.name, f.max_version_level) for f in versions.finalized_features if f.name == "share.version"] == [
            ("share.version", 1)]
        tid = await dlq_queue(b, persister)
        await b.request(produce("q", batch(b"a")), 9)
        assert acquired(await b.request(share_fetch(tid, "m1", 0), 1)) == [(0, 0, 1)]
        await b.request(share_ack(tid, "m1", 1, [(0, 0, [REJECT])]), 1)
        assert (await persister.state(SharePartitionKey(GROUP, tid, 0))).start_offset == 1  # archived at once
        assert await dlq_records(b) == []

    persister = BrokerShareState()
    share_run(tmp_path, scenario, {"share.version": "1"}, persister)


def test_share_version_2_is_finalized_in_api_versions(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        versions = await b.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
        assert ("share.version", 2, 2) in [(f.name, f.min_version_level, f.max_version_level)
                                           for f in versions.finalized_features]
        assert ("share.version", 0, 2) in [(f.name, f.min_version, f.max_version) for f in versions.supported_features]

    share_run(tmp_path, scenario, V2)
