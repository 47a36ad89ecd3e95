"""TubeMQ consumers balanced by the group coordinator: rebalance events one at a time, releases before
assignments, no partition held by two clients (TubeMQ or Kafka) at any step, fencing, ownership checks."""

from __future__ import annotations

import random

import pytest

from tests.unit.server.tubemq.conftest import GROUP, SESSION_MS, Harness, SimClient, at_once, topic_id
from tidelog.coordinator.group import RequestInfo
from tidelog.protocol.messages import JoinGroupRequest
from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.server.tubemq.balancer import EventType

T = [("t", p) for p in range(4)]


def settle(*clients: SimClient, rounds: int = 6) -> None:
    for _ in range(rounds):
        for c in clients:
            c.heartbeat()


def code_of(call) -> TubeErrorCode:
    with pytest.raises(TubeError) as e:
        call()
    return e.value.code


def test_a_lone_consumer_is_connected_to_every_partition_once(h: Harness) -> None:
    a = SimClient(h, "a")
    response = a.register()
    assert response.success and response.errCode == 200
    first = a.heartbeat()
    assert first.event.opType == EventType.ONLY_CONNECT and first.event.rebalanceId > 0
    assert a.held == set(T)
    settle(a)
    assert a.events == [(EventType.ONLY_CONNECT, set(T))]  # confirmed: nothing more is sent


def test_a_joining_consumer_gets_partitions_only_after_the_holder_confirmed_their_release(h: Harness) -> None:
    a, b = SimClient(h, "a"), SimClient(h, "b")
    a.register()
    settle(a)
    b.register()
    b.heartbeat()
    assert not b.held and not b.events  # A still owns everything: nothing to connect yet
    a.heartbeat()
    kind, released = a.events[-1]
    assert kind == EventType.ONLY_DISCONNECT and len(released) == 2
    b.heartbeat()
    assert not b.held, "B was connected to partitions A has not confirmed releasing"
    a.heartbeat()  # A confirms the DISCONNECT: the coordinator frees the partitions
    b.heartbeat()
    assert b.events == [(EventType.ONLY_CONNECT, released)]
    assert a.held.isdisjoint(b.held) and a.held | b.held == set(T)
    h.exclusive()


def test_a_consumer_that_must_release_and_connect_gets_disconnect_then_connect(h: Harness) -> None:
    a = SimClient(h, "a")
    a.register(claimed={("u", 0)})  # a stale partition of a topic it no longer subscribes to
    settle(a)
    assert [kind for kind, _ in a.events] == [EventType.DISCONNECT, EventType.CONNECT]
    assert a.events[0][1] == {("u", 0)} and a.events[1][1] == set(T)
    assert a.held == set(T)


def test_three_consumers_split_evenly_and_a_leaver_frees_its_partitions(h: Harness) -> None:
    clients = [SimClient(h, n) for n in "abc"]
    for i, c in enumerate(clients):
        c.register()
        settle(*clients[: i + 1])
    assert sorted(len(c.held) for c in clients) == [1, 1, 2]
    assert set().union(*(c.held for c in clients)) == set(T)
    clients[0].close()
    settle(*clients[1:])
    assert sorted(len(c.held) for c in clients[1:]) == [2, 2]
    assert set().union(*(c.held for c in clients[1:])) == set(T)
    h.exclusive()


