"""Entry point of the ``tidelog`` command: one sub-command per module of this package."""

from __future__ import annotations

import argparse
import sys

from tidelog import __version__


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
    print("Run a broker with `tidelog serve` (see `tidelog serve --help`).")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tidelog",
        description="Tidelog: a streaming log platform that speaks the Apache Kafka wire protocol.",
    )
    parser.add_argument("--version", action="version", version=f"tidelog {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = sub.add_parser("info", help="print the version and what this build supports")
    info.add_argument("-v", "--verbose", action="store_true", help="list every API key and its versions")
    info.set_defaults(func=_cmd_info)
    from tidelog.cli import consume, groups, perf, produce, serve, topics

    serve.add_parser(sub)
    topics.add_parser(sub)
    produce.add_parser(sub)
    consume.add_parser(sub)
    perf.add_parser(sub)
    groups.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
