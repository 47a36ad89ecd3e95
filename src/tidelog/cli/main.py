"""Entry point of the ``tidelog`` command: one sub-command per module of this package.

Parsing is argparse's, with two additions: an option the chosen sub-command does not know is reported
with *that sub-command's* usage (argparse alone blames the top-level parser), and each command's
post-parse checks (:func:`tidelog.cli.argument.resolve`) report their errors the same way. Usage errors
exit 2.
"""

from __future__ import annotations

import argparse
import sys

from tidelog import __version__
from tidelog.cli.argument import (
    BOOTSTRAP_ENV,
    add_bootstrap_argument,
    add_command_config_argument,
    resolve,
    resolve_bootstrap,
    resolve_command_config,
)

#: Commands that run no Kafka client, so take no --bootstrap-server (``schemas`` speaks HTTP to the registry).
_OFFLINE = ("info", "serve", "dev-cluster", "schemas")


def _cmd_info(args: argparse.Namespace) -> int:
    from tidelog.protocol.api_keys import API_REGISTRY
    from tidelog.records.compression import available_codecs

    print(f"tidelog {__version__}")
    print(f"Kafka protocol codec: {len(API_REGISTRY)} API keys")
    if args.verbose:
        for entry in API_REGISTRY.values():
            flexible = f"flexible from v{entry.flexible_from}" if entry.flexible_from is not None else "never flexible"
            print(
                f"  {entry.api_key:>3} {entry.name:<36} v{entry.min_version}-v{entry.max_version}  ({flexible})"
            )
    print(f"Record batches: magic v0, v1, v2; compression: {', '.join(available_codecs())}")
    print("This describes the installed software and contacts no broker; "
          "`tidelog cluster info` asks a running broker what it serves.")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tidelog",
        description="Tidelog: a streaming log platform that speaks the Apache Kafka wire protocol. "
        f"Client commands find the broker with --bootstrap-server (before or after the command), "
        f"else ${BOOTSTRAP_ENV}, else localhost:9092.",
    )
    parser.add_argument("--version", action="version", version=f"tidelog {__version__}")
    add_bootstrap_argument(parser, top_level=True)
    add_command_config_argument(parser, top_level=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = sub.add_parser(
        "info", help="describe this installation offline: version, protocol codec, compression codecs",
        description="Print this installation's version, the Kafka API keys its codec knows and the "
        "compression codecs available. Offline: it contacts no broker (for what a running broker serves, "
        "use `tidelog cluster info`).",
    )
    info.add_argument("-v", "--verbose", action="store_true", help="list every API key and its versions")
    info.set_defaults(func=_cmd_info, parser=info)
    from tidelog.cli import (
        acls,
        client_metrics,
        cluster,
        configs,
        consume,
        delegation_tokens,
        dev_cluster,
        features,
        groups,
        offsets,
        perf,
        produce,
        quotas,
        schemas,
        serve,
        share_groups,
        topics,
        transactions,
        users,
    )

    serve.add_parser(sub)
    sub.choices["serve"].set_defaults(parser=sub.choices["serve"])
    topics.add_parser(sub)
    produce.add_parser(sub)
    consume.add_parser(sub)
    offsets.add_parser(sub)
    groups.add_parser(sub)
    share_groups.add_parser(sub)
    configs.add_parser(sub)
    cluster.add_parser(sub)
    features.add_parser(sub)
    quotas.add_parser(sub)
    client_metrics.add_parser(sub)
    acls.add_parser(sub)
    transactions.add_parser(sub)
    perf.add_parser(sub)
    dev_cluster.add_parser(sub)
    users.add_parser(sub)
    delegation_tokens.add_parser(sub)
    schemas.add_parser(sub)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse ``argv``; usage errors print the chosen sub-command's usage and exit 2 (SystemExit)."""
    args, extras = parser.parse_known_args(argv)
    leaf: argparse.ArgumentParser = getattr(args, "parser", None) or parser
    if extras:
        leaf.error(f"unrecognized arguments: {' '.join(extras)}")
    if not getattr(args, "func", None):
        return args
    if args.command in _OFFLINE:
        if args.bootstrap_server is not None:
            leaf.error(f"--bootstrap-server does not apply to tidelog {args.command}")
        return args
    try:
        resolve_bootstrap(args)
        resolve_command_config(args)
        resolve(args)
    except ValueError as e:
        leaf.error(str(e))
    return args


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse(parser, argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
