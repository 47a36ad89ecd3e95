"""The share coordinator's RPCs on a real broker (share.version=1), spoken as the wire contract: the gate,
FindCoordinator's SHARE key type, Initialize/Write/Read/Summary/Delete, the state read back after a restart,
CLUSTER_ACTION, and ``__share_group_state`` created as Kafka creates it."""

from __future__ import annotations

import uuid

from tests.share_state_wire import batches, delete, find_share, initialize, only, read, summary, write
from tidelog.clock import SystemClock
from tidelog.coordinator.share.persister import DeliveryState, SharePartitionKey, StateBatch, StateWrite
from tidelog.coordinator.share.remote import RemoteSharePersister
from tidelog.errors import ErrorCode
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.protocol.messages import ApiVersionsRequest, DescribeConfigsRequest, MetadataRequest
from tidelog.security.principal import KafkaPrincipal

from .harness import InProcessBroker, run

SHARE = {"share.version": "1", "share.coordinator.state.topic.num.partitions": "3"}
SHARE_APIS = {83, 84, 85, 86, 87}
GROUP = "queue-1"


async def topic_id(b: InProcessBroker, name: str) -> uuid.UUID:
    return next(t.topic_id for t in (await b.request(MetadataRequest(topics=None), 12)).topics if t.name == name)


async def coordinator_found(b: InProcessBroker, tid: uuid.UUID, partition: int = 0) -> None:
    """FindCoordinator first, as a broker's persister does: it creates __share_group_state and waits for
    its leaders (a write to a brand-new internal topic before that answers NOT_COORDINATOR, as in Kafka)."""
    found = await b.request(find_share(f"{GROUP}:{tid}:{partition}"), 6)
    assert found.coordinators[0].error_code == 0


def test_share_version_0_serves_no_share_state_api_and_no_share_coordinator(tmp_path):
    async def scenario(b: InProcessBroker) -> None:
        api_keys = {k.api_key for k in (await b.request(ApiVersionsRequest(), 2)).api_keys}
        assert not api_keys & SHARE_APIS
        r = await b.request(find_share(f"{GROUP}:{uuid.uuid4()}:0"), 6)
        assert r.coordinators[0].error_code == ErrorCode.INVALID_REQUEST

    run(tmp_path, scenario, overrides={"share.version": "0"})


def test_share_version_1_advertises_the_five_apis_and_finds_the_coordinator(tmp_path):
    async def scenario(b: InProcessBroker) -> None:
        versions = {k.api_key: (k.min_version, k.max_version)
                    for k in (await b.request(ApiVersionsRequest(), 2)).api_keys}
        assert {k: versions.get(k) for k in SHARE_APIS} == {83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1)}
        key = f"{GROUP}:{uuid.uuid4()}:0"
        found = await b.request(find_share(key), 6)
        assert [(c.key, c.error_code, c.node_id) for c in found.coordinators] == [(key, 0, b.broker.broker_id)]
        # SHARE needs FindCoordinator v6 and a well-formed key
        assert (await b.request(find_share(key, 5), 5)).coordinators[0].error_code == ErrorCode.INVALID_REQUEST
        assert (await b.request(find_share(key, 3), 3)).error_code == ErrorCode.INVALID_REQUEST
        bad = await b.request(find_share("no-colons"), 6)
        assert bad.coordinators[0].error_code == ErrorCode.INVALID_REQUEST

    run(tmp_path, scenario, overrides=SHARE)


def test_state_written_is_read_back_also_after_a_restart(tmp_path):
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("jobs", 2)
        tid = await topic_id(b, "jobs")
        await coordinator_found(b, tid)
        assert only(await b.request(read(GROUP, tid, 0, 0), 0)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert only(await b.request(initialize(GROUP, tid, 0, 1, 0), 0)).error_code == 0
        w = await b.request(write(GROUP, tid, 0, 1, 3, 0, [(0, 9, 0, 1), (2, 4, 2, 1)]), 0)
        assert only(w).error_code == 0
        w = await b.request(write(GROUP, tid, 0, 1, 3, 2, [(5, 5, 4, 5)]), 0)
        assert only(w).error_code == 0
        expected = [(2, 4, 2, 1), (5, 5, 4, 5), (6, 9, 0, 1)]
        p = only(await b.request(read(GROUP, tid, 0, 3), 0))
        assert (p.error_code, p.state_epoch, p.start_offset, batches(p)) == (0, 1, 2, expected)
        await b.restart()
        p = only(await b.request(read(GROUP, tid, 0, 3), 0))
        assert (p.error_code, p.state_epoch, p.start_offset, batches(p)) == (0, 1, 2, expected)
        s = only(await b.request(summary(GROUP, tid, 0), 0))
        assert (s.error_code, s.state_epoch, s.leader_epoch, s.start_offset) == (0, 1, 3, 2)
        # fencing survives the restart too
        stale = await b.request(write(GROUP, tid, 0, 1, 2, -1, []), 0)
        assert only(stale).error_code == ErrorCode.FENCED_LEADER_EPOCH
        stale = await b.request(write(GROUP, tid, 0, 0, 3, -1, []), 0)
        assert only(stale).error_code == ErrorCode.FENCED_STATE_EPOCH
        assert only(await b.request(delete(GROUP, tid, 0), 0)).error_code == 0
        assert only(await b.request(read(GROUP, tid, 0, 3), 0)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    run(tmp_path, scenario, overrides=SHARE)


def test_unknown_topic_and_empty_group_id(tmp_path):
    async def scenario(b: InProcessBroker) -> None:
        p = only(await b.request(initialize(GROUP, uuid.uuid4(), 0, 0, 0), 0))
        assert p.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        await b.create_topic("jobs")
        p = only(await b.request(initialize("", await topic_id(b, "jobs"), 0, 0, 0), 0))
        assert p.error_code == ErrorCode.INVALID_GROUP_ID

    run(tmp_path, scenario, overrides=SHARE)


def test_share_group_state_topic_is_created_as_kafka_creates_it(tmp_path):
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("jobs")
        await coordinator_found(b, await topic_id(b, "jobs"))
        assert only(await b.request(initialize(GROUP, await topic_id(b, "jobs"), 0, 0, 0), 0)).error_code == 0
        md = await b.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="__share_group_state")]),
                             12)
        [t] = md.topics
        assert (t.error_code, t.is_internal, len(t.partitions)) == (0, True, 3)
        r = DescribeConfigsRequest
        described = await b.request(r(resources=[r.DescribeConfigsResource(
            resource_type=2, resource_name="__share_group_state",
            configuration_keys=["cleanup.policy", "retention.ms", "compression.type"])]), 4)
        values = {c.name: c.value for c in described.results[0].configs}
        assert values == {"cleanup.policy": "delete", "retention.ms": "-1", "compression.type": "producer"}

    run(tmp_path, scenario, overrides=SHARE)


