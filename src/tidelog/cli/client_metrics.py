"""``tidelog client-metrics list|describe|alter|delete``: client-metrics subscriptions (KIP-714), as Kafka's
``kafka-client-metrics.sh`` manages them::

    tidelog client-metrics alter --name producers --metrics org.apache.kafka.producer. --interval 10000 \\
        --match client_id=orders-.*
    tidelog client-metrics list
    tidelog client-metrics describe --name producers
    tidelog client-metrics delete --name producers

A subscription is a CLIENT_METRICS config resource; clients it matches push the metrics it names every
``--interval`` ms, and the broker (with ``telemetry.enable=true``) shows them on /metrics and in the
console (docs/telemetry.md). confluent-kafka's admin API has no CLIENT_METRICS resources, so this sends
ListConfigResources, DescribeConfigs and IncrementalAlterConfigs itself
(:mod:`tidelog.cli.broker_connection`) to the first bootstrap server, over TLS and SASL as
``--command-config`` says. A refusal prints the broker's message and exits 1; usage errors exit 2.
"""

from __future__ import annotations

import argparse
import uuid

from tidelog.cli.client import CliError, command

CLIENT_METRICS = 16
SET, DELETE = 0, 1
CONFIGS = ("interval.ms", "match", "metrics")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("client-metrics", help="client-metrics subscriptions (client telemetry, KIP-714)",
                       description="Which metrics which clients push, and how often (docs/telemetry.md).")
    actions = p.add_subparsers(dest="client_metrics_command", metavar="ACTION", required=True)
    command(actions.add_parser("list", help="list the subscriptions"), _list)
    describe = actions.add_parser("describe", help="show a subscription's configs (every one without --name)")
    describe.add_argument("--name", help="the subscription")
    command(describe, _describe)
    alter = actions.add_parser("alter", help="create or change a subscription",
                               description="Set the configs given; the others keep their values.")
    name = alter.add_mutually_exclusive_group(required=True)
    name.add_argument("--name", help="the subscription")
    name.add_argument("--generate-name", action="store_true", help="a new subscription with a random name")
    alter.add_argument("--metrics", metavar="PREFIX[,PREFIX]",
                       help="metric-name prefixes to push (org.apache.kafka.producer.), * for all, '' for none")
    alter.add_argument("--interval", metavar="MS", type=int, help="push interval, 100 to 3600000 ms")
    alter.add_argument("--match", metavar="ATTR=REGEX[,ATTR=REGEX]",
                       help="clients to match: client_id, client_instance_id, client_software_name, "
                       "client_software_version, client_source_address, client_source_port ('' for all)")
    command(alter, _alter)
    delete = actions.add_parser("delete", help="remove a subscription")
    delete.add_argument("--name", required=True, help="the subscription")
    command(delete, _delete)


def _connection(args: argparse.Namespace):
    from tidelog.cli.broker_connection import BrokerConnection

    return BrokerConnection.open(args.bootstrap_server.split(",")[0], args.client_properties)


def _names(conn) -> list[str]:
    from tidelog.cli.broker_connection import wire_error
    from tidelog.protocol.messages import ListConfigResourcesRequest

    response = conn.request(ListConfigResourcesRequest(resource_types=[CLIENT_METRICS]))
    if response.error_code:
        raise CliError(f"cannot list subscriptions: {wire_error(response.error_code, None)}")
    return sorted(r.resource_name for r in response.config_resources)


def _list(args: argparse.Namespace) -> int:
    with _connection(args) as conn:
        for name in _names(conn):
            print(name)
    return 0


def _describe(args: argparse.Namespace) -> int:
    from tidelog.cli.broker_connection import wire_error
    from tidelog.protocol.messages import DescribeConfigsRequest as D

    with _connection(args) as conn:
        names = [args.name] if args.name else _names(conn)
        if not names:
            return 0
        response = conn.request(D(resources=[D.DescribeConfigsResource(
            resource_type=CLIENT_METRICS, resource_name=n, configuration_keys=None) for n in names]))
    for result in response.results:
        if result.error_code:
            raise CliError(f"cannot describe {result.resource_name}: "
                           f"{wire_error(result.error_code, result.error_message)}")
        print(f"Client metrics configs for {result.resource_name} are:")
        for c in sorted(result.configs, key=lambda c: c.name):
            print(f"  {c.name}={c.value or ''}")
    return 0


def _alter_configs(args: argparse.Namespace, name: str, ops: list[tuple[str, int, str | None]]) -> None:
    from tidelog.cli.broker_connection import wire_error
    from tidelog.protocol.messages import IncrementalAlterConfigsRequest as R

    request = R(resources=[R.AlterConfigsResource(resource_type=CLIENT_METRICS, resource_name=name, configs=[
        R.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])], validate_only=False)
    with _connection(args) as conn:
        (response,) = conn.request(request).responses
    if response.error_code:
        raise CliError(f"{name} not changed: {wire_error(response.error_code, response.error_message)}")


def _alter(args: argparse.Namespace) -> int:
    name = str(uuid.uuid4()) if args.generate_name else args.name
    ops: list[tuple[str, int, str | None]] = []
    if args.metrics is not None:
        ops.append(("metrics", SET, args.metrics))
    if args.interval is not None:
        ops.append(("interval.ms", SET, str(args.interval)))
    if args.match is not None:
        ops.append(("match", SET, args.match))
    if not ops:
        raise CliError("nothing to change: give --metrics, --interval and/or --match", exit_code=2)
    _alter_configs(args, name, ops)
    print(f"Altered client metrics config for {name}.")
    return 0


def _delete(args: argparse.Namespace) -> int:
    _alter_configs(args, args.name, [(k, DELETE, None) for k in CONFIGS])
    print(f"Deleted client metrics config for {args.name}.")
    return 0


__all__ = ["add_parser"]
