"""The golden responses: contents written with Kafka's field names, and the versions each is encoded in."""

from __future__ import annotations

import uuid
from typing import Any

import crc32c

from tidelog.protocol.api_keys import ApiKey
from tidelog.varint import encode_varint, encode_varlong
from tools.capture_frames.cluster import (
    ADVERTISED,
    BASE_TIMESTAMP_MS,
    CLUSTER_ID,
    TOPIC,
    TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNSUPPORTED_VERSION,
)


def record_batch(base_offset: int, records: list[tuple[bytes | None, bytes, int]]) -> bytes:
    """A valid uncompressed v2 record batch (magic 2, CRC-32C) holding (key, value, timestamp) records."""
    base_ts = records[0][2]
    body = bytearray()
    for delta, (key, value, ts) in enumerate(records):
        rec = bytearray(b"\0")  # attributes
        rec += encode_varlong(ts - base_ts) + encode_varint(delta)
        rec += encode_varint(-1) if key is None else encode_varint(len(key)) + key
        rec += encode_varint(len(value)) + value
        rec += encode_varint(0)  # no headers
        body += encode_varint(len(rec)) + rec
    after_crc = (
        (0).to_bytes(2, "big")  # attributes: no compression, create time
        + (len(records) - 1).to_bytes(4, "big")
        + base_ts.to_bytes(8, "big")
        + max(r[2] for r in records).to_bytes(8, "big")
        + (-1).to_bytes(8, "big", signed=True)  # producer id
        + (-1).to_bytes(2, "big", signed=True)  # producer epoch
        + (-1).to_bytes(4, "big", signed=True)  # base sequence
        + len(records).to_bytes(4, "big")
        + bytes(body)
    )
    crc = crc32c.crc32c(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc)  # partition leader epoch, magic, crc, rest
    return (
        base_offset.to_bytes(8, "big")
        + batch_length.to_bytes(4, "big")
        + (0).to_bytes(4, "big")  # partition leader epoch
        + b"\x02"
        + crc.to_bytes(4, "big")
        + after_crc
    )


NO_AUTHORIZED_OPERATIONS = -(2**31)
GOLDEN_RECORDS = record_batch(40, [(b"k0", b"golden-0", BASE_TIMESTAMP_MS), (None, b"golden-1", BASE_TIMESTAMP_MS + 5)])
# ConsumerProtocolSubscription v0 (topics ["golden"], no user data) and Assignment v0 (golden: [0, 1]).
SUBSCRIPTION = b"\0\0" + b"\0\0\0\x01" + b"\0\x06golden" + b"\xff\xff\xff\xff"
ASSIGNMENT = b"\0\0" + b"\0\0\0\x01" + b"\0\x06golden" + b"\0\0\0\x02\0\0\0\0\0\0\0\x01" + b"\xff\xff\xff\xff"

# Response contents, written with Kafka's field names in snake_case, as the union over versions:
# each encoder takes the fields its schema of a version has and ignores the rest. Tagged fields
# appear only where they should be written (the encoders skip default values differently).
_BROKERS = [
    {"node_id": 1, "host": "broker-1.golden.example", "port": 9092, "rack": "rack-a"},
    {"node_id": 2, "host": "broker-2.golden.example", "port": 9093, "rack": None},
]
_NODE_ENDPOINTS = [{"node_id": 2, "host": "broker-2.golden.example", "port": 9093, "rack": None}]


def _offset_fetch_partitions() -> list[dict[str, Any]]:
    return [
        {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": 3, "metadata": "golden-meta",
         "error_code": 0},
        {"partition_index": 1, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": None,
         "error_code": 0},
    ]


