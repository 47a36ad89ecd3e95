"""The TubeMQ master service: producer metadata, and consumers' registration and balancing.

Producers (TubeMQ's TMaster.producer*P2M): register and heartbeat answer with the one broker
(``brokerInfos``: ``brokerId:host:port`` of this broker's TubeMQ broker listener, with a checksum so
clients skip unchanged lists) and, on heartbeats, a topic info per published topic that exists:
``topic#brokerId:partitions:1#maxMsgSize``, every Kafka partition being a TubeMQ partition of the
same id. ``maxMsgSize`` is the topic's ``max.message.bytes`` less :data:`BATCH_HEADROOM` bytes for the
record batch around the message. Producers hold no session here: a heartbeat from an unknown
producer is answered as any other, and close does nothing. Topics are never created for TubeMQ
clients (TubeMQ does not create them either); unknown ones are simply left out, which the client
reports as "Publish topic failure, make sure the topic ... exist".

Consumers: :class:`~tidelog.server.tubemq.balancer.TubeBalancer` (the group coordinator does the
balancing, through the group service). Their handlers are ``async``: each is answered once the
coordinator's writes it made or reflects are committed (in cluster mode: in the ISR of the group's
``__consumer_offsets`` partition); a wait that fails is answered 503 SERVICE_UNAVAILABLE, never
success. A consumer's master requests go to the broker that coordinates its group; the master
service of another broker answers them with a StandbyException, as a TubeMQ standby master does, so
a client that lists every broker's master finds the active one. Closing also drops what the client
registered at the broker service.

With ``tubemq.authentication.enable``, producers' and consumers' registers, heartbeats and consumers'
closes must authenticate (:mod:`.authentication`); a consumer's unsigned first register (as
tubemq-client 1.13.0 sends it) is held, admitted to nothing, until a heartbeat it signs when asked
(``requireAuth``).

Not served, answered with a ``java.lang.Exception`` naming why: the broker methods (Tidelog is the
broker; no TubeMQ broker registers with it) and the client-balance consumer's V2 methods.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from collections.abc import Callable

from tidelog.cluster.store import MetadataStore
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.protocol.tubemq.notation import BrokerAddress, topic_info
from tidelog.protocol.tubemq.rpc import GENERIC_EXCEPTION, STANDBY_EXCEPTION, Method
from tidelog.server.tubemq.authentication import TubeAuthenticator
from tidelog.server.tubemq.balancer import TubeBalancer, flow_control
from tidelog.server.tubemq.consumer import ConsumerService
from tidelog.server.tubemq.dispatcher import RpcFailure, TubeContext, tube_method

#: Bytes of ``max.message.bytes`` kept for the batch and record framing around a message's data.
BATCH_HEADROOM = 1024
#: ``ApprovedClientConfig.configId``: the cluster settings' version (Tidelog's never change at runtime).
CONFIG_ID = 1
#: How long, and how many, consumers' unsigned first registers wait for a signed heartbeat.
PENDING_TTL_MS = 60_000
MAX_PENDING = 10_000
_BROKER_ONLY = ("Tidelog is the broker: TubeMQ brokers cannot register with its master service "
                "(docs/tubemq.md)")
_CLIENT_BALANCE = ("the client-balance consumer (SimpleClientBalanceConsumer, V2 methods) is not served by Tidelog; "
                   "use a push or pull consumer, whose partitions the group coordinator assigns (docs/tubemq.md)")


def _ok(cls, **fields):
    return cls(success=True, errCode=TubeErrorCode.SUCCESS, errMsg="OK!", **fields)


class MasterService:
    def __init__(self, store: MetadataStore, topic_configs: TopicConfigs, balancer: TubeBalancer,
                 consumers: ConsumerService, broker_address: Callable[[], BrokerAddress],
                 authenticator: TubeAuthenticator | None = None) -> None:
        self.store = store
        #: With ``tubemq.authentication.enable``: registers and heartbeats must authenticate.
        self.authenticator = authenticator
        #: Consumers' unsigned first registers awaiting a signed heartbeat, with their deadlines.
        self._pending: OrderedDict[tuple[str, str], tuple[master_pb.RegisterRequestC2M, int]] = OrderedDict()
        self.topic_configs = topic_configs
        self.balancer = balancer
        self.consumers = consumers
        self.broker_address = broker_address

    # ------------------------------------------------------------------------------- producers

    def _authorized(self, request) -> dict[str, master_pb.MasterAuthorizedInfo]:
        """Refuse a request that does not authenticate (when authentication is on); else the
        ``authorizedInfo`` field to answer with (none when it is off)."""
        if self.authenticator is None:
            return {}
        return {"authorizedInfo": self.authenticator.check_master(request)}

    def _brokers(self) -> tuple[int, list[str]]:
        infos = [str(self.broker_address())]
        return zlib.crc32("\n".join(infos).encode()) & 0x7FFFFFFF, infos

    def _max_message_bytes(self, topic: str | None) -> int:
        image = self.store.image
        config = self.topic_configs.for_topic(image, topic) if topic is not None else self.topic_configs.defaults(image)
        return max(1, config.max_message_bytes - BATCH_HEADROOM)

    def _approved(self, request) -> master_pb.ApprovedClientConfig:
        approved = master_pb.ApprovedClientConfig(configId=CONFIG_ID)
        if not request.HasField("appdConfig") or request.appdConfig.configId != CONFIG_ID:
            approved.maxMsgSize = self._max_message_bytes(None)
        return approved

    @tube_method(Method.PRODUCER_REGISTER_P2M)
    def producer_register(self, ctx: TubeContext, request: master_pb.RegisterRequestP2M) -> master_pb.RegisterResponseM2P:
        _producer_id(request.clientId)
        authorized = self._authorized(request)
        checksum, infos = self._brokers()
        return _ok(master_pb.RegisterResponseM2P, brokerCheckSum=checksum, brokerInfos=infos,
                   appdConfig=self._approved(request), **authorized)

    @tube_method(Method.PRODUCER_HEARTBEAT_P2M)
    def producer_heartbeat(self, ctx: TubeContext, request: master_pb.HeartRequestP2M) -> master_pb.HeartResponseM2P:
        _producer_id(request.clientId)
        authorized = self._authorized(request)
        checksum, infos = self._brokers()
        image = self.store.image
        broker_id = self.broker_address().broker_id
        topics = []
        for name in sorted({t.strip() for t in request.topicList if t.strip()}):
            meta = image.topics.get(name)
            if meta is not None and not meta.is_internal:
                topics.append(topic_info(name, broker_id, len(meta.partitions), self._max_message_bytes(name)))
        return _ok(master_pb.HeartResponseM2P, brokerCheckSum=checksum,
                   brokerInfos=infos if request.brokerCheckSum != checksum else [], topicInfos=topics,
                   appdConfig=self._approved(request), **authorized)

    @tube_method(Method.PRODUCER_CLOSE_CLIENT_P2M)
    def producer_close(self, ctx: TubeContext, request: master_pb.CloseRequestP2M) -> master_pb.CloseResponseM2P:
        _producer_id(request.clientId)
        return _ok(master_pb.CloseResponseM2P)

    # ------------------------------------------------------------------------------- consumers

    @tube_method(Method.CONSUMER_REGISTER_C2M)
    async def consumer_register(self, ctx: TubeContext, request: master_pb.RegisterRequestC2M
                                ) -> master_pb.RegisterResponseM2C:
        self._active_master(request)
        if self.authenticator is None:
            return await self.balancer.register(ctx.client_host, request)
        key = (request.groupName.strip(), request.clientId.strip())
        if _unsigned(request):
            # tubemq-client 1.13.0's consumer never signs its first register (it signs a heartbeat once the
            # master asks): hold the request, admitted to nothing, until a signed heartbeat.
            self._pending[key] = (request, self.authenticator.now_ms() + PENDING_TTL_MS)
            self._pending.move_to_end(key)
            self._expire_pending()
            return master_pb.RegisterResponseM2C(success=True, errCode=TubeErrorCode.SUCCESS, errMsg="OK!",
                                                 **flow_control(request))
        authorized = self.authenticator.check_master(request)
        self._pending.pop(key, None)
        response = await self.balancer.register(ctx.client_host, request)
        response.authorizedInfo.CopyFrom(authorized)
        return response

    @tube_method(Method.CONSUMER_HEARTBEAT_C2M)
    async def consumer_heartbeat(self, ctx: TubeContext, request: master_pb.HeartRequestC2M
                                 ) -> master_pb.HeartResponseM2C:
        self._active_master(request)
        if self.authenticator is None:
            return await self.balancer.heartbeat(ctx.client_host, request)
        key = (request.groupName.strip(), request.clientId.strip())
        self._expire_pending()
        pending = self._pending.get(key)
        if pending is not None and _unsigned(request):
            return master_pb.HeartResponseM2C(success=True, errCode=TubeErrorCode.SUCCESS, errMsg="OK!",
                                              requireAuth=True, **flow_control(request))
        authorized = self.authenticator.check_master(request)
        if pending is not None:
            del self._pending[key]
            await self.balancer.register(ctx.client_host, pending[0])
        response = await self.balancer.heartbeat(ctx.client_host, request)
        response.authorizedInfo.CopyFrom(authorized)
        return response

    def _expire_pending(self) -> None:
        assert self.authenticator is not None
        now = self.authenticator.now_ms()
        while self._pending and (len(self._pending) > MAX_PENDING or next(iter(self._pending.values()))[1] < now):
            self._pending.popitem(last=False)

    @tube_method(Method.CONSUMER_CLOSE_CLIENT_C2M)
    async def consumer_close(self, ctx: TubeContext, request: master_pb.CloseRequestC2M) -> master_pb.CloseResponseM2C:
        self._active_master(request)
        if self.authenticator is not None:
            held = self._pending.pop((request.groupName.strip(), request.clientId.strip()), None)
            if held is not None and _unsigned(request):
                return _ok(master_pb.CloseResponseM2C)  # it never joined anything
            self.authenticator.check_master(request)  # nobody else closes an authenticated consumer
        self.consumers.forget_client(request.groupName.strip(), request.clientId.strip())
        return await self.balancer.close(ctx.client_host, request)

    def _active_master(self, request) -> None:
        """A consumer's master is the broker that coordinates its group: elsewhere a StandbyException,
        as a TubeMQ standby master answers (the Java client then tries the next master it was given)."""
        group = request.groupName.strip()
        if group and not self.balancer.coordinates(group):
            raise RpcFailure(STANDBY_EXCEPTION, f"this broker's master service is a standby for group {group}: its "
                             "group coordinator is another broker (list every broker's tubemq.master.listener in "
                             "the client's master addresses; docs/tubemq.md)")

    # ------------------------------------------------------------------------------ not served

    @tube_method(Method.BROKER_REGISTER_B2M, decode=False)
    def broker_register(self, ctx: TubeContext, request: bytes) -> master_pb.RegisterResponseM2B:
        raise RpcFailure(GENERIC_EXCEPTION, _BROKER_ONLY)

    @tube_method(Method.BROKER_HEARTBEAT_B2M, decode=False)
    def broker_heartbeat(self, ctx: TubeContext, request: bytes) -> master_pb.HeartResponseM2B:
        raise RpcFailure(GENERIC_EXCEPTION, _BROKER_ONLY)

    @tube_method(Method.BROKER_CLOSE_CLIENT_B2M, decode=False)
    def broker_close(self, ctx: TubeContext, request: bytes) -> master_pb.CloseResponseM2B:
        raise RpcFailure(GENERIC_EXCEPTION, _BROKER_ONLY)

    @tube_method(Method.CONSUMER_REGISTER_C2M_V2, decode=False)
    def consumer_register_v2(self, ctx: TubeContext, request: bytes) -> master_pb.RegisterResponseM2CV2:
        raise RpcFailure(GENERIC_EXCEPTION, _CLIENT_BALANCE)

    @tube_method(Method.CONSUMER_HEARTBEAT_C2M_V2, decode=False)
    def consumer_heartbeat_v2(self, ctx: TubeContext, request: bytes) -> master_pb.HeartResponseM2CV2:
        raise RpcFailure(GENERIC_EXCEPTION, _CLIENT_BALANCE)

    @tube_method(Method.CONSUMER_GET_PART_META_C2M, decode=False)
    def consumer_get_part_meta(self, ctx: TubeContext, request: bytes) -> master_pb.GetPartMetaResponseM2C:
        raise RpcFailure(GENERIC_EXCEPTION, _CLIENT_BALANCE)


def _unsigned(request) -> bool:
    """A request with a MasterCertificateInfo that holds neither a signature nor a token (a request
    without one at all is refused: its client does not authenticate)."""
    return request.HasField("authInfo") and not request.authInfo.HasField("authInfo") \
        and not request.authInfo.authorizedToken


def _producer_id(value: str) -> str:
    value = value.strip()
    if not value:
        raise TubeError(TubeErrorCode.BAD_REQUEST, "Request miss necessary clientId data!")
    return value


__all__ = ["BATCH_HEADROOM", "CONFIG_ID", "MasterService"]
