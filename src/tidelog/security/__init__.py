"""Security vocabulary and policy: ACL operations and resources (the authorizer, SASL mechanisms and
credentials will live here too). Pure: no I/O."""

from tidelog.security.acl import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_OPERATIONS,
    GROUP_OPERATIONS,
    TOPIC_OPERATIONS,
    AclOperation,
    authorized_operations,
)

__all__ = [
    "AUTHORIZED_OPERATIONS_OMITTED",
    "CLUSTER_OPERATIONS",
    "GROUP_OPERATIONS",
    "TOPIC_OPERATIONS",
    "AclOperation",
    "authorized_operations",
]
