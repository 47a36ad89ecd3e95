"""TubeMQ's server-side balancing, done by the group coordinator: a TubeMQ consumer is a member of a
KIP-848 consumer group, and the master's rebalance events are that member's reconciliation.

How a TubeMQ consumer maps onto a member (docs/tubemq.md draws the exchange):

1. **Register** (consumerRegisterC2M) joins the group: a ConsumerGroupHeartbeat with epoch 0, member
   id = the TubeMQ client id, the subscribed topics, through the group service's
   :meth:`~tidelog.coordinator.group.service.GroupCoordinatorService.consumer_group_heartbeat`, the
   call Kafka's ConsumerGroupHeartbeat handler makes. A client the coordinator still knows (a
   re-register after HB_NO_NODE, or after a broker restart) first leaves, then joins afresh.
2. **Heartbeat** (consumerHeartbeatC2M) is a coordinator heartbeat at the member's epoch (the one
   the coordinator's last answer gave, as a Kafka consumer sends it; a fenced or unknown member
   gets HB_NO_NODE). It reports as owned what the client holds: the partitions it reported
   (``subscribeInfo``) plus those of a CONNECT it has not confirmed yet. The coordinator answers
   with the partitions the member may own now (``assignment``); the master turns the difference into
   one event at a time:
   partitions held but no longer assigned go out first as DISCONNECT (ONLY_DISCONNECT when nothing
   is to be connected), and only once the client has confirmed them (the next heartbeat carries
   the event with its rebalanceId) are assigned partitions sent as CONNECT (ONLY_CONNECT when
   nothing was released first). The coordinator never assigns a partition another member still
   owns, and a TubeMQ member stops owning a partition only when its client confirmed the
   DISCONNECT (having unregistered it at the broker): so a Kafka member and a TubeMQ member never
   own a partition at once, and the KIP-848 rule "revoke before assign" holds for both.
3. **Close** (consumerCloseClientC2M) leaves the group (epoch -1): its partitions are free at once.
   A client that stops heartbeating is fenced by the coordinator after
   ``group.consumer.session.timeout.ms``; one that does not confirm a DISCONNECT within
   :data:`REBALANCE_TIMEOUT_MS` is fenced too. Its next heartbeat gets HB_NO_NODE (411), and TubeMQ
   clients answer that by registering again.

What the broker service asks (:meth:`TubeBalancer.check_owner`): a partition may be registered and
read only by the member the coordinator assigned it to (or that is still revoking it).
The master's own state (what each client holds, the event in flight) is memory only, as TubeMQ's.

Every call to the group service returns once the coordinator's writes it made or reflects are
committed (in cluster mode: the ISR of the group's ``__consumer_offsets`` partition has them); a
wait that fails raises the coordinator's error, answered as :func:`tube_error` (503
SERVICE_UNAVAILABLE for NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE), never success. Loop-only, not
thread-safe.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import IntEnum

from tidelog.clock import Clock
from tidelog.cluster.store import MetadataStore
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroupMember
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import ConsumerGroupHeartbeatRequest
from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.protocol.tubemq.notation import (
    BrokerAddress,
    NotationError,
    PartitionRef,
    SubscribeInfo,
    parse_subscribe_info,
)

log = logging.getLogger(__name__)

#: How long a TubeMQ member may take to confirm a DISCONNECT before the coordinator fences it
#: (Kafka's max.poll.interval.ms default): two TubeMQ heartbeats (13 s each) plus the wait for
#: messages being consumed.
REBALANCE_TIMEOUT_MS = 300_000
LEAVE_GROUP_MEMBER_EPOCH = -1

TopicPartition = tuple[str, int]


class EventType(IntEnum):
    """TubeMQ's rebalance event types (``EventProto.opType``)."""

    CONNECT = 1
    DISCONNECT = 2
    REPORT = 3
    REFRESH = 4
    STOP_REBALANCE = 5
    ONLY_CONNECT = 10
    ONLY_DISCONNECT = 20


@dataclass(slots=True)
class Event:
    rebalance_id: int
    type: EventType
    partitions: frozenset[TopicPartition]


@dataclass(slots=True)
class TubeMember:
    """What the master knows of one TubeMQ consumer."""

    group: str
    client_id: str
    host: str
    topics: tuple[str, ...]
    held: set[TopicPartition] = field(default_factory=set)
    #: The member epoch the coordinator's last answer gave (the next heartbeat's, as a Kafka consumer's).
    epoch: int = 0
    in_flight: Event | None = None
    #: A DISCONNECT went out while partitions waited to be connected: the next connect is CONNECT.
    connect_follows: bool = False


