"""Kafka's ACL vocabulary: operations, resource types, pattern types, permissions, ACL bindings and the
filters CreateAcls/DescribeAcls/DeleteAcls carry, and the operations each resource type supports, as the
authorized-operations fields of Metadata, DescribeCluster, DescribeGroups and ConsumerGroupDescribe
report them.

An ACL binding says: ``principal`` from ``host`` is ALLOWed (or DENYed) ``operation`` on the resources a
pattern names: a LITERAL pattern names one resource (or every one of its type, with the name ``*``), a
PREFIXED pattern every resource whose name starts with the name. A filter (DescribeAcls, DeleteAcls)
matches bindings: ANY matches every value of a field, a null name/principal/host any value, and the
pattern type MATCH every pattern that would apply to the named resource (literal, wildcard, prefixes).

An authorized-operations field is a bit set: bit ``op`` is set when the caller may perform ``op``
(Kafka's ``AclOperation`` codes). -2147483648 means "not asked for". Without an authorizer every
operation a resource supports is allowed. Immutable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
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


class ResourceType(IntEnum):
    """Kafka's ``ResourceType`` codes, and Tidelog's own SUBJECT (a schema registry subject:
    docs/schema-registry.md; a code far above Kafka's, which Kafka's clients and tools do not know)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7
    SUBJECT = 100


class PatternType(IntEnum):
    """Kafka's ``PatternType`` codes (ANY and MATCH only in filters)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: The name of the one CLUSTER resource, and the name (and host, and principal name) meaning "every".
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an access-control entry. ``principal`` is ``Type:name``."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def applies_to(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this binding's pattern covers the resource (literal, wildcard or prefix)."""
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == PatternType.LITERAL:
            return self.name == name or self.name == WILDCARD
        return self.pattern_type == PatternType.PREFIXED and name.startswith(self.name)

    def __str__(self) -> str:
        return (f"(pattern=ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
                f"patternType={self.pattern_type.name}), entry=(principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, permissionType={self.permission.name}))")


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls select. None in a text field matches anything."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    @property
    def unknown_reason(self) -> str | None:
        """Why the filter cannot match anything sensibly (an UNKNOWN code), or None."""
        if self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation == AclOperation.UNKNOWN or self.permission == AclPermissionType.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.name is not None:
            if self.pattern_type in (PatternType.ANY, acl.pattern_type):
                if self.name != acl.name:
                    return False
            elif acl.pattern_type == PatternType.LITERAL:
                if acl.name not in (self.name, WILDCARD):
                    return False
            elif not self.name.startswith(acl.name):
                return False
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and self.operation in (AclOperation.ANY, acl.operation)
                and self.permission in (AclPermissionType.ANY, acl.permission))


def invalid_acl_reason(acl: AclBinding) -> str | None:
    """Why CreateAcls refuses ``acl`` (Kafka's INVALID_REQUEST checks), or None when it is valid."""
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {acl.permission.name}"
    if not acl.name:
        return "Invalid empty resource name"
    if acl.resource_type == ResourceType.CLUSTER and acl.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    principal_type, sep, principal_name = acl.principal.partition(":")
    if not sep or not principal_type or not principal_name:
        return f"Could not parse principal from `{acl.principal}` (no colon is found)"
    return None


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


#: Kafka's ``AclEntry.supportedOperations(TRANSACTIONAL_ID)``.
TRANSACTIONAL_ID_OPERATIONS = (AclOperation.DESCRIBE, AclOperation.WRITE, AclOperation.TWO_PHASE_COMMIT)


def supported_operations(resource_type: ResourceType) -> tuple[AclOperation, ...]:
    """The operations an authorized-operations field of ``resource_type`` reports on."""
    return {ResourceType.TOPIC: TOPIC_OPERATIONS, ResourceType.GROUP: GROUP_OPERATIONS,
            ResourceType.CLUSTER: CLUSTER_OPERATIONS,
            ResourceType.TRANSACTIONAL_ID: TRANSACTIONAL_ID_OPERATIONS}.get(resource_type, ())


__all__ = [
    "AUTHORIZED_OPERATIONS_OMITTED",
    "CLUSTER_NAME",
    "CLUSTER_OPERATIONS",
    "GROUP_OPERATIONS",
    "TOPIC_OPERATIONS",
    "TRANSACTIONAL_ID_OPERATIONS",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourceType",
    "authorized_operations",
    "invalid_acl_reason",
    "supported_operations",
]
