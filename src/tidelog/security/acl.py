"""Kafka's ACL operations and the operations each resource type supports, as the authorized-operations
fields of Metadata, DescribeCluster, DescribeGroups and ConsumerGroupDescribe report them.

An authorized-operations field is a bit set: bit ``op`` is set when the caller may perform ``op``
(Kafka's ``AclOperation`` codes). -2147483648 means "not asked for". Without an authorizer every
operation a resource supports is allowed. Immutable.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class AclOperation(IntEnum):
    """Kafka's ``AclOperation`` codes (the bit positions of authorized-operations fields)."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


#: Kafka's ``AclEntry.supportedOperations(CLUSTER)``.
CLUSTER_OPERATIONS = (
    AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER, AclOperation.DESCRIBE,
)
#: Kafka's ``AclEntry.supportedOperations(TOPIC)``.
TOPIC_OPERATIONS = (
    AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE, AclOperation.DELETE,
    AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
)
#: The group operations an unrestricted client is reported (Kafka 4: READ, DELETE, DESCRIBE and, for the
#: group configs of KIP-848, DESCRIBE_CONFIGS and ALTER_CONFIGS).
GROUP_OPERATIONS = (AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS,
                    AclOperation.ALTER_CONFIGS)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def authorized_operations(operations: Iterable[AclOperation]) -> int:
    """The bit set of ``operations``."""
    return sum(1 << int(op) for op in set(operations))


__all__ = [
    "AUTHORIZED_OPERATIONS_OMITTED",
    "CLUSTER_OPERATIONS",
    "GROUP_OPERATIONS",
    "TOPIC_OPERATIONS",
    "AclOperation",
    "authorized_operations",
]