def test_a_silent_consumer_is_fenced_and_must_register_again(h: Harness) -> None:
    a, b = SimClient(h, "a"), SimClient(h, "b")
    a.register()
    b.register()
    settle(a, b)
    assert len(a.held) == len(b.held) == 2
    for _ in range(4):  # B keeps heartbeating while A is silent past its session timeout
        h.clock.advance(SESSION_MS // 3)
        b.heartbeat()
        h.coordinator.poll()
    settle(b)
    assert b.held == set(T)
    assert code_of(a.heartbeat) == TubeErrorCode.HB_NO_NODE
    assert code_of(lambda: at_once(h.balancer.check_owner(GROUP, "a", "t", 0, registering=False))) == TubeErrorCode.HB_NO_NODE
    a.register()  # TubeMQ clients register again after HB_NO_NODE; A still thinks it holds its old two
    settle(a, b)
    assert sorted([len(a.held), len(b.held)]) == [2, 2] and a.held.isdisjoint(b.held)


def test_the_broker_side_asks_the_coordinator_who_owns_a_partition(h: Harness) -> None:
    a, b = SimClient(h, "a"), SimClient(h, "b")
    a.register()
    settle(a)
    epoch = at_once(h.balancer.check_owner(GROUP, "a", "t", 0, registering=True))
    assert epoch == h.consumer_groups.group(GROUP).members["a"].member_epoch
    b.register()
    b.heartbeat()
    theirs = next(iter(a.held))
    # B may not register A's partition (PARTITION_OCCUPIED), nor read it (DUPLICATE_PARTITION).
    assert code_of(lambda: at_once(h.balancer.check_owner(GROUP, "b", *theirs, registering=True))) \
        == TubeErrorCode.PARTITION_OCCUPIED
    assert code_of(lambda: at_once(h.balancer.check_owner(GROUP, "b", *theirs, registering=False))) \
        == TubeErrorCode.DUPLICATE_PARTITION
    assert code_of(lambda: at_once(h.balancer.check_owner(GROUP, "nobody", "t", 0, registering=True))) \
        == TubeErrorCode.HB_NO_NODE
    a.heartbeat()  # A gets its DISCONNECT; until it confirms, A still owns the partitions (revoking)
    released = a.events[-1][1]
    for tp in released:
        assert at_once(h.balancer.check_owner(GROUP, "a", *tp, registering=False)) == epoch
    settle(a, b)
    for tp in released:
        at_once(h.balancer.check_owner(GROUP, "b", *tp, registering=True))
        assert code_of(lambda tp=tp: at_once(h.balancer.check_owner(GROUP, "a", *tp, registering=False))) \
            == TubeErrorCode.DUPLICATE_PARTITION


def test_a_kafka_member_and_a_tubemq_member_share_one_group(h: Harness) -> None:
    a = SimClient(h, "tube")
    a.register()
    settle(a)
    kafka = h.kafka_heartbeat("kafka", 0, set())
    assert not kafka.assignment.topic_partitions  # the TubeMQ member still holds everything
    a.heartbeat()  # DISCONNECT of two partitions
    kafka = h.kafka_heartbeat("kafka", kafka.member_epoch, set())
    assert not kafka.assignment.topic_partitions
    h.exclusive()
    a.heartbeat()  # confirmed
    kafka = h.kafka_heartbeat("kafka", kafka.member_epoch, set())
    got = {p for tp in kafka.assignment.topic_partitions if tp.topic_id == topic_id("t") for p in tp.partitions}
    assert {("t", p) for p in got} == set(T) - a.held and len(got) == 2
    h.exclusive()
    # The Kafka member leaves: the TubeMQ member is connected to its partitions.
    h.kafka_heartbeat("kafka", -1, set())
    settle(a)
    assert a.held == set(T)


@pytest.mark.parametrize("seed", range(8))
def test_random_joins_leaves_and_heartbeats_never_give_a_partition_to_two_clients(h: Harness, seed: int) -> None:
    rng = random.Random(seed)
    clients = {n: SimClient(h, n) for n in "abcd"}
    live: set[str] = set()
    for _ in range(120):
        name = rng.choice(sorted(clients))
        c = clients[name]
        if name not in live:
            if rng.random() < 0.5:
                c.register(claimed=set())
                live.add(name)
        elif rng.random() < 0.05:
            c.close()
            live.discard(name)
        else:
            c.heartbeat()
        held = [clients[n].held for n in live]
        assert sum(len(x) for x in held) == len(set().union(*held)), f"overlap: {held}"
        h.exclusive()
    settle(*(clients[n] for n in sorted(live)), rounds=8)
    if live:
        assert set().union(*(clients[n].held for n in live)) == set(T)


def test_registration_errors(h: Harness) -> None:
    def register(**fields) -> master_pb.RegisterResponseM2C:
        request = master_pb.RegisterRequestC2M(clientId="c", groupName=GROUP, hostName="h", topicList=["t"])
        for key, value in fields.items():
            if isinstance(value, list):
                del getattr(request, key)[:]
                getattr(request, key).extend(value)
            else:
                setattr(request, key, value)
        return at_once(h.balancer.register("h", request))

    assert code_of(lambda: register(topicList=["missing", "t"])) == TubeErrorCode.TOPIC_NOT_DEPLOYED
    assert code_of(lambda: register(topicList=[" "])) == TubeErrorCode.BAD_REQUEST
    assert code_of(lambda: register(clientId=" ")) == TubeErrorCode.BAD_REQUEST
    assert code_of(lambda: register(groupName="")) == TubeErrorCode.BAD_REQUEST
    assert code_of(lambda: register(requireBound=True)) == TubeErrorCode.BAD_REQUEST
    assert code_of(lambda: register(subscribeInfo=["not a subscription"])) == TubeErrorCode.BAD_REQUEST
    assert code_of(lambda: at_once(h.balancer.heartbeat("h", master_pb.HeartRequestC2M(
        clientId="c", groupName=GROUP, reportSubscribeInfo=False)))) == TubeErrorCode.HB_NO_NODE


def test_a_classic_kafka_group_that_cannot_be_upgraded_is_refused(h: Harness) -> None:
    # Joining a classic group is an online upgrade (Kafka 4.x); a member without the embedded consumer
    # protocol makes the upgrade impossible, and the TubeMQ consumer is refused with Kafka's reason.
    joined = []
    request = JoinGroupRequest(group_id="classic", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                               member_id="", protocol_type="consumer",
                               protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])
    h.coordinator.join_group(RequestInfo("k", "/h", 5), request, joined.append)
    request.member_id = joined[0].member_id
    h.coordinator.join_group(RequestInfo("k", "/h", 5), request, joined.append)
    h.coordinator.poll()
    assert h.coordinator.groups["classic"].group_type == "classic"
    with pytest.raises(TubeError) as e:
        at_once(h.balancer.register("h", master_pb.RegisterRequestC2M(clientId="c", groupName="classic",
                                                                      hostName="h", topicList=["t"])))
    assert e.value.code == TubeErrorCode.CONSUME_GROUP_FORBIDDEN and "Cannot upgrade classic group" in e.value.message


def test_a_consumer_that_never_confirms_its_disconnect_is_fenced_after_the_rebalance_timeout(h: Harness) -> None:
    a, b = SimClient(h, "a"), SimClient(h, "b")
    a.register()
    settle(a)
    b.register()
    a.heartbeat()
    assert a.events[-1][0] == EventType.ONLY_DISCONNECT
    a.done = None  # A's rebalance thread is stuck: the DISCONNECT is never confirmed
    a.held = set(T)
    members = h.consumer_groups.group(GROUP).members
    elapsed = 0
    while "a" in members and elapsed < 400_000:  # both keep heartbeating, A well within its session
        h.clock.advance(5000)
        elapsed += 5000
        a.heartbeat()
        b.heartbeat()
        h.coordinator.poll()
        h.exclusive()
        assert not b.held & a.held
    assert 295_000 <= elapsed <= 305_000, elapsed  # fenced at REBALANCE_TIMEOUT_MS (5 min)
    settle(b)
    assert b.held == set(T)
