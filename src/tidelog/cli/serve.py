"""``tidelog serve``: run a broker (embedded metadata store; nothing else to install or start)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path

from tidelog.cli.argument import overrides, port
from tidelog.config import BrokerConfig, ConfigError, parse_properties


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="run a broker",
        description="Run a Tidelog broker. With no arguments it listens on localhost:9092 and keeps its data "
        "in ./tidelog-data. Settings use Kafka's server.properties names.",
    )
    p.add_argument("config", nargs="?", type=Path, help="a server.properties file (Kafka's format and names)")
    p.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE",
        help="set any property, overriding the file (repeatable), as kafka-server-start.sh does",
    )
    p.add_argument("--host", help="interface to listen on (default localhost; 0.0.0.0 for all)")
    p.add_argument("--port", type=port, help="port to listen on (default 9092; 0 picks a free port, and then the HTTP listener takes a "
                   "free port too unless metrics.listener is set; every port is printed as `tidelog ports: {...}`)")
    p.add_argument("--data-dir", type=Path, help="where the logs and metadata live (log.dirs)")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.add_argument(
        "--event-loop", choices=["auto", "uvloop", "asyncio"], default="auto",
        help="uvloop (default; fetched records are read with pread and written) or asyncio (the standard "
        "loop; fetched records go out with os.sendfile)",
    )
    p.set_defaults(func=run)


def build_config(args: argparse.Namespace) -> BrokerConfig:
    """server.properties, then --override, then the --host/--port/--data-dir shortcuts (which change
    the first listener and log.dirs)."""
    props: dict[str, str] = {}
    if args.config is not None:
        try:
            props.update(parse_properties(args.config.read_text(encoding="utf-8")))
        except OSError as e:
            raise ConfigError(f"cannot read {args.config}: {e.strerror}") from None
    try:
        props.update(overrides(args.override))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if args.data_dir is not None:
        props["log.dirs"] = str(args.data_dir)
    config = BrokerConfig.from_props(props)
    if args.host is None and args.port is None:
        return config
    listeners = list(config["listeners"])
    first = listeners[0]
    listeners[0] = replace(first, host=first.host if args.host is None else args.host,
                           port=first.port if args.port is None else args.port)
    props["listeners"] = ",".join(str(listener) for listener in listeners)
    return BrokerConfig.from_props(props)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, args.log_level), stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = build_config(args)
    except (ConfigError, ValueError) as e:
        print(f"tidelog serve: {e}", file=sys.stderr)
        return 2
    use_uvloop = args.event_loop in ("auto", "uvloop")
    if use_uvloop:
        try:
            import uvloop

            asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
        except ImportError:
            if args.event_loop == "uvloop":
                print("tidelog serve: uvloop is not installed", file=sys.stderr)
                return 2
    try:
        return asyncio.run(_serve(config))
    except KeyboardInterrupt:
        return 0


async def _serve(config: BrokerConfig) -> int:
    from tidelog.server.broker import Broker, ListenerError
    from tidelog.storage.log_dir import LogDirError

    try:
        broker = Broker(config)
    except ValueError as e:
        print(f"tidelog serve: {e}", file=sys.stderr)
        return 2
    try:
        await broker.start()
    except (ListenerError, LogDirError) as e:
        print(f"tidelog serve: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"tidelog serve: cannot start: {e}", file=sys.stderr)
        return 1
    except ValueError as e:
        print(f"tidelog serve: {e}", file=sys.stderr)
        return 2
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    watch = _watch_parent(stop)
    if broker.http is not None:
        print(f"tidelog console: {broker.http.url}", flush=True)
    print(f"tidelog broker {broker.broker_id} listening on {broker.host or '0.0.0.0'}:{broker.port}", flush=True)
    # after the broker's line, which scripts read as the second one (docs/schema-registry.md)
    if broker.schema_registry_url is not None:
        print(f"tidelog schema registry: {broker.schema_registry_url}", flush=True)
    # One machine-readable line with every port opened (tools and test fixtures parse it).
    print(f"tidelog ports: {json.dumps(broker.ports)}", flush=True)
    await stop.wait()
    if watch is not None:
        watch.cancel()
    await broker.stop()
    return 0


#: Set by whoever starts ``tidelog serve`` as a child it owns (tidelog.Broker, the pytest plugin): the
#: parent's pid. The broker shuts down when that process is gone, so that no broker outlives a test run
#: that was killed (SIGKILL runs no clean-up in the parent).
PARENT_PID_ENV = "TIDELOG_PARENT_PID"


def _watch_parent(stop: asyncio.Event) -> asyncio.Task | None:
    text = os.environ.get(PARENT_PID_ENV, "")
    if not text.isdigit():
        return None
    parent = int(text)

    async def watch() -> None:
        while os.getppid() == parent:
            await asyncio.sleep(0.5)
        logging.getLogger(__name__).warning("the process that started this broker (pid %d) is gone: stopping",
                                            parent)
        stop.set()

    return asyncio.get_running_loop().create_task(watch())


def main(argv: list[str] | None = None) -> int:
    """``python -m tidelog.cli.serve [ARGS]``: ``tidelog serve`` without building the other commands'
    parsers (which import the Kafka client): how tidelog.Broker(mode="subprocess") starts its broker."""
    parser = argparse.ArgumentParser(prog="tidelog")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())