def test_cluster_action_is_required(tmp_path):
    alice = KafkaPrincipal("User", "alice")

    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("jobs")  # as the super user
        tid = await topic_id(b, "jobs")
        for request in (initialize(GROUP, tid, 0, 0, 0), read(GROUP, tid, 0, 0), summary(GROUP, tid, 0),
                        write(GROUP, tid, 0, 0, 0, 0, []), delete(GROUP, tid, 0)):
            p = only(await b.request(request, 0, principal=alice))
            assert p.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED, type(request).__name__
        found = await b.request(find_share(f"{GROUP}:{tid}:0"), 6, principal=alice)
        assert found.coordinators[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        # nothing was initialized by the refused calls
        assert only(await b.request(read(GROUP, tid, 0, 0), 0)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    run(tmp_path, scenario, overrides={**SHARE, "authorizer.class.name":
                                       "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                       "allow.everyone.if.no.acl.found": "false", "super.users": "User:ANONYMOUS"})


def test_the_remote_persister_speaks_to_the_share_coordinator_over_a_real_socket(tmp_path):
    """Kafka's DefaultStatePersister's conversation: FindCoordinator (SHARE) then the RPC, to the broker's
    listener through the broker-to-broker client; what it answers is what the coordinator decided."""

    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("jobs")
        tid = await topic_id(b, "jobs")
        me = b.broker.broker_id
        settings = PeerSettings(lambda i: ("127.0.0.1", b.broker.port) if i == me else None)
        remote = RemoteSharePersister(PeerClient(settings, "share-test"), lambda: [me], SystemClock(),
                                      backoff_ms=10, max_attempts=2)
        try:
            k = SharePartitionKey(GROUP, tid, 0)
            assert await remote.find_coordinator(k) == (ErrorCode.NONE, me)
            assert await remote.initialize(k, 2, 5) == ErrorCode.NONE
            written = (StateBatch(5, 9, DeliveryState.ACKNOWLEDGED, 1), StateBatch(10, 12, DeliveryState.AVAILABLE, 3))
            assert await remote.write(k, StateWrite(2, 1, 5, written)) == ErrorCode.NONE
            state = await remote.read(k, 1)
            assert (state.error, state.state_epoch, state.start_offset, state.state_batches) == (
                ErrorCode.NONE, 2, 5, written)
            s = await remote.read_summary(k, 1)
            assert (s.error, s.state_epoch, s.leader_epoch, s.start_offset) == (ErrorCode.NONE, 2, 1, 5)
            assert await remote.write(k, StateWrite(1, 1, 5)) == ErrorCode.FENCED_STATE_EPOCH
            assert (await remote.read(SharePartitionKey(GROUP, tid, 3), 0)).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert await remote.delete(k) == ErrorCode.NONE
            assert (await remote.read(k, 1)).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        finally:
            remote.close()
        # no broker can be reached: retried, then the last retriable error
        nowhere = RemoteSharePersister(PeerClient(PeerSettings(lambda i: None), "share-test"), lambda: [me],
                                       SystemClock(), backoff_ms=1, max_attempts=2)
        try:
            assert await nowhere.initialize(SharePartitionKey(GROUP, tid, 0), 0, 0) == ErrorCode.NETWORK_EXCEPTION
        finally:
            nowhere.close()

    run(tmp_path, scenario, overrides=SHARE)


def test_a_delivery_state_kafka_does_not_persist_is_invalid(tmp_path):
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("jobs")
        tid = await topic_id(b, "jobs")
        await coordinator_found(b, tid)
        assert only(await b.request(initialize(GROUP, tid, 0, 0, 0), 0)).error_code == 0
        p = only(await b.request(write(GROUP, tid, 0, 0, 0, 0, [(0, 4, 5, 1)]), 0))  # 3 is ARCHIVING (KIP-1191)
        assert p.error_code == ErrorCode.INVALID_REQUEST
        p = only(await b.request(read(GROUP, tid, 0, 0), 0))
        assert (p.error_code, batches(p)) == (0, [])  # nothing was written

    run(tmp_path, scenario, overrides=SHARE)
