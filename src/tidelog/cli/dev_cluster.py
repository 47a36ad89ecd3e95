"""``tidelog dev-cluster``: a ZooKeeper and N brokers on loopback, in one command, for trying cluster mode.

ZooKeeper is fetched from Maven Central on first use (needs ``java`` and ``mvn``; see
:mod:`tidelog.cli.zookeeper`). Broker ``i`` (1..N) gets ``broker.id=i``, the port ``--port + i - 1``
(or a free port with ``--port 0``) and ``zookeeper.connect=<zookeeper>/tidelog``. The bootstrap
servers are printed on one line once every broker listens. Ctrl-C (or SIGTERM) stops the brokers,
then ZooKeeper. Data lives in a temporary directory removed on exit, unless ``--data-dir`` names one.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from tidelog.cli import argument
from tidelog.cli.zookeeper import ZooKeeperProcess, ZooKeeperUnavailable
from tidelog.testing.broker import BrokerProcess
from tidelog.testing.cluster import metadata_brokers

CHROOT = "/tidelog"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dev-cluster",
        help="run a ZooKeeper and N brokers on loopback (Ctrl-C stops all)",
        description="Start Apache ZooKeeper (fetched from Maven Central: needs java and mvn) and N Tidelog "
        "brokers in cluster mode on 127.0.0.1, print the bootstrap servers, and run until Ctrl-C.",
    )
    p.add_argument("--brokers", type=_count, default=3, metavar="N", help="number of brokers (default 3)")
    p.add_argument("--port", type=argument.port, default=9092,
                   help="port of broker 1; broker i gets PORT+i-1 (default 9092; 0 picks free ports)")
    p.add_argument("--zookeeper-port", type=argument.port, default=0, help="ZooKeeper's client port (default: a free one)")
    p.add_argument("--data-dir", type=Path, help="keep ZooKeeper's and the brokers' data here (default: a "
                   "temporary directory removed on exit)")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="set a broker property on every broker (repeatable)")
    p.set_defaults(func=run, parser=p)


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of brokers, got {text!r}") from None
    if not 1 <= n <= 32:
        raise argparse.ArgumentTypeError(f"--brokers must be between 1 and 32, got {n}")
    return n


def _fail(message: str, code: int = 1) -> int:
    print(f"tidelog dev-cluster: {message}", file=sys.stderr)
    return code


def run(args: argparse.Namespace) -> int:
    try:
        overrides = argument.overrides(args.override)
    except ValueError as e:
        return _fail(str(e), 2)
    for key in ("tubemq.master.listener", "tubemq.broker.listener"):
        port = overrides.get(key, "").rpartition(":")[2]
        if args.brokers > 1 and port not in ("", "0"):
            return _fail(f"--override {key}={overrides[key]}: {args.brokers} brokers on one machine cannot share "
                         f"port {port}; use port 0 (each broker logs the port it picked)", 2)
    if args.port and args.port + args.brokers - 1 > 65535:
        return _fail(f"ports {args.port}..{args.port + args.brokers - 1} go past 65535", 2)
    temporary = args.data_dir is None
    root = Path(tempfile.mkdtemp(prefix="tidelog-dev-cluster-")) if temporary else args.data_dir
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    zookeeper = ZooKeeperProcess(root / "zookeeper", port=args.zookeeper_port)
    brokers: list[BrokerProcess] = []
    try:
        try:
            zookeeper.start()
        except ZooKeeperUnavailable as e:
            return _fail(str(e))
        except RuntimeError as e:
            return _fail(str(e).splitlines()[0] + " (is --zookeeper-port free?)")
        connect = zookeeper.connect + CHROOT
        print(f"ZooKeeper on {zookeeper.connect} (zookeeper.connect={connect})", flush=True)
        offsets_rf = str(min(3, args.brokers))
        for i in range(1, args.brokers + 1):
            props = {"zookeeper.connect": connect, "broker.id": str(i), "zookeeper.session.timeout.ms": "6000",
                     "offsets.topic.replication.factor": offsets_rf,
                     # broker i's console and metrics on 9644+i-1 (free ports with --port 0)
                     "metrics.listener": f"http://127.0.0.1:{9644 + i - 1 if args.port else 0}", **overrides}
            broker = BrokerProcess(root / f"broker-{i}", overrides=props, port=args.port + i - 1 if args.port else 0)
            try:
                broker.start()
            except RuntimeError as e:
                return _fail(f"broker {i} did not start: {e}")
            brokers.append(broker)
            print(f"broker {i} on {broker.bootstrap} (data in {broker.data_dir}, console {broker.http_url})", flush=True)
        # each broker learns of the others from ZooKeeper a moment after they registered: the cluster is
        # ready (and the bootstrap servers printed) once every broker's Metadata lists every broker
        everyone = set(range(1, args.brokers + 1))
        deadline = time.monotonic() + 60
        while not all(everyone <= metadata_brokers(b.bootstrap) for b in brokers):
            if time.monotonic() > deadline:
                return _fail("the brokers did not all see each other within 60 s")
            if stop.wait(0.1):
                break
        print(f"bootstrap servers: {','.join(b.bootstrap for b in brokers)}", flush=True)
        reported: set[int] = set()
        while not stop.wait(1.0):
            for i, broker in enumerate(brokers, 1):
                if not broker.alive and i not in reported:
                    reported.add(i)
                    tail = "".join(broker.stderr_lines[-5:]).rstrip()
                    print(f"tidelog dev-cluster: broker {i} exited\n{tail}", file=sys.stderr, flush=True)
        print("stopping", flush=True)
        return 0
    finally:
        for broker in brokers:
            broker.stop()
        zookeeper.stop()
        if temporary:
            shutil.rmtree(root, ignore_errors=True)


__all__ = ["add_parser", "run"]
