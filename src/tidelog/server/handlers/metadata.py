"""Metadata: brokers, cluster id, controller, topics (with ids) and their partitions.

Topics that do not exist are created when the request allows it (v4+ ``allow_auto_topic_creation``;
always before v4) and the broker has ``auto.create.topics.enable``, with ``num.partitions`` partitions
and ``default.replication.factor`` replicas.
"""

from __future__ import annotations

import logging

from tidelog.cluster.controller import validate_topic_name
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import MetadataRequest, MetadataResponse
from tidelog.protocol.primitives import ZERO_UUID
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handler
from tidelog.server.handlers.cluster_info import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_OPERATIONS,
    TOPIC_OPERATIONS,
    authorized_operations,
)

log = logging.getLogger(__name__)

Topic = MetadataResponse.MetadataResponseTopic
Partition = MetadataResponse.MetadataResponsePartition


def _requested(ctx: RequestContext, request: MetadataRequest) -> list[tuple[str | None, object]] | None:
    """(name, id) pairs asked for, or None for every topic."""
    v = ctx.api_version
    if request.topics is None or (v == 0 and not request.topics):
        return None
    return [(t.name, t.topic_id) for t in request.topics]


@handler(ApiKey.METADATA, 0, 12)
def handle_metadata(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    broker = ctx.broker
    v = ctx.api_version
    wanted = _requested(ctx, request)
    auto_create = broker.config["auto.create.topics.enable"] and (v < 4 or request.allow_auto_topic_creation)
    topics: list[Topic] = []
    if wanted is None:
        names = sorted(broker.store.image.topics)
        topics = [_topic(ctx, name) for name in names]
    else:
        for name, topic_id in wanted:
            if name is None:
                t = broker.store.image.topic_by_id(topic_id)
                if t is None:
                    # Topic names are nullable in responses only from v12 (Kafka does not look up ids before).
                    topics.append(Topic(error_code=int(ErrorCode.UNKNOWN_TOPIC_ID), name=None if v >= 12 else "",
                                        topic_id=topic_id))
                    continue
                name = t.name
            if name not in broker.store.image.topics:
                try:
                    validate_topic_name(name)
                except KafkaError as e:
                    topics.append(Topic(error_code=int(e.code), name=name))
                    continue
                if not auto_create:
                    topics.append(Topic(error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), name=name))
                    continue
                try:
                    broker.controller.create_topic(
                        name, broker.config["num.partitions"], broker.config["default.replication.factor"]
                    )
                except KafkaError as e:
                    topics.append(Topic(error_code=int(e.code), name=name))
                    continue
            topics.append(_topic(ctx, name))
    image = broker.store.image
    # No authorizer yet: every supported operation is allowed (Metadata v8-10 / v8+ ask for them).
    if v >= 8 and request.include_topic_authorized_operations:
        topic_ops = authorized_operations(TOPIC_OPERATIONS)
        for t in topics:
            if t.error_code == 0:
                t.topic_authorized_operations = topic_ops
    cluster_ops = AUTHORIZED_OPERATIONS_OMITTED
    if 8 <= v <= 10 and request.include_cluster_authorized_operations:
        cluster_ops = authorized_operations(CLUSTER_OPERATIONS)
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


def _topic(ctx: RequestContext, name: str) -> Topic:
    t = ctx.broker.store.image.topics[name]
    return Topic(
        error_code=0,
        name=name,
        topic_id=t.topic_id if ctx.api_version >= 10 else ZERO_UUID,
        is_internal=t.is_internal,
        partitions=[
            Partition(
                error_code=0,
                partition_index=p.partition,
                leader_id=p.leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                offline_replicas=[],
            )
            for p in t.partitions
        ],
    )