#: (api_key, versions, content): one golden response per version and case.
RESPONSE_CASES: list[tuple[int, tuple[int, ...], dict[str, Any]]] = [
    (ApiKey.API_VERSIONS, (0, 1, 2, 3, 4), {
        "error_code": 0,
        "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, (lo, hi) in sorted(ADVERTISED.items())],
        "throttle_time_ms": 0,
        "supported_features": [{"name": "metadata.version", "min_version": 1, "max_version": 27}],
        "finalized_features_epoch": 7,
        "finalized_features": [{"name": "metadata.version", "max_version_level": 27, "min_version_level": 27}],
    }),
    # KIP-511: the answer to an ApiVersions request of an unknown version is a v0 body with error 35.
    (ApiKey.API_VERSIONS, (0,), {
        "error_code": UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": ApiKey.API_VERSIONS, "min_version": 0, "max_version": 4}],
    }),
    (ApiKey.METADATA, (0, 1, 4, 7, 8, 9, 10, 12, 13), {
        "throttle_time_ms": 0,
        "brokers": _BROKERS,
        "cluster_id": CLUSTER_ID,
        "controller_id": 1,
        "topics": [
            {"error_code": 0, "name": TOPIC, "topic_id": TOPIC_ID, "is_internal": False,
             "partitions": [
                 {"error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": 5, "replica_nodes": [1, 2],
                  "isr_nodes": [1, 2], "offline_replicas": []},
                 {"error_code": 0, "partition_index": 1, "leader_id": 2, "leader_epoch": 6, "replica_nodes": [2, 1],
                  "isr_nodes": [2], "offline_replicas": [1]},
             ],
             "topic_authorized_operations": 0b1111111000},
            {"error_code": UNKNOWN_TOPIC_OR_PARTITION, "name": "missing", "topic_id": uuid.UUID(int=0),
             "is_internal": False, "partitions": [], "topic_authorized_operations": NO_AUTHORIZED_OPERATIONS},
        ],
        "cluster_authorized_operations": NO_AUTHORIZED_OPERATIONS,
        "error_code": 0,
    }),
    (ApiKey.PRODUCE, (3, 5, 7, 8, 9, 10), {
        "responses": [{"name": TOPIC, "partition_responses": [
            {"index": 0, "error_code": 0, "base_offset": 42, "log_append_time_ms": BASE_TIMESTAMP_MS, "log_start_offset": 0,
             "record_errors": [], "error_message": None},
            {"index": 1, "error_code": 6, "base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1,
             "record_errors": [{"batch_index": 0, "batch_index_error_message": "not the leader"}],
             "error_message": "This server is not the leader for that topic-partition.",
             "current_leader": {"leader_id": 2, "leader_epoch": 6}},
        ]}],
        "throttle_time_ms": 0,
        "node_endpoints": _NODE_ENDPOINTS,
    }),
    (ApiKey.FETCH, (4, 7, 11, 12, 13, 15, 16), {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 17,
        "responses": [{"topic": TOPIC, "topic_id": TOPIC_ID, "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": 42, "last_stable_offset": 42,
             "log_start_offset": 0, "aborted_transactions": [{"producer_id": 4000, "first_offset": 40}],
             "preferred_read_replica": -1, "records": GOLDEN_RECORDS},
            {"partition_index": 1, "error_code": 6, "high_watermark": -1, "last_stable_offset": -1,
             "log_start_offset": -1, "aborted_transactions": None, "preferred_read_replica": -1, "records": b"",
             "current_leader": {"leader_id": 2, "leader_epoch": 6}},
        ]}],
        "node_endpoints": _NODE_ENDPOINTS,
    }),
    (ApiKey.LIST_OFFSETS, (1, 2, 4, 5, 6, 7), {
        "throttle_time_ms": 0,
        "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": 42, "leader_epoch": 5},
            {"partition_index": 1, "error_code": 6, "timestamp": -1, "offset": -1, "leader_epoch": -1},
        ]}],
    }),
    (ApiKey.FIND_COORDINATOR, (0, 1, 2, 3, 4, 5, 6), {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "node_id": 1,
        "host": "broker-1.golden.example",
        "port": 9092,
        "coordinators": [
            {"key": "golden-group", "node_id": 1, "host": "broker-1.golden.example", "port": 9092, "error_code": 0,
             "error_message": None},
            {"key": "other-group", "node_id": -1, "host": "", "port": -1, "error_code": 15,
             "error_message": "The coordinator is not available."},
        ],
    }),
    (ApiKey.JOIN_GROUP, (0, 1, 2, 5, 6, 7, 9), {
        "throttle_time_ms": 0,
        "error_code": 0,
        "generation_id": 3,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "leader": "member-1",
        "skip_assignment": False,
        "member_id": "member-1",
        "members": [
            {"member_id": "member-1", "group_instance_id": None, "metadata": SUBSCRIPTION},
            {"member_id": "member-2", "group_instance_id": "static-2", "metadata": SUBSCRIPTION},
        ],
    }),
    (ApiKey.SYNC_GROUP, (0, 1, 3, 4, 5), {
        "throttle_time_ms": 0, "error_code": 0, "protocol_type": "consumer", "protocol_name": "range",
        "assignment": ASSIGNMENT,
    }),
    (ApiKey.HEARTBEAT, (0, 1, 2, 3, 4), {"throttle_time_ms": 0, "error_code": 27}),
    (ApiKey.LEAVE_GROUP, (0, 1, 3, 4, 5), {
        "throttle_time_ms": 0, "error_code": 0,
        "members": [{"member_id": "member-1", "group_instance_id": None, "error_code": 0}],
    }),
    (ApiKey.OFFSET_COMMIT, (2, 3, 7, 8, 9), {
        "throttle_time_ms": 0,
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "error_code": 0},
                                                  {"partition_index": 1, "error_code": 22}]}],
    }),
    (ApiKey.OFFSET_FETCH, (1, 2, 3, 5, 6, 7, 8, 9), {
        "throttle_time_ms": 0,
        "topics": [{"name": TOPIC, "partitions": _offset_fetch_partitions()}],
        "error_code": 0,
        "groups": [{"group_id": "golden-group", "topics": [{"name": TOPIC, "partitions": _offset_fetch_partitions()}],
                    "error_code": 0}],
    }),
    (ApiKey.INIT_PRODUCER_ID, (0, 1, 2, 3, 4), {
        "throttle_time_ms": 0, "error_code": 0, "producer_id": 4000, "producer_epoch": 2,
    }),
]