#: Kafka error codes of a coordinator heartbeat -> what a TubeMQ client gets.
_KAFKA_TO_TUBE = {
    ErrorCode.UNKNOWN_MEMBER_ID: TubeErrorCode.HB_NO_NODE,
    ErrorCode.FENCED_MEMBER_EPOCH: TubeErrorCode.HB_NO_NODE,
    ErrorCode.GROUP_ID_NOT_FOUND: TubeErrorCode.CONSUME_GROUP_FORBIDDEN,
    ErrorCode.GROUP_MAX_SIZE_REACHED: TubeErrorCode.CONSUME_GROUP_FORBIDDEN,
    ErrorCode.INVALID_REQUEST: TubeErrorCode.BAD_REQUEST,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: TubeErrorCode.SERVICE_UNAVAILABLE,
    ErrorCode.NOT_COORDINATOR: TubeErrorCode.SERVICE_UNAVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: TubeErrorCode.SERVICE_UNAVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: TubeErrorCode.SERVICE_UNAVAILABLE,
}


#: A heartbeat's coordinator errors that mean the client is no (longer a) member of a consumer group:
#: fenced, never registered, or its group gone or no consumer group.
_NOT_A_MEMBER = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH,
                           ErrorCode.GROUP_ID_NOT_FOUND})
#: What a coordinator error that is no refusal of the request means for a TubeMQ client.
_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})


def tube_error(e: KafkaError, what: str) -> TubeError:
    code = _KAFKA_TO_TUBE.get(e.code, TubeErrorCode.INTERNAL_SERVER_ERROR)
    hint = (" (the coordinator's write did not reach the in-sync replicas in time, or the coordinator moved)"
            if e.code in _MOVED else "")
    return TubeError(code, f"{what}: {e.code.name}: {e.message or e.code.name}{hint}")


