"""ACLs on schema registry subjects for ``tidelog acls --subject`` (docs/schema-registry.md): the resource
type SUBJECT is Tidelog's own (code 100), which confluent-kafka's admin API cannot carry, so these go
through Tidelog's own codec (CreateAcls, DescribeAcls, DeleteAcls). Codes are Kafka's (confluent-kafka's
enums have the same values)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from tidelog.cli.broker_connection import BrokerConnection, wire_error
from tidelog.cli.client import CliError
from tidelog.protocol.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest
from tidelog.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType

SUBJECT = int(ResourceType.SUBJECT)


@dataclass(frozen=True)
class SubjectAcl:
    """One ACL (or, with None / ANY codes, a filter) on subjects; codes as Kafka's."""

    name: str | None
    pattern: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def row(self) -> tuple[str, ...]:
        """As ``tidelog acls list`` prints it."""
        return ("SUBJECT", self.name or "", PatternType(self.pattern).name, self.principal or "", self.host or "",
                AclOperation(self.operation).name, AclPermissionType(self.permission).name)

    def describe(self) -> str:
        _, name, pattern, principal, host, op, permission = self.row()
        return f"{permission} {principal} from {host} {op} on SUBJECT {name} ({pattern})"


def _connect(args: argparse.Namespace) -> BrokerConnection:
    return BrokerConnection.open(args.bootstrap_server.split(",")[0], args.client_properties)


def create(args: argparse.Namespace, acls: list[SubjectAcl]) -> list[str | None]:
    """Create ``acls``; per ACL None, or the broker's refusal."""
    with _connect(args) as conn:
        answer = conn.request(CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=SUBJECT, resource_name=a.name, resource_pattern_type=a.pattern, principal=a.principal,
            host=a.host, operation=a.operation, permission_type=a.permission) for a in acls]))
    return [wire_error(r.error_code, r.error_message) if r.error_code else None for r in answer.results]


def describe(args: argparse.Namespace, acl_filter: SubjectAcl) -> list[SubjectAcl]:
    with _connect(args) as conn:
        answer = conn.request(DescribeAclsRequest(
            resource_type_filter=SUBJECT, resource_name_filter=acl_filter.name,
            pattern_type_filter=acl_filter.pattern, principal_filter=acl_filter.principal,
            host_filter=acl_filter.host, operation=acl_filter.operation, permission_type=acl_filter.permission))
    if answer.error_code:
        raise CliError(wire_error(answer.error_code, answer.error_message))
    return [SubjectAcl(r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
            for r in answer.resources for a in r.acls]


def delete(args: argparse.Namespace, filters: list[SubjectAcl]) -> list[SubjectAcl]:
    with _connect(args) as conn:
        answer = conn.request(DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
            resource_type_filter=SUBJECT, resource_name_filter=f.name, pattern_type_filter=f.pattern,
            principal_filter=f.principal, host_filter=f.host, operation=f.operation, permission_type=f.permission)
            for f in filters]))
    removed: list[SubjectAcl] = []
    for result in answer.filter_results:
        if result.error_code:
            raise CliError(wire_error(result.error_code, result.error_message))
        removed += [SubjectAcl(m.resource_name, m.pattern_type, m.principal, m.host, m.operation, m.permission_type)
                    for m in result.matching_acls]
    return removed


__all__ = ["SubjectAcl", "create", "delete", "describe"]
