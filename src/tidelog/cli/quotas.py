"""``tidelog quotas describe|alter``: client quotas (produce / fetch byte rates, request percentage) per
user, client id or both, with ``<default>`` entities, as ``kafka-configs.sh --entity-type users|clients``
sets them::

    tidelog quotas alter --client-id app --add-config producer_byte_rate=1048576
    tidelog quotas alter --user-default --add-config consumer_byte_rate=2097152,request_percentage=50
    tidelog quotas alter --user alice --client-id app --delete-config producer_byte_rate
    tidelog quotas describe                      # every quota
    tidelog quotas describe --user alice         # alice's, and alice's per client id

    USER   CLIENT-ID  QUOTA               VALUE
    alice  app        producer_byte_rate  1048576

confluent-kafka's admin API has no client-quota calls, so this sends DescribeClientQuotas and
AlterClientQuotas itself (:mod:`tidelog.cli.broker_connection`) to the first bootstrap server, over TLS
and SASL as ``--command-config`` says. A refusal (CLUSTER_AUTHORIZATION_FAILED without DESCRIBE_CONFIGS /
ALTER_CONFIGS on the cluster) or a refused entry prints the broker's message and exits 1; usage errors
exit 2.
"""

from __future__ import annotations

import argparse

from tidelog.cli.client import CliError, command
from tidelog.cli.table import print_table

_DEFAULT = "<default>"
_MATCH_EXACT, _MATCH_DEFAULT, _MATCH_SPECIFIED = 0, 1, 2


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("quotas", help="describe and alter client quotas (byte rates, request percentage)",
                       description="Client quotas per user (principal name), client id or both; "
                       "--user-default / --client-default name the <default> entities.")
    actions = p.add_subparsers(dest="quotas_command", metavar="ACTION", required=True)
    describe = actions.add_parser("describe", help="list quotas, optionally of one user / client id",
                                  description="List the quotas whose entity matches: without options, every "
                                  "quota; --user alice lists alice's and alice's per-client-id ones "
                                  "(--strict: only entities with exactly the types named).")
    _entity_arguments(describe)
    describe.add_argument("--strict", action="store_true",
                          help="only entities made of exactly the entity types named")
    command(describe, _describe)
    alter = actions.add_parser("alter", help="set or remove quotas of one entity",
                               description="Set (--add-config) or remove (--delete-config) quotas of one "
                               "entity. Keys: producer_byte_rate, consumer_byte_rate (bytes/s), "
                               "request_percentage (percent of the broker's event loop), controller_mutation_rate.")
    _entity_arguments(alter)
    alter.add_argument("--add-config", metavar="KEY=VALUE[,KEY=VALUE]", default="",
                       help="quotas to set, comma-separated")
    alter.add_argument("--delete-config", metavar="KEY[,KEY]", default="", help="quotas to remove, comma-separated")
    alter.add_argument("--validate-only", action="store_true", help="check with the broker but change nothing")
    command(alter, _alter)


def _entity_arguments(parser: argparse.ArgumentParser) -> None:
    user = parser.add_mutually_exclusive_group()
    user.add_argument("--user", metavar="NAME", help="a user (the principal's name, e.g. alice or CN=svc,O=acme)")
    user.add_argument("--user-default", action="store_true", help="the <default> user")
    client = parser.add_mutually_exclusive_group()
    client.add_argument("--client-id", metavar="ID", help="a client id")
    client.add_argument("--client-default", action="store_true", help="the <default> client id")


def _named(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """The entity the options name: (type, name or None for the default)."""
    out: list[tuple[str, str | None]] = []
    if args.user is not None or args.user_default:
        out.append(("user", None if args.user_default else args.user))
    if args.client_id is not None or args.client_default:
        out.append(("client-id", None if args.client_default else args.client_id))
    return out


def _usage(args: argparse.Namespace, message: str) -> CliError:
    return CliError(message, exit_code=2)


def _value(value: float) -> str:
    return f"{value:.0f}" if value.is_integer() else repr(value)


def _describe(args: argparse.Namespace) -> int:
    from tidelog.cli.broker_connection import BrokerConnection, wire_error
    from tidelog.protocol.messages import DescribeClientQuotasRequest as D

    components = [D.ComponentData(entity_type=t, match_type=_MATCH_DEFAULT if n is None else _MATCH_EXACT, match=n)
                  for t, n in _named(args)]
    with BrokerConnection.open(args.bootstrap_server.split(",")[0], args.client_properties) as conn:
        response = conn.request(D(components=components, strict=args.strict))
    if response.error_code:
        raise CliError(f"cannot describe quotas: {wire_error(response.error_code, response.error_message)}")
    rows = []
    for entry in response.entries or []:
        names = {e.entity_type: _DEFAULT if e.entity_name is None else e.entity_name for e in entry.entity}
        for value in sorted(entry.values, key=lambda v: v.key):
            rows.append([names.get("user"), names.get("client-id"), value.key, _value(value.value)])
    if rows:
        print_table(["USER", "CLIENT-ID", "QUOTA", "VALUE"], rows)
    else:
        print("no quotas")
    return 0


def _alter(args: argparse.Namespace) -> int:
    from tidelog.cli.broker_connection import BrokerConnection, wire_error
    from tidelog.protocol.messages import AlterClientQuotasRequest as A

    entity = _named(args)
    if not entity:
        raise _usage(args, "name an entity: --user/--user-default and/or --client-id/--client-default")
    ops = []
    for item in filter(None, (s.strip() for s in args.add_config.split(","))):
        key, sep, text = item.partition("=")
        try:
            value = float(text)
        except ValueError:
            value = None
        if not sep or not key or value is None:
            raise _usage(args, f"--add-config: expected KEY=NUMBER, got {item!r}")
        ops.append(A.OpData(key=key.strip(), value=value, remove=False))
    for key in filter(None, (s.strip() for s in args.delete_config.split(","))):
        ops.append(A.OpData(key=key, value=0.0, remove=True))
    if not ops:
        raise _usage(args, "nothing to change: give --add-config and/or --delete-config")
    request = A(entries=[A.EntryData(entity=[A.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                                     ops=ops)], validate_only=args.validate_only)
    with BrokerConnection.open(args.bootstrap_server.split(",")[0], args.client_properties) as conn:
        response = conn.request(request)
    (entry,) = response.entries
    if entry.error_code:
        raise CliError(f"quotas not changed: {wire_error(entry.error_code, entry.error_message)}")
    label = ", ".join(f"{t} {_DEFAULT if n is None else repr(n)}" for t, n in entity)
    print(f"{'Validated' if args.validate_only else 'Updated'} quotas of {label}")
    return 0


__all__ = ["add_parser"]
