"""The TubeMQ broker's read service: consumers register partitions, heartbeat, get messages, commit.

Ownership is the group coordinator's (:meth:`TubeBalancer.check_owner`): a client may register and
read a partition only while its group member owns it (assigned, or still revoking it), so TubeMQ's
exclusive consumption and a KIP-848 group's "one owner per partition" are one rule. On top of that,
as in TubeMQ, a partition must have been registered at the broker by the client that reads it.

What each request gets when it cannot be served (TubeMQ's codes, which its clients act on):

=======================  ===================================================================
register (opType 31)     410 PARTITION_OCCUPIED: the partition is not this member's (the client
                         stops trying it in this rebalance); 403 FORBIDDEN: no such topic or
                         partition; 411 HB_NO_NODE: the client is no member (register with the master)
unregister (opType 32)   411: not registered; 412 DUPLICATE_PARTITION: registered by another client
heartbeat                per partition in ``failureInfo``: 411 (not registered, or no longer the
                         member's), 412 (another member owns it); the client drops those
getMessages              411 / 412 as above (the client drops the partition); 404 NOT_FOUND: no
                         message after the offset (the client waits ``msgNotFoundWaitPeriodMs``);
                         403: the topic is gone
commit                   401 UNAUTHORIZED: not registered by this client
any of them              503 SERVICE_UNAVAILABLE (cluster mode): the group coordinator's write (an
                         offset commit, the member's ownership) did not reach the in-sync replicas
                         in time, or the coordinator moved
=======================  ===================================================================

Offsets follow :mod:`tidelog.server.tubemq.offsets`. Reads are read_committed: up to the last stable
offset, without the records of aborted transactions. Every handler is ``async``: ownership and
offsets come from the group service, whose calls return once the coordinator's writes they made or
reflect are committed (:mod:`tidelog.coordinator.group.service` rule 1), so an answer never reports
what the ISR may still lose. Loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.protocol.tubemq.generated import broker_service_pb2 as broker_pb
from tidelog.protocol.tubemq.notation import NotationError, PartitionRef, failure_info, parse_partition
from tidelog.protocol.tubemq.rpc import Method
from tidelog.replica.fetch import READ_COMMITTED, PartitionFetch
from tidelog.replica.manager import ReplicaManager
from tidelog.server.tubemq.balancer import TubeBalancer
from tidelog.server.tubemq.dispatcher import TubeContext, tube_method
from tidelog.server.tubemq.offsets import TubeOffsets
from tidelog.server.tubemq.producer import check_partition
from tidelog.server.tubemq.record import kafka_offset, transfered_messages, tube_offset

log = logging.getLogger(__name__)

OP_REGISTER = 31
OP_UNREGISTER = 32
#: Bytes of one getMessages response (at least one whole batch is always returned).
MAX_READ_BYTES = 1_048_576


@dataclass(frozen=True, slots=True)
class Registration:
    client_id: str
    msg_types: frozenset[str] | None  # the consumer's message type filter (filterCondStr), if any


class ConsumerService:
    def __init__(self, replicas: ReplicaManager, balancer: TubeBalancer, offsets: TubeOffsets) -> None:
        self.replicas = replicas
        self.balancer = balancer
        self.offsets = offsets
        self.registrations: dict[tuple[str, str, int], Registration] = {}

    # --------------------------------------------------------------------------- registration

    @tube_method(Method.CONSUMER_REGISTER_C2B)
    async def register(self, ctx: TubeContext, request: broker_pb.RegisterRequestC2B) -> broker_pb.RegisterResponseB2C:
        client_id, group, topic = _text(request.clientId, "clientId"), _text(request.groupName, "groupName"), \
            request.topicName.strip()
        key = (group, topic, request.partitionId)
        if request.opType == OP_UNREGISTER:  # also for a topic deleted meanwhile: the registration goes
            return await self._unregister(key, client_id, request.readStatus)
        check_partition(self.replicas, topic, request.partitionId)
        if request.opType != OP_REGISTER:
            raise TubeError(TubeErrorCode.BAD_REQUEST, f"Invalid request: opType {request.opType} is neither "
                            f"{OP_REGISTER} (register) nor {OP_UNREGISTER} (unregister)")
        epoch = await self.balancer.check_owner(group, client_id, topic, request.partitionId, registering=True)
        log_start, end = self._bounds(topic, request.partitionId)
        requested = kafka_offset(request.currOffset) if request.HasField("currOffset") and request.currOffset >= 0 \
            else None
        offset = await self.offsets.load(key, (client_id, epoch), request.readStatus, requested, log_start, end)
        filters = frozenset(f.strip() for f in request.filterCondStr if f.strip())
        self.registrations[key] = Registration(client_id, filters or None)
        return broker_pb.RegisterResponseB2C(success=True, errCode=TubeErrorCode.SUCCESS, errMsg="OK!",
                                             currOffset=tube_offset(offset), maxOffset=tube_offset(end))

    async def _unregister(self, key: tuple[str, str, int], client_id: str, read_status: int
                          ) -> broker_pb.RegisterResponseB2C:
        self._registered(key, client_id, TubeErrorCode.HB_NO_NODE, TubeErrorCode.DUPLICATE_PARTITION)
        del self.registrations[key]
        message = "OK!"
        try:
            epoch = await self.balancer.member_epoch(key[0], client_id)
            if epoch is None:
                raise TubeError(TubeErrorCode.HB_NO_NODE, f"{client_id} is no longer a member of group {key[0]}")
            await self.offsets.confirm(key, (client_id, epoch), read_status == 0)
        except TubeError as e:
            self.offsets.forget(key)
            if e.code == TubeErrorCode.SERVICE_UNAVAILABLE:
                raise  # the commit may not have reached the in-sync replicas: never success
            message = f"OK! (unregistered; the last pack's offset was not committed: {e.message})"
        return broker_pb.RegisterResponseB2C(success=True, errCode=TubeErrorCode.SUCCESS, errMsg=message)

    def _registered(self, key: tuple[str, str, int], client_id: str, missing: TubeErrorCode,
                    other: TubeErrorCode) -> Registration:
        registration = self.registrations.get(key)
        group, topic, partition = key
        if registration is None:
            raise TubeError(missing, f"UnRegistered Consumer:{client_id} on {topic}:{partition} of group {group}, "
                            "you have to register firstly!")
        if registration.client_id != client_id:
            raise TubeError(other, f"[Duplicated Request] Partition {topic}:{partition} of group {group} has been "
                            f"registered by {registration.client_id}; current consumer {client_id}")
        return registration

    # ------------------------------------------------------------------------------- heartbeat

    @tube_method(Method.CONSUMER_HEARTBEAT_C2B)
    async def heartbeat(self, ctx: TubeContext, request: broker_pb.HeartBeatRequestC2B) -> broker_pb.HeartBeatResponseB2C:
        client_id, group = _text(request.clientId, "clientId"), _text(request.groupName, "groupName")
        failures = []
        for text in request.partitionInfo:
            try:
                ref = parse_partition(text)
            except NotationError as e:
                raise TubeError(TubeErrorCode.BAD_REQUEST, f"partitionInfo: {e}") from None
            code = await self._heartbeat_failure(group, client_id, ref)
            if code is not None:
                failures.append(failure_info(code, ref))
        return broker_pb.HeartBeatResponseB2C(success=True, errCode=TubeErrorCode.SUCCESS, errMsg="OK!",
                                              hasPartFailure=bool(failures), failureInfo=failures)

    async def _heartbeat_failure(self, group: str, client_id: str, ref: PartitionRef) -> int | None:
        key = (group, ref.topic, ref.partition)
        try:
            self._registered(key, client_id, TubeErrorCode.HB_NO_NODE, TubeErrorCode.DUPLICATE_PARTITION)
            await self.balancer.check_owner(group, client_id, ref.topic, ref.partition, registering=False)
        except TubeError as e:
            if e.code == TubeErrorCode.SERVICE_UNAVAILABLE:
                raise  # the coordinator cannot say (moved, or its writes not committed): no answer per partition
            return int(e.code)
        return None

    # ---------------------------------------------------------------------------- get messages

    @tube_method(Method.GET_MESSAGES_C2B)
    async def get_messages(self, ctx: TubeContext, request: broker_pb.GetMessageRequestC2B
                           ) -> broker_pb.GetMessageResponseB2C:
        client_id, group, topic = _text(request.clientId, "clientId"), _text(request.groupName, "groupName"), \
            request.topicName.strip()
        partition = request.partitionId
        key = (group, topic, partition)
        registration = self._registered(key, client_id, TubeErrorCode.HB_NO_NODE, TubeErrorCode.DUPLICATE_PARTITION)
        check_partition(self.replicas, topic, partition)
        epoch = await self.balancer.check_owner(group, client_id, topic, partition, registering=False)
        member = (client_id, epoch)
        log_start, end = self._bounds(topic, partition)
        start = await self.offsets.start_of_fetch(key, member, request.lastPackConsumed, log_start, end)
        if start >= end:
            raise TubeError(TubeErrorCode.NOT_FOUND, "The request offset reached maxOffset!")
        topic_id = self.replicas.image.topics[topic].topic_id
        read = self.replicas.read_partitions([PartitionFetch(topic, topic_id, partition, start, MAX_READ_BYTES)],
                                             None, READ_COMMITTED)[0]
        if read.error != ErrorCode.NONE:
            code = TubeErrorCode.NOT_FOUND if read.error == ErrorCode.OFFSET_OUT_OF_RANGE \
                else TubeErrorCode.SERVICE_UNAVAILABLE
            raise TubeError(code, f"Get message failure: {read.error.name}: {read.error_message or ''}".rstrip(": "))
        data = read.records.read() if read.records is not None else b""
        result = transfered_messages(data, start, read.aborted, registration.msg_types)
        if result.next_offset <= start:
            raise TubeError(TubeErrorCode.NOT_FOUND, "The request offset reached maxOffset!")
        # The pack becomes tentative only once every wait above succeeded (a failed one answers 503 and
        # a retry reads the pack again).
        await self.offsets.after_fetch(key, member, result.next_offset, len(result.messages))
        return broker_pb.GetMessageResponseB2C(success=True, errCode=TubeErrorCode.SUCCESS, errMsg="OK!",
                                               messages=result.messages, currOffset=tube_offset(start),
                                               maxOffset=tube_offset(end))

    # ---------------------------------------------------------------------------------- commit

    @tube_method(Method.CONSUMER_COMMIT_C2B)
    async def commit(self, ctx: TubeContext, request: broker_pb.CommitOffsetRequestC2B
                     ) -> broker_pb.CommitOffsetResponseB2C:
        client_id, group, topic = _text(request.clientId, "clientId"), _text(request.groupName, "groupName"), \
            request.topicName.strip()
        key = (group, topic, request.partitionId)
        check_partition(self.replicas, topic, request.partitionId)
        self._registered(key, client_id, TubeErrorCode.UNAUTHORIZED, TubeErrorCode.UNAUTHORIZED)
        epoch = await self.balancer.member_epoch(group, client_id)
        if epoch is None:
            raise TubeError(TubeErrorCode.HB_NO_NODE, f"{client_id} is no longer a member of group {group}")
        consumed = request.lastPackConsumed if request.HasField("lastPackConsumed") else True
        committed = await self.offsets.confirm(key, (client_id, epoch), consumed)
        log_start, end = self._bounds(topic, request.partitionId)
        return broker_pb.CommitOffsetResponseB2C(
            success=True, errCode=TubeErrorCode.SUCCESS, errMsg="OK!",
            currOffset=tube_offset(log_start if committed is None else committed), maxOffset=tube_offset(end))

    # --------------------------------------------------------------------------------- helpers

    def _bounds(self, topic: str, partition: int) -> tuple[int, int]:
        """(log start offset, last stable offset): where a read_committed consumer may read."""
        try:
            offsets = self.replicas.leader_offsets(topic, partition)
        except KafkaError as e:
            raise TubeError(TubeErrorCode.SERVICE_UNAVAILABLE, f"{topic}:{partition}: {e.code.name}") from None
        return offsets.log_start_offset, offsets.last_stable_offset

    def forget_client(self, group: str, client_id: str) -> None:
        """Drop what a departed client registered (its tentative offsets are rolled back)."""
        for key, registration in list(self.registrations.items()):
            if key[0] == group and registration.client_id == client_id:
                del self.registrations[key]
                self.offsets.forget(key)


def _text(value: str, name: str) -> str:
    value = value.strip()
    if not value:
        raise TubeError(TubeErrorCode.BAD_REQUEST, f"Request miss necessary {name} data!")
    return value


__all__ = ["MAX_READ_BYTES", "OP_REGISTER", "OP_UNREGISTER", "ConsumerService", "Registration"]
