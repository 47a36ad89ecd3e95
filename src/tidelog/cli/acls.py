"""``tidelog acls``: add, list and remove ACLs (a Kafka admin client: CreateAcls, DescribeAcls,
DeleteAcls; the options follow ``kafka-acls.sh``)::

    tidelog acls add --allow-principal User:alice --operation Read --operation Write --topic orders
    tidelog acls add --allow-principal User:etl --operation All --topic etl- --resource-pattern-type prefixed
    tidelog acls add --deny-principal User:bob --deny-host 10.0.0.7 --operation Read --group billing
    tidelog acls list [--principal User:alice] [--topic orders]
    tidelog acls remove --allow-principal User:alice --operation Write --topic orders

``add`` creates one ACL per principal x host x operation x resource (hosts default to ``*``, operations
to All, the pattern type to literal). ``list`` prints every ACL matching the options (the pattern type
defaults to any). ``remove`` deletes the ACLs matching the options, as a filter: a dimension not given
matches everything (so ``remove --topic orders`` removes every literal ACL of that topic). Resources:
``--topic``, ``--group``, ``--transactional-id`` (each repeatable) and ``--cluster``, and Tidelog's own
``--subject`` (schema registry subjects: docs/schema-registry.md; through Tidelog's codec, as
confluent-kafka's admin API has no such resource type: :mod:`tidelog.cli.subject_acls`).

Exit codes as every client command: 1 when the broker refuses (no authorizer: SECURITY_DISABLED; not
allowed to change ACLs, or to list them: CLUSTER_AUTHORIZATION_FAILED; an invalid ACL), 2 for bad options.
A refusal is never an empty table.
"""

from __future__ import annotations

import argparse
import itertools
import sys

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from tidelog.cli.argument import add_check
from tidelog.cli.client import REQUEST_TIMEOUT_S, CliError, Cluster, command, describe_error
from tidelog.cli.table import print_table

CLUSTER_NAME = "kafka-cluster"
#: kafka-acls.sh's operation names (case-insensitive), as librdkafka's enum has them.
OPERATIONS = {name.replace("_", "").lower(): op for name, op in AclOperation.__members__.items()
              if op not in (AclOperation.UNKNOWN, AclOperation.ANY)}
PATTERN_TYPES = {"literal": ResourcePatternType.LITERAL, "prefixed": ResourcePatternType.PREFIXED,
                 "any": ResourcePatternType.ANY, "match": ResourcePatternType.MATCH}
#: How a resource type is printed (Kafka's names: librdkafka calls the cluster BROKER).
TYPE_NAMES = {ResourceType.TOPIC: "TOPIC", ResourceType.GROUP: "GROUP", ResourceType.BROKER: "CLUSTER",
              ResourceType.TRANSACTIONAL_ID: "TRANSACTIONAL_ID"}


def _operation(text: str) -> AclOperation:
    op = OPERATIONS.get(text.replace("_", "").replace("-", "").lower())
    if op is None:
        raise argparse.ArgumentTypeError(
            f"unknown operation {text!r}: one of Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
            "DescribeConfigs, AlterConfigs, IdempotentWrite, All")
    return op


def _principal(text: str) -> str:
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not a principal: expected Type:name, e.g. User:alice")
    return text


def _name(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("a resource name cannot be empty")
    return text


def _resource_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topic", action="append", type=_name, default=[], metavar="TOPIC",
                   help="a topic (repeatable; * means every topic)")
    p.add_argument("--group", action="append", type=_name, default=[], metavar="GROUP",
                   help="a consumer group (repeatable; * means every group)")
    p.add_argument("--transactional-id", action="append", type=_name, default=[], metavar="ID",
                   help="a transactional id (repeatable; * means every one)")
    p.add_argument("--cluster", action="store_true", help="the cluster (cluster-wide operations)")
    p.add_argument("--subject", action="append", type=_name, default=[], metavar="SUBJECT",
                   help="a schema registry subject (repeatable; * means every subject; Tidelog's own resource type)")


