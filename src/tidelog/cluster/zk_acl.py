"""ACLs in ZooKeeper, in Kafka's ZooKeeper-era layout (what AclAuthorizer and kafka-acls.sh wrote):

* LITERAL patterns: ``/kafka-acl/<ResourceType>/<name>``; PREFIXED ones:
  ``/kafka-acl-extended/prefixed/<ResourceType>/<name>`` (``Topic``, ``Group``, ``Cluster``,
  ``TransactionalId``, ``DelegationToken``, ``User``);
* each node holds every ACL entry of its pattern as JSON: ``{"version": 1, "acls": [{"principal":
  "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}]}``; a pattern without
  entries has no node;
* every change adds a sequential node: ``/kafka-acl-changes/acl_changes_<n>`` holding
  ``TOPIC:<name>`` for a literal pattern, ``/kafka-acl-extended-changes/acl_changes_<n>`` holding
  ``{"version": 1, "resourceType": "TOPIC", "name": ..., "patternType": "PREFIXED"}`` otherwise. Brokers
  watch these to learn that ACLs changed.

Encoding and decoding only (no ZooKeeper calls): :mod:`tidelog.cluster.zk_store` does the I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from tidelog.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

LITERAL_ACLS = "/kafka-acl"
EXTENDED_ACLS = "/kafka-acl-extended"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
ACL_PATHS = (LITERAL_ACLS, f"{EXTENDED_ACLS}/prefixed", LITERAL_CHANGES, EXTENDED_CHANGES)

#: The resource types with ACLs, as ZooKeeper paths name them.
RESOURCE_TYPE_NAMES = {
    ResourceType.TOPIC: "Topic", ResourceType.GROUP: "Group", ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId", ResourceType.DELEGATION_TOKEN: "DelegationToken",
    ResourceType.USER: "User", ResourceType.SUBJECT: "Subject",  # Tidelog's own (schema registry)
}
_TYPES_BY_NAME = {v.lower(): k for k, v in RESOURCE_TYPE_NAMES.items()}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


_OPERATIONS_BY_NAME = {_camel(op.name).lower(): op for op in AclOperation}


def pattern_root(pattern_type: PatternType) -> str:
    return LITERAL_ACLS if pattern_type == PatternType.LITERAL else f"{EXTENDED_ACLS}/{pattern_type.name.lower()}"


def type_path(pattern_type: PatternType, resource_type: ResourceType) -> str:
    return f"{pattern_root(pattern_type)}/{RESOURCE_TYPE_NAMES[resource_type]}"


def resource_path(pattern_type: PatternType, resource_type: ResourceType, name: str) -> str:
    return f"{type_path(pattern_type, resource_type)}/{name}"


def resource_type_from_path(name: str) -> ResourceType | None:
    return _TYPES_BY_NAME.get(name.lower())


def encode_acls(acls: Iterable[AclBinding]) -> bytes:
    entries = [{"principal": a.principal, "permissionType": _camel(a.permission.name),
                "operation": _camel(a.operation.name), "host": a.host}
               for a in sorted(acls, key=lambda a: (a.principal, a.host, a.operation, a.permission))]
    return json.dumps({"version": 1, "acls": entries}).encode()


def decode_acls(raw: bytes, resource_type: ResourceType, name: str, pattern_type: PatternType) -> list[AclBinding]:
    """The entries of one resource node; entries naming an unknown operation or permission are skipped."""
    if not raw:
        return []
    data = json.loads(raw)
    out = []
    for entry in data.get("acls", []):
        op = _OPERATIONS_BY_NAME.get(str(entry.get("operation", "")).replace("_", "").lower())
        perm = {"allow": AclPermissionType.ALLOW, "deny": AclPermissionType.DENY}.get(
            str(entry.get("permissionType", "")).lower())
        if op is None or perm is None:
            continue
        out.append(AclBinding(resource_type, name, pattern_type, entry["principal"], entry.get("host", "*"), op, perm))
    return out


def change_notification(pattern_type: PatternType, resource_type: ResourceType, name: str) -> tuple[str, bytes]:
    """(sequential node path prefix, data) announcing a change to one resource pattern's ACLs."""
    if pattern_type == PatternType.LITERAL:
        return f"{LITERAL_CHANGES}/{CHANGE_PREFIX}", f"{resource_type.name}:{name}".encode()
    event = {"version": 1, "resourceType": resource_type.name, "name": name, "patternType": pattern_type.name}
    return f"{EXTENDED_CHANGES}/{CHANGE_PREFIX}", json.dumps(event).encode()


__all__ = [
    "ACL_PATHS", "CHANGE_PREFIX", "EXTENDED_ACLS", "EXTENDED_CHANGES", "LITERAL_ACLS", "LITERAL_CHANGES",
    "RESOURCE_TYPE_NAMES", "change_notification", "decode_acls", "encode_acls", "pattern_root", "resource_path",
    "resource_type_from_path", "type_path",
]
