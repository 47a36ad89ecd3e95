"""The golden cluster every capture runs against: one topic, its ids, the versions a broker advertises."""

from __future__ import annotations

import re
import uuid

from tidelog.protocol.api_keys import ApiKey

TOPIC = "golden"
TOPIC_ID = uuid.uuid5(uuid.NAMESPACE_URL, "tidelog:golden")
PARTITIONS = 2
NODE_ID = 1
CLUSTER_ID = "tidelog-golden"
BASE_TIMESTAMP_MS = 1_700_000_000_000  # pinned record timestamps, so batches are reproducible

# (min, max) versions the fake broker advertises: client-compat.md section 1.6.
ADVERTISED: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 10),  # v0-2 are answered with UNSUPPORTED_VERSION, as Kafka 4.x does
    ApiKey.FETCH: (4, 16),
    ApiKey.LIST_OFFSETS: (1, 7),
    ApiKey.METADATA: (0, 12),
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_FETCH: (1, 9),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 7),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
}

#: A Kafka 2.3-like broker: no flexible versions anywhere, and ApiVersions v0-2 only, so clients that
#: open with v3/v4 get KIP-511's error answer (v0 body, error 35) and retry. Clients then send the
#: older, non-flexible encodings of every API.
KAFKA_2_3: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 7),
    ApiKey.FETCH: (4, 11),
    ApiKey.LIST_OFFSETS: (1, 5),
    ApiKey.METADATA: (0, 8),
    ApiKey.OFFSET_COMMIT: (2, 7),
    ApiKey.OFFSET_FETCH: (1, 5),
    ApiKey.FIND_COORDINATOR: (0, 2),
    ApiKey.JOIN_GROUP: (0, 5),
    ApiKey.HEARTBEAT: (0, 3),
    ApiKey.LEAVE_GROUP: (0, 2),
    ApiKey.SYNC_GROUP: (0, 3),
    ApiKey.API_VERSIONS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 1),
}

# Error codes used by the fake broker (Kafka's numbers).
UNKNOWN_TOPIC_OR_PARTITION = 3
UNSUPPORTED_VERSION = 35
MEMBER_ID_REQUIRED = 79


def snake(name: str) -> str:
    """``ApiVersions`` -> ``api_versions``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
