"""The TubeMQ broker's write service: sendMessageP2B appends one message to a partition's log.

Thin: checks what TubeMQ's broker checks, then hands a one-record batch
(:func:`tidelog.server.tubemq.record.batch_of_message`) to the replica manager, the door Kafka's
Produce uses, with acks=all. What a bad request gets (TubeMQ's codes and messages):

* a topic that does not exist (or is internal), a partition it does not have -> 403 FORBIDDEN
  "... not existed, please check your configure";
* an empty payload -> 400 "data length is zero!"; a checksum other than -1 that does not match the
  payload -> 403 FORBIDDEN; an attribute prefix that does not fit the payload -> 400;
* with ``tubemq.authentication.enable``, a message without the ``authAuthorizedToken`` the master
  handed out -> 415 CERTIFICATE_FAILURE (:mod:`.authentication`);
* a message whose batch exceeds the topic's ``max.message.bytes`` -> 400 "data length over max length";
* the log refusing the append -> 503 SERVICE_UNAVAILABLE when it may pass later (not the leader, not
  enough replicas, ...), 500 otherwise; nothing is written then;
* in cluster mode the answer waits until every in-sync replica has the message (acks=all,
  :func:`when_replicated`, bounded by the request's timeout); a wait that fails -> 503. On a single
  node nothing waits and the handler answers at once.

A success answers ``messageId`` = the record's offset (also as decimal text in ``errMsg``, which old
clients parse), ``appendTime`` and ``appendOffset`` = the TubeMQ offset of the message.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from tidelog.clock import Clock
from tidelog.config import TopicConfig
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.protocol.tubemq.generated import broker_service_pb2 as broker_pb
from tidelog.protocol.tubemq.message import PayloadError, checksum, split_payload
from tidelog.protocol.tubemq.rpc import Method
from tidelog.replica.manager import ReplicaManager
from tidelog.server.tubemq.authentication import TubeAuthenticator
from tidelog.server.tubemq.dispatcher import TubeContext, tube_method
from tidelog.server.tubemq.record import batch_of_message, tube_offset

NO_CHECKSUM = -1
#: How long a message waits for the ISR when its request names no timeout (the Java client's default).
DEFAULT_TIMEOUT_MS = 10_000

T = TypeVar("T")
#: What a handler that may wait returns: its response, or an awaitable of it (cluster mode).
Answer = T | Awaitable[T]

#: Append failures a later retry may not meet (the producer marks the broker unavailable for a while).
_RETRIABLE = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS,
                        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.LEADER_NOT_AVAILABLE,
                        ErrorCode.REQUEST_TIMED_OUT})
_TOO_LARGE = frozenset({ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})


def check_partition(replicas: ReplicaManager, topic: str, partition: int) -> None:
    """TubeMQ's topic and partition checks: FORBIDDEN for what does not exist (or is internal)."""
    meta = replicas.image.topics.get(topic)
    if meta is None or meta.is_internal:
        raise TubeError(TubeErrorCode.FORBIDDEN, f"Topic {topic} not existed, please check your configure")
    if not 0 <= partition < len(meta.partitions):
        raise TubeError(TubeErrorCode.FORBIDDEN, f"Topic {topic}-{partition} not existed, please check your configure")


def when_replicated(replicas: ReplicaManager, topic: str, partition: int, end_offset: int, timeout_ms: int,
                    response: T) -> Answer[T]:
    """``response``, once every in-sync replica of ``topic``-``partition`` has ``end_offset``
    (acks=all): the response itself when nothing waits (a single node), else an awaitable of it that
    raises 503 SERVICE_UNAVAILABLE when the wait fails."""
    if not replicas.needs_acks_wait(topic, partition, -1):
        return response

    async def replicated() -> T:
        code = await replicas.wait_for_acks(topic, partition, end_offset, timeout_ms if timeout_ms > 0
                                            else DEFAULT_TIMEOUT_MS)
        if code != ErrorCode.NONE:
            raise TubeError(TubeErrorCode.SERVICE_UNAVAILABLE,
                            f"Put message failed: {code.name}: the message did not reach the in-sync replicas")
        return response

    return replicated()


class ProducerService:
    def __init__(self, replicas: ReplicaManager, clock: Clock, authenticator: TubeAuthenticator | None = None) -> None:
        self.replicas = replicas
        self.clock = clock
        self.authenticator = authenticator

    @tube_method(Method.SEND_MESSAGE_P2B)
    def send_message(self, ctx: TubeContext, request: broker_pb.SendMessageRequestP2B) -> Answer[broker_pb.SendMessageResponseB2P]:
        if self.authenticator is not None:
            self.authenticator.check_token(request.authInfo.authAuthorizedToken)
        topic = request.topicName.strip()
        check_partition(self.replicas, topic, request.partitionId)
        data = request.data
        if not data:
            raise TubeError(TubeErrorCode.BAD_REQUEST, "data length is zero!")
        if request.checkSum != NO_CHECKSUM and request.checkSum != checksum(data):
            raise TubeError(TubeErrorCode.FORBIDDEN, f"Checksum msg data failure: {request.checkSum} of {topic} not "
                            f"equal to the data's checksum of {checksum(data)}")
        try:
            attribute, body = split_payload(data, request.flag)
        except PayloadError as e:
            raise TubeError(TubeErrorCode.BAD_REQUEST, f"message payload: {e}") from None
        now = self.clock.wall_ms()
        batch = batch_of_message(attribute, body, request.msgType or None, request.msgTime or None, now)
        limit = self._leader_config(topic, request.partitionId).max_message_bytes
        if len(batch) > limit:
            raise TubeError(TubeErrorCode.BAD_REQUEST, f"data length over max length, allowed max length is {limit} "
                            f"(max.message.bytes of {topic}, batch overhead included), data length is {len(batch)}")
        try:
            result = self.replicas.append_records(topic, request.partitionId, bytearray(batch), acks=-1)
        except KafkaError as e:
            if e.code in _TOO_LARGE:
                raise TubeError(TubeErrorCode.BAD_REQUEST, f"data length over max length: {e.message}") from None
            code = TubeErrorCode.SERVICE_UNAVAILABLE if e.code in _RETRIABLE else TubeErrorCode.INTERNAL_SERVER_ERROR
            raise TubeError(code, f"Put message failed: {e.code.name}: {e.message or ''}".rstrip(": ")) from None
        offset = result.first_offset
        append_time = result.log_append_time if result.log_append_time >= 0 else now
        response = broker_pb.SendMessageResponseB2P(success=True, errCode=TubeErrorCode.SUCCESS, errMsg=str(offset),
                                                    messageId=offset, appendTime=append_time,
                                                    appendOffset=tube_offset(offset))
        return when_replicated(self.replicas, topic, request.partitionId, result.last_offset + 1, ctx.timeout_ms,
                               response)

    def _leader_config(self, topic: str, partition: int) -> TopicConfig:
        try:
            return self.replicas.leader_config(topic, partition)
        except KafkaError as e:
            raise TubeError(TubeErrorCode.SERVICE_UNAVAILABLE, f"Put message failed: {e.code.name}: {e.message}") from None


__all__ = ["DEFAULT_TIMEOUT_MS", "NO_CHECKSUM", "Answer", "ProducerService", "check_partition", "when_replicated"]