class TubeBalancer:
    """The TubeMQ master's consumer side over the group coordinator (see the module rules)."""

    def __init__(self, groups: GroupCoordinatorService, store: MetadataStore, clock: Clock,
                 broker_address: Callable[[], BrokerAddress]) -> None:
        self.groups = groups
        self.store = store
        self.broker_address = broker_address
        self.members: dict[tuple[str, str], TubeMember] = {}
        self._rebalance_ids = itertools.count(max(1, clock.wall_ms()))

    # ------------------------------------------------------------------------------- master side

    def coordinates(self, group: str) -> bool:
        """Whether this broker coordinates ``group`` (its master is the group's active master)."""
        return self.groups.coordinates(group)

    async def register(self, host: str, request: master_pb.RegisterRequestC2M) -> master_pb.RegisterResponseM2C:
        client_id, group = _client_id(request.clientId), _group(request.groupName)
        topics = tuple(sorted({t.strip() for t in request.topicList if t.strip()}))
        if not topics:
            raise TubeError(TubeErrorCode.BAD_REQUEST, "Request subscribed topicList data must not Blank!")
        image = self.store.image
        missing = [t for t in topics if t not in image.topics or image.topics[t].is_internal]
        if missing:
            raise TubeError(TubeErrorCode.TOPIC_NOT_DEPLOYED, f"Requested topic [{', '.join(missing)}] not deployed!")
        if request.requireBound:
            raise TubeError(TubeErrorCode.BAD_REQUEST, "bound consumption (completeSubscribe with a session key and "
                            "partition offsets) is not served by Tidelog: partitions are assigned by the group "
                            "coordinator; use completeSubscribe() without arguments")
        held = self._parse_held(request.subscribeInfo, group)
        known = await self._coordinator_member(group, client_id)
        if known is not None:
            await self._leave(group, client_id, host)
        try:
            epoch, _ = await self._heartbeat(group, client_id, 0, topics, set(), host)
        except KafkaError as e:
            raise tube_error(e, f"group {group}") from None
        self.members[(group, client_id)] = TubeMember(group, client_id, host, topics, held, epoch=epoch)
        return master_pb.RegisterResponseM2C(success=True, errCode=TubeErrorCode.SUCCESS, errMsg="OK!",
                                             **flow_control(request))

    async def heartbeat(self, host: str, request: master_pb.HeartRequestC2M) -> master_pb.HeartResponseM2C:
        client_id, group = _client_id(request.clientId), _group(request.groupName)
        member = self.members.get((group, client_id))
        if member is None:
            raise _not_registered(group, client_id)
        if request.HasField("event") and member.in_flight is not None \
                and request.event.rebalanceId == member.in_flight.rebalance_id:
            done = member.in_flight
            log.info("TubeMQ consumer %s of group %s confirmed %s %s (rebalance %d)", client_id, group,
                     done.type.name, _names(done.partitions), done.rebalance_id)
            if done.type in (EventType.DISCONNECT, EventType.ONLY_DISCONNECT):
                member.held -= done.partitions
            else:
                member.held |= done.partitions
            member.in_flight = None
        if request.reportSubscribeInfo:
            member.held = self._parse_held(request.subscribeInfo, group)
        owned = set(member.held)
        if member.in_flight is not None and member.in_flight.type in (EventType.CONNECT, EventType.ONLY_CONNECT):
            owned |= member.in_flight.partitions
        try:
            member.epoch, assigned = await self._heartbeat(group, client_id, member.epoch, member.topics, owned, host)
        except KafkaError as e:
            if e.code not in _NOT_A_MEMBER:
                raise tube_error(e, f"group {group}") from None
            self.members.pop((group, client_id), None)
            raise _not_registered(group, client_id) from None
        member.host = host
        response = master_pb.HeartResponseM2C(success=True, errCode=TubeErrorCode.SUCCESS, errMsg="OK!",
                                              **flow_control(request))
        event = self._next_event(member, assigned)
        if event is not None:
            response.event.CopyFrom(master_pb.EventProto(
                rebalanceId=event.rebalance_id, opType=int(event.type),
                subscribeInfo=[str(self._subscribe_info(member, tp)) for tp in sorted(event.partitions)]))
        return response

    async def close(self, host: str, request: master_pb.CloseRequestC2M) -> master_pb.CloseResponseM2C:
        client_id, group = _client_id(request.clientId), _group(request.groupName)
        self.members.pop((group, client_id), None)
        if await self._coordinator_member(group, client_id) is not None:
            await self._leave(group, client_id, host)
        return master_pb.CloseResponseM2C(success=True, errCode=TubeErrorCode.SUCCESS, errMsg="OK!")

    def _next_event(self, member: TubeMember, assigned: set[TopicPartition]) -> Event | None:
        """Rule 2: one event at a time; releases before assignments."""
        if member.in_flight is not None:
            return None
        release = member.held - assigned
        connect = assigned - member.held
        if release:
            member.connect_follows = bool(connect)
            kind = EventType.DISCONNECT if connect else EventType.ONLY_DISCONNECT
            member.in_flight = Event(next(self._rebalance_ids), kind, frozenset(release))
        elif connect:
            kind = EventType.CONNECT if member.connect_follows else EventType.ONLY_CONNECT
            member.connect_follows = False
            member.in_flight = Event(next(self._rebalance_ids), kind, frozenset(connect))
        if member.in_flight is not None:
            log.info("TubeMQ consumer %s of group %s: %s %s (rebalance %d)", member.client_id, member.group,
                     member.in_flight.type.name, _names(member.in_flight.partitions), member.in_flight.rebalance_id)
        return member.in_flight

    # ------------------------------------------------------------------------------- broker side

    async def check_owner(self, group: str, client_id: str, topic: str, partition: int, *, registering: bool) -> int:
        """The member epoch of ``client_id`` if the coordinator lets it own ``topic``-``partition``;
        otherwise TubeError: PARTITION_OCCUPIED when registering, DUPLICATE_PARTITION (another member
        owns it) or HB_NO_NODE (nobody does, or the client is no member) afterwards."""
        members = await self._coordinator_members(group)
        member = members.get(client_id)
        if member is None or (group, client_id) not in self.members:
            raise TubeError(TubeErrorCode.HB_NO_NODE, f"Consumer {client_id} is not a registered member of group "
                            f"{group}; register with the master first")
        topic_meta = self.store.image.topics.get(topic)
        if topic_meta is not None and _owns(member, topic_meta.topic_id, partition):
            return member.member_epoch
        other = _other_owner(members, client_id, topic_meta.topic_id if topic_meta else None, partition)
        where = f"partition {topic}:{partition} of group {group}"
        if registering:
            raise TubeError(TubeErrorCode.PARTITION_OCCUPIED,
                            f"[Partition occupied] {where} is assigned to {other or 'another member'}, "
                            f"not to {client_id}")
        if other is not None:
            raise TubeError(TubeErrorCode.DUPLICATE_PARTITION,
                            f"[Duplicated Request] {where} has been consumed by {other}; current consumer {client_id}")
        raise TubeError(TubeErrorCode.HB_NO_NODE, f"{where} is not assigned to {client_id}")

    async def member_epoch(self, group: str, client_id: str) -> int | None:
        member = await self._coordinator_member(group, client_id)
        return member.member_epoch if member is not None else None

    # ---------------------------------------------------------------------------------- helpers

    async def _coordinator_members(self, group: str) -> dict[str, ConsumerGroupMember]:
        try:
            return await self.groups.consumer_group_members(group)
        except KafkaError as e:
            raise tube_error(e, f"group {group}") from None

    async def _coordinator_member(self, group: str, client_id: str) -> ConsumerGroupMember | None:
        return (await self._coordinator_members(group)).get(client_id)

    async def _heartbeat(self, group: str, client_id: str, epoch: int, topics: Iterable[str],
                         owned: set[TopicPartition], host: str) -> tuple[int, set[TopicPartition]]:
        """One coordinator heartbeat: the member's epoch and the partitions it may own now, by name.
        Raises the coordinator's KafkaError when it refuses (or its write is not committed)."""
        if not self.groups.active:
            raise TubeError(TubeErrorCode.SERVICE_UNAVAILABLE, "the group coordinator is not available")
        image = self.store.image
        by_topic: dict[uuid.UUID, list[int]] = {}
        for topic, partition in sorted(owned):
            meta = image.topics.get(topic)
            if meta is not None:
                by_topic.setdefault(meta.topic_id, []).append(partition)
        request = ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=client_id, member_epoch=epoch, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            subscribed_topic_names=list(topics),
            topic_partitions=[ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=t, partitions=ps)
                              for t, ps in by_topic.items()])
        response = await self.groups.consumer_group_heartbeat(request, api_version=1, image=image,
                                                              client_id=client_id, client_host="/" + host)
        names = {t.topic_id: t.name for t in image.topics.values()}
        assignment = response.assignment.topic_partitions if response.assignment is not None else []
        return response.member_epoch, {(names[tp.topic_id], p) for tp in assignment if tp.topic_id in names
                                       for p in tp.partitions}

    async def _leave(self, group: str, client_id: str, host: str) -> None:
        request = ConsumerGroupHeartbeatRequest(group_id=group, member_id=client_id,
                                                member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
        try:
            await self.groups.consumer_group_heartbeat(request, api_version=1, image=self.store.image,
                                                       client_id=client_id, client_host="/" + host)
        except KafkaError as e:
            if e.code not in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.GROUP_ID_NOT_FOUND):
                raise tube_error(e, f"group {group}") from None

    def _parse_held(self, infos: Iterable[str], group: str) -> set[TopicPartition]:
        held = set()
        for text in infos:
            try:
                info = parse_subscribe_info(text)
            except NotationError as e:
                raise TubeError(TubeErrorCode.BAD_REQUEST, f"subscribeInfo: {e}") from None
            if info.group == group:
                held.add((info.partition.topic, info.partition.partition))
        return held

    def _subscribe_info(self, member: TubeMember, tp: TopicPartition) -> SubscribeInfo:
        return SubscribeInfo(member.client_id, member.group, PartitionRef(self.broker_address(), *tp))


