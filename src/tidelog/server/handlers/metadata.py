"""Metadata: brokers, cluster id, controller, topics (with ids) and their partitions.

Topics that do not exist are created when the request allows it (v4+ ``allow_auto_topic_creation``;
always before v4) and the broker has ``auto.create.topics.enable``, with ``num.partitions`` partitions
and ``default.replication.factor`` replicas; the answer comes at once, the topic LEADER_NOT_AVAILABLE
(without partitions) until the controller's first leaders are seen here (as Kafka answers an
auto-created topic; the client asks again). The same holds for a topic another broker created a
moment ago; partitions being added by CreatePartitions appear once their leaders are decided.

Authorization (Kafka's): a topic the client may not DESCRIBE is left out of an all-topics answer and
answered TOPIC_AUTHORIZATION_FAILED (without its id or partitions, whether it exists or not) when asked
for by name; auto-creation needs CREATE on the cluster or on the topic (else TOPIC_AUTHORIZATION_FAILED).
The authorized-operations fields are what the ACLs allow; the cluster's needs DESCRIBE on the cluster
(else 0).
"""

from __future__ import annotations

import logging

from tidelog.cluster.controller import Controller, validate_topic_name
from tidelog.cluster.metadata import MetadataImage
from tidelog.cluster.store import MetadataStore
from tidelog.config import BrokerConfig
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import MetadataRequest, MetadataResponse
from tidelog.protocol.primitives import ZERO_UUID
from tidelog.security.acl import AUTHORIZED_OPERATIONS_OMITTED, CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

log = logging.getLogger(__name__)

Topic = MetadataResponse.MetadataResponseTopic
Partition = MetadataResponse.MetadataResponsePartition


def _requested(ctx: RequestContext, request: MetadataRequest) -> list[tuple[str | None, object]] | None:
    """(name, id) pairs asked for, or None for every topic."""
    v = ctx.api_version
    if request.topics is None or (v == 0 and not request.topics):
        return None
    return [(t.name, t.topic_id) for t in request.topics]


class MetadataHandler:
    def __init__(self, store: MetadataStore, controller: Controller, config: BrokerConfig,
                 authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.store = store
        self.controller = controller
        self.config = config
        self.authorizer = authorizer

    @handles(ApiKey.METADATA, 0, 13)  # v13: a top-level error code (KIP-1102), 0: no error applies to the whole answer
    def handle_metadata(self, ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
        v = ctx.api_version
        wanted = _requested(ctx, request)
        if wanted is not None and v < 12 and any(name is None or topic_id != ZERO_UUID for name, topic_id in wanted):
            # v10-11 carry a topic id field, but topics are looked up by id only from v12 (as Kafka refuses)
            return MetadataResponse(topics=[Topic(error_code=int(ErrorCode.INVALID_REQUEST), name=name or "",
                                                  topic_id=topic_id, is_internal=False, partitions=[])
                                            for name, topic_id in wanted])
        auto_create = self.config["auto.create.topics.enable"] and (v < 4 or request.allow_auto_topic_creation)
        auth = self.authorizer
        if wanted is None:
            image = self.store.image
            topics = [topic_metadata(image, name, v) for name in sorted(image.topics)
                      if auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name)]
        else:
            may_create = auto_create and auth.authorize(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
            topics = [self._requested_topic(ctx, name, topic_id, v, auto_create, may_create)
                      for name, topic_id in wanted]
        image = self.store.image
        if v >= 8 and request.include_topic_authorized_operations:
            for t in topics:
                if t.error_code == 0:
                    t.topic_authorized_operations = auth.authorized_operations(ctx, ResourceType.TOPIC, t.name)
        cluster_ops = AUTHORIZED_OPERATIONS_OMITTED
        if 8 <= v <= 10 and request.include_cluster_authorized_operations:
            cluster_ops = (auth.authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
                           if auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME) else 0)
        return MetadataResponse(
            brokers=[
                MetadataResponse.MetadataResponseBroker(node_id=b.broker_id, host=host, port=port, rack=b.rack)
                for b in image.brokers.values()
                for host, port in [b.endpoint(ctx.listener_name)]
            ],
            cluster_id=image.cluster_id,
            controller_id=image.controller_id,
            topics=topics,
            cluster_authorized_operations=cluster_ops,
        )

    def _requested_topic(self, ctx: RequestContext, name: str | None, topic_id, v: int, auto_create: bool,
                         may_create: bool) -> Topic:
        image = self.store.image
        by_id = name is None
        if name is None:
            t = image.topic_by_id(topic_id)
            if t is None:
                return Topic(error_code=int(ErrorCode.UNKNOWN_TOPIC_ID), name=None, topic_id=topic_id)
            name = t.name
        if not self.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            # existence is not disclosed by name; ids are not secret
            return Topic(error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), name=None if by_id else name,
                         topic_id=topic_id if by_id else ZERO_UUID, is_internal=False, partitions=[])
        if name not in image.topics and auto_create and not may_create and not self.authorizer.authorize(
                ctx, AclOperation.CREATE, ResourceType.TOPIC, name):
            return Topic(error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), name=name, topic_id=ZERO_UUID,
                         partitions=[])
        if name not in image.topics:
            try:
                validate_topic_name(name)
            except KafkaError as e:
                return Topic(error_code=int(e.code), name=name)
            if not auto_create:
                return Topic(error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), name=name)
            try:
                self.controller.create_topic(name, self.config["num.partitions"],
                                             self.config["default.replication.factor"])
            except KafkaError as e:
                if e.code == ErrorCode.TOPIC_ALREADY_EXISTS and name not in self.store.image.topics:
                    # created by another broker a moment ago, not yet in this broker's metadata:
                    # retriable, as Kafka answers it (the client asks again)
                    return Topic(error_code=int(ErrorCode.LEADER_NOT_AVAILABLE), name=name)
                if e.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    return Topic(error_code=int(e.code), name=name)
                # another broker of the cluster created it first: answer with that topic
        return topic_metadata(self.store.image, name, v)


def topic_metadata(image: MetadataImage, name: str, version: int) -> Topic:
    """A topic's answer. A partition whose leader is not a live broker (none elected, or its broker
    gone from the image before the controller elected another, a moment in a cluster) is answered
    as Kafka's metadata cache does: LEADER_NOT_AVAILABLE with leader -1, never a leader that the
    broker list does not name (clients look leaders up in that list). Replicas on brokers that are not
    live are listed as offline (Kafka: on a fenced or unregistered broker, or an offline log dir)."""
    t = image.topics[name]
    decided = t.decided_partitions
    if not decided:
        # being created: its assignment is written, the controller's first leaders not yet seen here
        return Topic(error_code=int(ErrorCode.LEADER_NOT_AVAILABLE), name=name,
                     topic_id=t.topic_id if version >= 10 else ZERO_UUID, is_internal=t.is_internal, partitions=[])
    return Topic(
        error_code=0,
        name=name,
        topic_id=t.topic_id if version >= 10 else ZERO_UUID,
        is_internal=t.is_internal,
        partitions=[
            Partition(
                error_code=0 if p.leader in image.brokers else int(ErrorCode.LEADER_NOT_AVAILABLE),
                partition_index=p.partition,
                leader_id=p.leader if p.leader in image.brokers else -1,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                offline_replicas=[r for r in p.replicas if r not in image.brokers],
            )
            for p in decided
        ],
    )


__all__ = ["MetadataHandler", "topic_metadata"]
