"""Kafka's ZooKeeper-era znode layout (Kafka's ZkData.scala), as paths and JSON codecs. Pure: no I/O.

Under the chroot of ``zookeeper.connect``::

    /cluster/id                                  {"version":"1","id":<cluster id>}
    /brokers/ids/<id>                            ephemeral: {"version":5,"host","port","endpoints":["NAME://host:port"],
                                                  "listener_security_protocol_map","jmx_port":-1,"timestamp","rack"?,
                                                  "features":{},"tidelog_http"?: "http://host:port" (the
                                                  broker's HTTP listener, a field of Tidelog's own)}
    /brokers/topics/<topic>                      {"version":3,"topic_id","partitions":{"0":[1,2,3]},
                                                  "adding_replicas":{},"removing_replicas":{}} (a partition
                                                  being reassigned: "partitions" has the union of the
                                                  original and target replicas, and the two maps say
                                                  which are being added and removed, KIP-455)
    /brokers/topics/<topic>/partitions/<p>/state {"version":1,"leader","leader_epoch","isr","controller_epoch",
                                                  "leader_recovery_state":0}; written only conditionally
                                                  (its znode version is the partition epoch)
    /config/topics/<topic>                       {"version":1,"config":{overrides}}
    /config/brokers/<default>                    dynamic broker configs, the same shape
    /config/groups/<group>                       group configs (KIP-848; Kafka keeps these only in KRaft)
    /controller                                  ephemeral: {"version":2,"brokerid","timestamp","kraftControllerEpoch":-1}
    /controller_epoch                            the epoch as decimal text
    /admin/delete_topics/<topic>                 a pending deletion (the controller carries it out)
    /latest_producer_id_block                    {"version":1,"broker","block_start","block_end"}
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any

from tidelog.cluster.metadata import BrokerInfo, PartitionMetadata

CLUSTER_ID = "/cluster/id"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
CONFIG_GROUPS = "/config/groups"
#: Client-metrics subscriptions (KIP-714), one znode per name, as Kafka 3.7+ in ZooKeeper mode kept them.
CONFIG_CLIENT_METRICS = "/config/client-metrics"
DEFAULT_BROKER_ENTITY = "<default>"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
DELETE_TOPICS = "/admin/delete_topics"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
#: Persistent paths every broker makes sure exist at start-up.
PERSISTENT_PATHS = (BROKER_IDS, TOPICS, CONFIG_TOPICS, CONFIG_BROKERS, CONFIG_GROUPS, CONFIG_CLIENT_METRICS,
                    DELETE_TOPICS)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{topic_path(topic)}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{partitions_path(topic)}/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partition_path(topic, partition)}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def group_config_path(group: str) -> str:
    return f"{CONFIG_GROUPS}/{group}"


def client_metrics_config_path(name: str) -> str:
    return f"{CONFIG_CLIENT_METRICS}/{name}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def _encode(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode()


def _decode(raw: bytes) -> dict[str, Any]:
    return json.loads(raw.decode("utf-8"))


def _now_ms() -> str:
    return str(int(time.time() * 1000))


# ------------------------------------------------------------------------------------- cluster id

def encode_cluster_id(cluster_id: str) -> bytes:
    return _encode({"version": "1", "id": cluster_id})


def decode_cluster_id(raw: bytes) -> str:
    return _decode(raw)["id"]


# ---------------------------------------------------------------------------------------- brokers

def encode_broker(broker: BrokerInfo, protocols: dict[str, str]) -> bytes:
    endpoints = broker.endpoints or (("PLAINTEXT", broker.host, broker.port),)
    data: dict[str, Any] = {
        "version": 5, "host": broker.host, "port": broker.port, "jmx_port": -1, "timestamp": _now_ms(),
        "endpoints": [f"{name}://{host}:{port}" for name, host, port in endpoints],
        "listener_security_protocol_map": {name: protocols.get(name, "PLAINTEXT") for name, _, _ in endpoints},
        "features": {},
    }
    if broker.rack is not None:
        data["rack"] = broker.rack
    if broker.http_url is not None:
        data["tidelog_http"] = broker.http_url
    return _encode(data)


def decode_broker(broker_id: int, raw: bytes) -> BrokerInfo:
    data = _decode(raw)
    endpoints = []
    for text in data.get("endpoints", []):
        name, _, address = text.partition("://")
        host, _, port = address.rpartition(":")
        endpoints.append((name, host.strip("[]"), int(port)))
    if endpoints:
        _, host, port = endpoints[0]
    else:
        host, port = data["host"], int(data["port"])
    http_url = data.get("tidelog_http")
    return BrokerInfo(broker_id, host, port, data.get("rack"), tuple(endpoints),
                      http_url if isinstance(http_url, str) else None)


# ----------------------------------------------------------------------------------------- topics

def encode_topic(topic_id: uuid.UUID, assignment: dict[int, tuple[int, ...]],
                 adding: dict[int, tuple[int, ...]] | None = None,
                 removing: dict[int, tuple[int, ...]] | None = None) -> bytes:
    """``adding`` / ``removing``: the replicas a reassignment in progress adds / removes, by partition
    (KIP-455; only partitions being reassigned appear)."""
    return _encode({
        "version": 3, "topic_id": _kafka_uuid(topic_id),
        "partitions": {str(p): list(replicas) for p, replicas in sorted(assignment.items())},
        "adding_replicas": {str(p): list(r) for p, r in sorted((adding or {}).items()) if r},
        "removing_replicas": {str(p): list(r) for p, r in sorted((removing or {}).items()) if r},
    })


def decode_topic(raw: bytes) -> tuple[uuid.UUID | None, dict[int, tuple[int, ...]]]:
    """(topic id, partition -> replicas); the id is None for topics written before Kafka 2.8."""
    data = _decode(raw)
    topic_id = _parse_kafka_uuid(data["topic_id"]) if data.get("topic_id") else None
    return topic_id, {int(p): tuple(r) for p, r in data["partitions"].items()}


def decode_topic_reassignment(raw: bytes) -> tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]]:
    """(adding replicas, removing replicas) by partition, of the reassignments in progress (KIP-455)."""
    data = _decode(raw)
    return ({int(p): tuple(r) for p, r in (data.get("adding_replicas") or {}).items()},
            {int(p): tuple(r) for p, r in (data.get("removing_replicas") or {}).items()})


def _kafka_uuid(value: uuid.UUID) -> str:
    """Kafka writes Uuids as 22 characters of URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _parse_kafka_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


