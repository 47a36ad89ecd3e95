"""Security vocabulary and policy: ACL operations, resources and bindings, the authorizer (SASL
mechanisms and credentials will live here too). Pure: no I/O."""

from tidelog.security.acl import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_NAME,
    CLUSTER_OPERATIONS,
    GROUP_OPERATIONS,
    TOPIC_OPERATIONS,
    TRANSACTIONAL_ID_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    authorized_operations,
    invalid_acl_reason,
    supported_operations,
)
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer, Requester

__all__ = [
    "AUTHORIZED_OPERATIONS_OMITTED",
    "CLUSTER_NAME",
    "CLUSTER_OPERATIONS",
    "GROUP_OPERATIONS",
    "NO_AUTHORIZER",
    "TOPIC_OPERATIONS",
    "TRANSACTIONAL_ID_OPERATIONS",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "Authorizer",
    "PatternType",
    "Requester",
    "ResourceType",
    "authorized_operations",
    "invalid_acl_reason",
    "supported_operations",
]
