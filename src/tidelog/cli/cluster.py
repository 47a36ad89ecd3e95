"""``tidelog cluster info``: who is in the cluster and what each broker serves, from a running broker
(DescribeCluster through the admin API, then ApiVersions to every broker, as
``kafka-broker-api-versions.sh`` does)::

    Cluster ID: Z-AhC5YXR4KcHsS-zVs84g
    Controller: 0 (127.0.0.1:9092)
    ID  HOST:PORT       RACK
    0   127.0.0.1:9092  -

    API versions of broker 0 at 127.0.0.1:9092:
        Produce(0): 0 to 11
        Fetch(1): 0 to 17
        ...

HOST:PORT is the address each broker advertises (its listener for clients). Kafka's requests do not
carry a broker's software version, so none is shown. ``tidelog info`` is the offline counterpart: it
describes the installed software and contacts no broker.
"""

from __future__ import annotations

import argparse
import sys

from tidelog.cli import leader_election, reassign
from tidelog.cli.client import REQUEST_TIMEOUT_S, CliError, Cluster, command, describe_error
from tidelog.cli.table import print_table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cluster", help="show the cluster id, controller, brokers and the APIs they serve; "
                       "elect leaders; move partitions",
                       description="Ask a running broker about its cluster, for leader elections, or to move partitions.")
    actions = p.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    info = actions.add_parser(
        "info", help="cluster id, controller, brokers (host:port) and each broker's API versions",
        description="Print the cluster id, the controller, every broker with the address it advertises, "
        "and the API versions each broker serves (ApiVersions, as kafka-broker-api-versions.sh shows).",
    )
    info.add_argument("--no-api-versions", dest="api_versions", action="store_false",
                      help="leave out the API versions")
    command(info, run)
    brokers = actions.add_parser(
        "brokers", help="list the brokers: id, host:port, rack",
        description="List every live broker of the cluster with the address it advertises and its rack "
        "(DescribeCluster); the controller is marked with *.")
    command(brokers, run_brokers)
    leader_election.add_parser(actions)
    reassign.add_parser(actions)


def run(args: argparse.Namespace) -> int:
    admin, _ = Cluster(args.bootstrap_server, args.client_properties).connect()
    try:
        cluster = admin.describe_cluster(request_timeout=REQUEST_TIMEOUT_S).result()
    except Exception as e:
        raise CliError(f"cannot describe the cluster: {describe_error(e)}") from None
    nodes = sorted(cluster.nodes, key=lambda n: n.id)
    controller = cluster.controller
    print(f"Cluster ID: {cluster.cluster_id}")
    print(f"Controller: {f'{controller.id} ({controller.host}:{controller.port})' if controller else 'none'}")
    print_table(["ID", "HOST:PORT", "RACK"], [[n.id, f"{n.host}:{n.port}", n.rack] for n in nodes])
    if not args.api_versions:
        return 0
    # Imported here: the wire codec takes about half a second to load, which only this step needs.
    from tidelog.cli.broker_connection import BrokerConnection
    from tidelog.protocol import API_REGISTRY

    failed = 0
    for node in nodes:
        address = f"{node.host}:{node.port}"
        try:
            with BrokerConnection.open(address, args.client_properties) as conn:
                versions = conn.api_versions()
        except CliError as e:
            print(f"{args.prog}: broker {node.id}: {e}", file=sys.stderr)
            failed += 1
            continue
        print()
        print(f"API versions of broker {node.id} at {address}:")
        for key, (low, high) in sorted(versions.items()):
            entry = API_REGISTRY.get(key)
            name = entry.name if entry is not None else "Unknown"
            print(f"\t{name}({key}): {low} to {high}")
    return 1 if failed else 0


def run_brokers(args: argparse.Namespace) -> int:
    admin, _ = Cluster(args.bootstrap_server, args.client_properties).connect()
    try:
        cluster = admin.describe_cluster(request_timeout=REQUEST_TIMEOUT_S).result()
    except Exception as e:
        raise CliError(f"cannot describe the cluster: {describe_error(e)}") from None
    controller = cluster.controller.id if cluster.controller is not None else None
    print_table(["ID", "HOST:PORT", "RACK", "CONTROLLER"],
                [[n.id, f"{n.host}:{n.port}", n.rack, "*" if n.id == controller else ""]
                 for n in sorted(cluster.nodes, key=lambda n: n.id)])
    return 0


__all__ = ["add_parser", "run", "run_brokers"]