# ------------------------------------------------------------------------------ partition states

def encode_partition_state(leader: int, leader_epoch: int, isr: tuple[int, ...], controller_epoch: int) -> bytes:
    return _encode({"version": 1, "leader": leader, "leader_epoch": leader_epoch, "isr": list(isr),
                    "controller_epoch": controller_epoch, "leader_recovery_state": 0})


def decode_partition_state(partition: int, replicas: tuple[int, ...], raw: bytes, zk_version: int,
                           ) -> tuple[PartitionMetadata, int]:
    """The partition's metadata (its partition epoch is the state znode's version) and the epoch
    of the controller that wrote it."""
    data = _decode(raw)
    meta = PartitionMetadata(partition, int(data["leader"]), int(data["leader_epoch"]), replicas,
                             tuple(int(b) for b in data["isr"]), zk_version)
    return meta, int(data.get("controller_epoch", 0))


# ---------------------------------------------------------------------------------------- configs

def encode_config(config: dict[str, str]) -> bytes:
    return _encode({"version": 1, "config": dict(sorted(config.items()))})


def decode_config(raw: bytes | None) -> dict[str, str]:
    if not raw:
        return {}
    return {k: str(v) for k, v in _decode(raw).get("config", {}).items()}


# ------------------------------------------------------------------------------------- controller

def encode_controller(broker_id: int) -> bytes:
    return _encode({"version": 2, "brokerid": broker_id, "timestamp": _now_ms(), "kraftControllerEpoch": -1})


def decode_controller(raw: bytes) -> int:
    return int(_decode(raw)["brokerid"])


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(raw: bytes) -> int:
    return int(raw.decode())


# ---------------------------------------------------------------------------------- producer ids

def encode_producer_id_block(broker_id: int, block_start: int, block_end: int) -> bytes:
    return _encode({"version": 1, "broker": broker_id, "block_start": str(block_start),
                    "block_end": str(block_end)})


def decode_producer_id_block(raw: bytes | None) -> int:
    """The first producer id after the latest allocated block (0 before any)."""
    if not raw:
        return 0
    return int(_decode(raw)["block_end"]) + 1


__all__ = [
    "BROKER_IDS", "CLUSTER_ID", "CONFIG_BROKERS", "CONFIG_CLIENT_METRICS", "CONFIG_GROUPS", "CONFIG_TOPICS", "CONTROLLER",
    "CONTROLLER_EPOCH", "DEFAULT_BROKER_ENTITY", "DELETE_TOPICS", "PERSISTENT_PATHS", "PRODUCER_ID_BLOCK",
    "TOPICS", "broker_path", "client_metrics_config_path", "decode_broker", "decode_cluster_id", "decode_config",
    "decode_controller",
    "decode_controller_epoch", "decode_partition_state", "decode_producer_id_block", "decode_topic", "decode_topic_reassignment",
    "delete_topic_path", "encode_broker", "encode_cluster_id", "encode_config", "encode_controller",
    "encode_controller_epoch", "encode_partition_state", "encode_producer_id_block", "encode_topic",
    "group_config_path", "partition_path", "partition_state_path", "partitions_path", "topic_config_path",
    "topic_path",
]