def _entry_options(p: argparse.ArgumentParser, *, listing: bool = False) -> None:
    p.add_argument("--allow-principal", action="append", type=_principal, default=[], metavar="PRINCIPAL",
                   help="principal to allow, as Type:name (User:alice; User:* is everyone); repeatable")
    p.add_argument("--deny-principal", action="append", type=_principal, default=[], metavar="PRINCIPAL",
                   help="principal to deny; repeatable")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                   help="client address the allow ACLs apply to (default: * = any); repeatable")
    p.add_argument("--deny-host", action="append", default=[], metavar="HOST",
                   help="client address the deny ACLs apply to (default: *); repeatable")
    p.add_argument("--operation", action="append", type=_operation, default=[], metavar="OPERATION",
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                   "AlterConfigs, IdempotentWrite or All; repeatable" + ("" if listing else " (default: All)"))


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "acls", help="add, list and remove ACLs",
        description="Manage ACLs through the Kafka admin API (the broker needs authorizer.class.name; changing "
        "ACLs needs ALTER on the cluster, listing them DESCRIBE). Options follow kafka-acls.sh.",
    )
    actions = p.add_subparsers(dest="acls_command", metavar="ACTION", required=True)

    add = actions.add_parser("add", help="add ACLs", description="Add one ACL per principal, host, operation and "
                             "resource given.")
    _entry_options(add)
    _resource_options(add)
    add.add_argument("--resource-pattern-type", type=str.lower, choices=["literal", "prefixed"], default="literal",
                     help="literal: the resource named; prefixed: every resource whose name starts with it")
    add_check(add, _add_check)
    command(add, _add)

    lst = actions.add_parser("list", help="list ACLs", description="List the ACLs matching the options (all "
                             "by default).")
    lst.add_argument("--principal", type=_principal, metavar="PRINCIPAL", help="only this principal's ACLs")
    _resource_options(lst)
    lst.add_argument("--resource-pattern-type", type=str.lower, choices=list(PATTERN_TYPES), default="any",
                     help="any (default), match (every ACL that applies to the named resource), literal, prefixed")
    command(lst, _list)

    remove = actions.add_parser("remove", help="remove ACLs", description="Remove the ACLs matching the options; "
                                "what is not given matches everything.")
    _entry_options(remove, listing=True)
    _resource_options(remove)
    remove.add_argument("--resource-pattern-type", type=str.lower, choices=list(PATTERN_TYPES), default="literal",
                        help="literal (default), prefixed, any or match")
    add_check(remove, _remove_check)
    command(remove, _remove)


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    return ([(ResourceType.TOPIC, t) for t in args.topic] + [(ResourceType.GROUP, g) for g in args.group]
            + [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
            + ([(ResourceType.BROKER, CLUSTER_NAME)] if args.cluster else []))


def _entries(args: argparse.Namespace) -> list[tuple[str | None, str | None, AclPermissionType]]:
    """(principal, host, permission) of every allow and deny entry asked for."""
    out: list[tuple[str | None, str | None, AclPermissionType]] = []
    for principals, hosts, permission in ((args.allow_principal, args.allow_host, AclPermissionType.ALLOW),
                                          (args.deny_principal, args.deny_host, AclPermissionType.DENY)):
        out += [(p, h, permission) for p in principals for h in (hosts or ["*"])]
    return out


def _add_check(args: argparse.Namespace) -> None:
    if not args.allow_principal and not args.deny_principal:
        raise ValueError("give --allow-principal or --deny-principal")
    _remove_check(args)


def _remove_check(args: argparse.Namespace) -> None:
    if not _resources(args) and not args.subject:
        raise ValueError("give a resource: --topic, --group, --transactional-id, --cluster or --subject")
    if args.allow_host and not args.allow_principal:
        raise ValueError("--allow-host needs --allow-principal")
    if args.deny_host and not args.deny_principal:
        raise ValueError("--deny-host needs --deny-principal")


def _admin(args: argparse.Namespace):
    admin, _ = Cluster(args.bootstrap_server, args.client_properties).connect()
    return admin


def _fail(error: BaseException) -> CliError:
    return CliError(describe_error(error))


def _add(args: argparse.Namespace) -> int:
    from tidelog.cli import subject_acls as subjects  # the wire codec: loaded only when run
    from tidelog.cli.subject_acls import SubjectAcl

    pattern = PATTERN_TYPES[args.resource_pattern_type]
    bindings = [AclBinding(rtype, name, pattern, principal, host, op, permission)
                for (rtype, name), (principal, host, permission), op
                in itertools.product(_resources(args), _entries(args), args.operation or [AclOperation.ALL])]
    subject_acls = [SubjectAcl(name, pattern.value, principal, host, op.value, permission.value)
                    for name, (principal, host, permission), op
                    in itertools.product(args.subject, _entries(args), args.operation or [AclOperation.ALL])]
    failed = 0
    if subject_acls:
        refusals = subjects.create(args, subject_acls)
        if len(refusals) == 1 and refusals[0] and not bindings:
            raise CliError(refusals[0])
        for acl, refusal in zip(subject_acls, refusals, strict=True):
            if refusal:
                failed += 1
                print(f"{args.prog}: {acl.describe()}: {refusal}", file=sys.stderr)
            else:
                print(f"Added {acl.describe()}")
    if not bindings:
        return 1 if failed else 0
    admin = _admin(args)  # kept alive until every future is done (librdkafka destroys a collected handle)
    futures = admin.create_acls(bindings, request_timeout=REQUEST_TIMEOUT_S)
    for binding, future in futures.items():
        try:
            future.result()
            print(f"Added {_describe(binding)}")
        except KafkaException as e:
            if not failed and len(futures) == 1 and not subject_acls:
                raise _fail(e) from None
            failed += 1
            print(f"{args.prog}: {_describe(binding)}: {describe_error(e)}", file=sys.stderr)
    return 1 if failed else 0


def _list(args: argparse.Namespace) -> int:
    from tidelog.cli import subject_acls as subjects  # the wire codec: loaded only when run
    from tidelog.cli.subject_acls import SubjectAcl

    pattern = PATTERN_TYPES[args.resource_pattern_type]
    given = bool(_resources(args) or args.subject)
    filters = [AclBindingFilter(rtype, name, pattern, args.principal, None, AclOperation.ANY, AclPermissionType.ANY)
               for rtype, name in _resources(args)] or ([] if given else [
        AclBindingFilter(ResourceType.ANY, None, pattern, args.principal, None, AclOperation.ANY,
                         AclPermissionType.ANY)])
    found: dict[tuple, object] = {}
    if filters:
        admin = _admin(args)
        for acl_filter in filters:
            try:
                for binding in admin.describe_acls(acl_filter, request_timeout=REQUEST_TIMEOUT_S).result():
                    if binding.restype != ResourceType.UNKNOWN:  # SUBJECT ACLs: listed below, by name
                        found[_key(binding)] = binding
            except KafkaException as e:
                raise _fail(e) from None
    if args.subject or not given:
        for name in args.subject or [None]:
            for acl in subjects.describe(args, SubjectAcl(name, pattern.value, args.principal, None,
                                                          AclOperation.ANY.value, AclPermissionType.ANY.value)):
                found[acl.row()] = acl
    if not found:
        _refusal(args)
    print_table(["RESOURCE-TYPE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"],
                [list(k) for k in sorted(found)])
    return 0


def _refusal(args: argparse.Namespace) -> None:
    """Raise the broker's refusal of DescribeAcls, if it refused. confluent-kafka 2.16's ``describe_acls``
    returns an empty list on CLUSTER_AUTHORIZATION_FAILED (a principal without DESCRIBE on the cluster), so
    an empty answer is asked again with Tidelog's own codec, which keeps the error code."""
    from tidelog.cli.broker_connection import BrokerConnection, wire_error
    from tidelog.protocol.messages import DescribeAclsRequest

    any_ = 1  # Kafka's ANY of the resource type, pattern type, operation and permission type
    probe = DescribeAclsRequest(resource_type_filter=any_, resource_name_filter=None, pattern_type_filter=any_,
                                principal_filter=None, host_filter=None, operation=any_, permission_type=any_)
    with BrokerConnection.open(args.bootstrap_server.split(",")[0], args.client_properties) as conn:
        answer = conn.request(probe)
    if answer.error_code:
        raise CliError(wire_error(answer.error_code, answer.error_message))


def _remove(args: argparse.Namespace) -> int:
    from tidelog.cli import subject_acls as subjects  # the wire codec: loaded only when run
    from tidelog.cli.subject_acls import SubjectAcl

    pattern = PATTERN_TYPES[args.resource_pattern_type]
    entries = _entries(args) or [(None, None, AclPermissionType.ANY)]
    filters = [AclBindingFilter(rtype, name, pattern, principal, host, op, permission)
               for (rtype, name), (principal, host, permission), op
               in itertools.product(_resources(args), entries, args.operation or [AclOperation.ANY])]
    removed: dict[tuple, str] = {}
    if filters:
        admin = _admin(args)
        futures = admin.delete_acls(filters, request_timeout=REQUEST_TIMEOUT_S)
        for future in futures.values():
            try:
                for binding in future.result():
                    removed[_key(binding)] = _describe(binding)
            except KafkaException as e:
                raise _fail(e) from None
    if args.subject:
        subject_filters = [SubjectAcl(name, pattern.value, principal, host, op.value, permission.value)
                           for name, (principal, host, permission), op
                           in itertools.product(args.subject, entries, args.operation or [AclOperation.ANY])]
        for acl in subjects.delete(args, subject_filters):
            removed[acl.row()] = acl.describe()
    for key in sorted(removed):
        print(f"Removed {removed[key]}")
    print(f"{len(removed)} ACL(s) removed")
    return 0


def _key(b: AclBinding) -> tuple[str, ...]:
    return (TYPE_NAMES.get(b.restype, b.restype.name), b.name, b.resource_pattern_type.name, b.principal, b.host,
            b.operation.name, b.permission_type.name)


def _describe(b: AclBinding) -> str:
    rtype, name, pattern, principal, host, op, permission = _key(b)
    return f"{permission} {principal} from {host} {op} on {rtype} {name} ({pattern})"


__all__ = ["add_parser"]