def _names(partitions: Iterable[TopicPartition]) -> str:
    return ", ".join(f"{t}:{p}" for t, p in sorted(partitions))


def _not_registered(group: str, client_id: str) -> TubeError:
    return TubeError(TubeErrorCode.HB_NO_NODE, f"Consumer {client_id} of group {group} is not registered "
                     "(or was fenced by the group coordinator); register again")


def _other_owner(members: dict[str, ConsumerGroupMember], client_id: str, topic_id: uuid.UUID | None,
                 partition: int) -> str | None:
    if topic_id is None:
        return None
    for member_id, member in members.items():
        if member_id != client_id and _owns(member, topic_id, partition):
            return member_id
    return None


def _owns(member: ConsumerGroupMember, topic_id: uuid.UUID, partition: int) -> bool:
    return (partition in member.assigned_partitions.get(topic_id, frozenset())
            or partition in member.partitions_pending_revocation.get(topic_id, frozenset()))


def _client_id(value: str) -> str:
    value = value.strip()
    if not value:
        raise TubeError(TubeErrorCode.BAD_REQUEST, "Request miss necessary clientId data!")
    if len(value) > 1024:
        raise TubeError(TubeErrorCode.BAD_REQUEST, "clientId's length over max value, allowed max length is 1024")
    return value


def _group(value: str) -> str:
    value = value.strip()
    if not value:
        raise TubeError(TubeErrorCode.BAD_REQUEST, "Request miss necessary groupName data!")
    if len(value) > 1024:
        raise TubeError(TubeErrorCode.BAD_REQUEST, "groupName's length over max value, allowed max length is 1024")
    return value


def flow_control(request: object) -> dict[str, object]:
    """What TubeMQ's master answers about flow control when it has none configured (it answers only
    clients that ask, i.e. send check ids): undefined ids and blank rules."""
    if not (request.HasField("defFlowCheckId") or request.HasField("groupFlowCheckId")):  # type: ignore[attr-defined]
        return {}
    undefined = -2
    return {"ssdStoreId": undefined, "qryPriorityId": undefined, "defFlowCheckId": undefined,
            "groupFlowCheckId": undefined, "defFlowControlInfo": " ", "groupFlowControlInfo": " "}


__all__ = ["REBALANCE_TIMEOUT_MS", "Event", "EventType", "TubeBalancer", "TubeMember", "flow_control", "tube_error"]
