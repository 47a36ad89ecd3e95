"""Fault runs in the manner of Jepsen: clients write unique values to a replicated topic while a
nemesis breaks the cluster; after healing, a checker decides whether any invariant was broken.

    python -m tests.fault.lab.jepsen --duration 600              # a soak, every nemesis mixed
    python -m tests.fault.lab.jepsen --nemesis kill --duration 60
    python -m tests.fault.lab.jepsen --workload group --nemesis partition-clients --duration 60
    python -m tests.fault.lab.jepsen --workload append --nemesis membership --duration 60

:func:`fault_cluster` builds a :class:`~tidelog.testing.cluster.LocalCluster` (three brokers,
``min.insync.replicas=2``, a 4 s ZooKeeper session) wired through a
:class:`~tests.fault.lab.nemesis.ClusterNetwork`. :func:`run` does one run on it:

1. create the topic (RF=3, ``min.insync.replicas=2``, unclean election off);
2. start the workload's clients (:func:`make_clients`): ``register`` (:mod:`tests.fault.lab.workload`:
   idempotent acks=all producers, a transactional producer committing and aborting, a
   read_uncommitted and a read_committed reader), ``group`` (:mod:`tests.fault.lab.groups`:
   subscribed consumers of both group protocols) or ``append`` (:mod:`tests.fault.lab.txn_append`:
   list-append transactions);
3. run the nemesis's schedule (quiet, fault, heal, ...) for ``duration`` seconds; heal;
4. stop the clients; wait until every partition has a leader and its full ISR (liveness), then
   until its replicas are byte-identical on disk; read every partition to its end with both
   isolation levels;
5. :func:`tests.fault.lab.history.check` the history, with the workload's own checker
   (:func:`workload_checks`: poll-skip and nonmonotonic polls, or G0/G1c/aborted reads); print the
   summary and the verdict. An invalid
   run writes ``history.jsonl``, ``summary.txt`` and every process's log to a directory under
   ``$TIDELOG_FAULT_ARTIFACTS`` (default ``<tmp>/tidelog-faults``) and names it.

The cluster is healed (every broker running, ZooKeeper up, no cuts) when :func:`run` returns, so
several runs can share one cluster (the CI tests do).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.fault.lab.groups import GroupConsumer, check_polls
from tests.fault.lab.history import History, Verdict, check
from tests.fault.lab.membership import ClockJump, Membership, faketime_library
from tests.fault.lab.nemesis import (
    ClusterNetwork,
    Combined,
    Isolate,
    Kill,
    Mixed,
    Nemesis,
    PartitionBrokers,
    PartitionClients,
    Pause,
    Quiet,
    RestartZooKeeper,
    run_schedule,
)
from tests.fault.lab.sequence_audit import Copy, locate, repeated_sequences, resent_after_epoch_bump
from tests.fault.lab.txn_append import AppendTransactions, check_history
from tests.fault.lab.workload import ClientLog, IdempotentProducer, Reader, TransactionalProducer, final_read
from tidelog.cli.zookeeper import ZooKeeperProcess
from tidelog.testing.cluster import LocalCluster, wait_for

SESSION_MS = 4000
OVERRIDES = {
    "min.insync.replicas": "2", "default.replication.factor": "3", "unclean.leader.election.enable": "false",
    "replica.lag.time.max.ms": "1500", "replica.fetch.backoff.ms": "200", "replica.socket.timeout.ms": "3000",
    "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "3", "transaction.state.log.num.partitions": "3",
    "transaction.state.log.min.isr": "2",
    # A new classic group's first rebalance waits this long and again for each member that joins
    # meanwhile (Kafka's rule); the group workload's members churn every 4-12 s, so the default 3 s
    # can keep a classic group from ever forming in a short run. Kafka's own test harnesses use 0.
    "group.initial.rebalance.delay.ms": "0",
}
WORKLOADS = ("register", "group", "append")
NEMESES = ("none", "kill", "pause", "isolate-drop", "isolate-blackhole", "zk-stop", "zk-kill", "kill+zk-stop",
           "pause+isolate-drop", "partition-brokers", "partition-clients", "partition-clients-drop", "membership",
           "clock-jump")
#: Nemeses that need the client proxies (``fault_cluster(client_proxies=True)``, ``--client-proxies``)
CLIENT_NEMESES = ("partition-clients", "partition-clients-drop")


def fault_cluster(root: Path, *, zookeeper: ZooKeeperProcess | None = None, chroot: str = "/tidelog-faults",
                  overrides: dict[str, str] | None = None,
                  client_proxies: bool = False) -> tuple[LocalCluster, ClusterNetwork]:
    """A started three-broker cluster whose inter-broker and ZooKeeper traffic (and, with
    ``client_proxies``, the clients' traffic) goes through proxies."""
    cluster = LocalCluster(root, chroot=chroot, session_ms=SESSION_MS, zookeeper=zookeeper,
                           overrides={**OVERRIDES, **(overrides or {})})
    network = ClusterNetwork(cluster, client_proxies=client_proxies)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        network.close()
        raise
    return cluster, network


def make_nemesis(name: str, cluster: LocalCluster, network: ClusterNetwork, topic: str,
                 rng: random.Random) -> Nemesis:
    """A nemesis by name (see ``NEMESES``; ``+`` combines, ``mixed`` picks one of them each time)."""
    if name == "mixed":
        names = [n for n in NEMESES if n != "none" and (n not in CLIENT_NEMESES or (network and network.clients))
                 and (n != "clock-jump" or faketime_library())]
        return Mixed(*(make_nemesis(n, cluster, network, topic, rng) for n in names), rng=rng)
    if "+" in name:
        parts = [make_nemesis(n, cluster, network, topic, rng) for n in name.split("+")]
        for part in parts[1:]:  # combined faults on brokers hit different brokers where they can
            if hasattr(part, "target"):
                part.target = "random"
        return Combined(*parts)
    if name == "none":
        return Quiet()
    if name == "kill":
        return Kill(cluster, topic=topic, rng=rng)
    if name == "pause":
        return Pause(cluster, topic=topic, rng=rng)
    if name in ("isolate-drop", "isolate-blackhole"):
        return Isolate(cluster, network, mode=name.split("-")[1], topic=topic, rng=rng)
    if name == "membership":
        return Membership(cluster, topic=topic, rng=rng)
    if name == "clock-jump":
        if cluster is None:  # the command line's check of the name
            return Quiet()
        return ClockJump(cluster, root=cluster.root, topic=topic, rng=rng)
    if name == "partition-brokers":
        return PartitionBrokers(cluster, network, topic=topic, rng=rng)
    if name in CLIENT_NEMESES:
        if network is None:  # the command line's check of the name
            return Quiet()
        return PartitionClients(cluster, network, mode="drop" if name.endswith("-drop") else "blackhole",
                                topic=topic, rng=rng)
    if name in ("zk-stop", "zk-kill"):
        return RestartZooKeeper(cluster, kill=name == "zk-kill")
    raise ValueError(f"unknown nemesis {name!r} (one of {', '.join((*NEMESES, 'mixed'))})")


def make_clients(workload: str, common: tuple, *, topic: str, producers: int, transactional: int,
                 seed: int) -> list:
    """The workload's clients: ``register`` -- idempotent producers, transactional producers, a
    read_uncommitted and a read_committed reader; ``group`` -- idempotent producers and two groups
    of two subscribed consumers, one per ``group.protocol`` (classic, consumer), leaving and
    joining again every ~8 s; ``append`` -- ``transactional`` (at least 2) list-append
    transaction clients, each writing its own partitions, and a read_committed reader."""
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r} (one of {', '.join(WORKLOADS)})")
    partitions = common[2]
    if workload == "append":
        n = max(2, transactional)
        clients: list = [AppendTransactions(f"{topic}-a{i}", *common, seed=seed,
                                            keys=[p for p in range(partitions) if p % n == i] or [i % partitions])
                         for i in range(n)]
        return [*clients, Reader("r-committed", *common, isolation="read_committed", seed=seed)]
    clients = [IdempotentProducer(f"p{i}", *common, seed=seed) for i in range(producers)]
    if workload == "group":
        return clients + [GroupConsumer(f"{protocol}-c{i}", *common, seed=seed, group=f"{topic}-{protocol}",
                                        protocol=protocol, churn_s=8.0)
                          for protocol in ("classic", "consumer") for i in range(2)]
    clients += [TransactionalProducer(f"{topic}-t{i}", *common, seed=seed) for i in range(transactional)]
    return [*clients, Reader("r-uncommitted", *common, seed=seed),
            Reader("r-committed", *common, isolation="read_committed", seed=seed)]


def workload_checks(workload: str, history: History, clients: list) -> tuple[list[str], list[str]]:
    """The workload's own checker (after the final reads): violations and summary lines."""
    if workload == "append":
        verdict = check_history(history)
        return [f"{name}: {', '.join(examples[:3])}" for name, examples in verdict.anomalies.items()], \
            verdict.describe()
    if workload != "group":
        return [], []
    final = next((op for op in reversed(history.ops) if op.f == "read" and op.type == "ok"
                  and op.value["isolation"] == "read_committed"), None)
    if final is None:
        return [], ["polls: not checked (no final read_committed read)"]
    versions: dict[int, list[int]] = {}
    for p, offset, _ in final.value["records"]:
        versions.setdefault(p, []).append(offset)
    problems, lines = [], []
    for protocol in ("classic", "consumer"):
        members = {c.process for c in clients if isinstance(c, GroupConsumer) and c.protocol == protocol}
        verdict = check_polls(history, versions, members)
        lines.append(f"polls, group.protocol={protocol}: "
                     + ", ".join(f"{k} {v}" for k, v in verdict.stats.items()))
        problems += [f"group.protocol={protocol}: {v}" for v in verdict.violations]
    return problems, lines


@dataclass
class RunResult:
    history: History
    verdict: Verdict
    #: where the history and logs were kept (an invalid run only)
    artifacts: Path | None = None

    def failure_message(self) -> str:
        return "\n".join([*self.verdict.describe(), f"history and broker logs kept in {self.artifacts}"])


def _settle(cluster: LocalCluster, topic: str, partitions: int, timeout: float) -> list[str]:
    """Wait until every partition is led and has its full ISR, then until its replicas are
    byte-identical; what did not happen, as violations."""
    problems = []
    # The harness's own ZooKeeper client may still be reconnecting after a ZooKeeper restart.
    wait_for(lambda: cluster.zk.connected and _quietly(lambda: cluster.assignment(topic)), timeout,
             what="the harness's ZooKeeper client to reconnect", interval=0.2)
    for p in range(partitions):
        replicas = sorted(cluster.assignment(topic)[p])

        def healthy(p=p, replicas=replicas):
            state = _quietly(lambda: cluster.state(topic, p)) or {"leader": -1, "isr": []}
            return state["leader"] in replicas and sorted(state["isr"]) == replicas

        try:
            wait_for(healthy, timeout, what=f"{topic}-{p} led with its full ISR {replicas}", interval=0.2)
        except AssertionError as e:
            problems.append(f"not recovered after healing: {e} (state {_quietly(lambda p=p: cluster.state(topic, p))})")
            continue
        try:
            cluster.wait_replicas_identical(topic, p, replicas, timeout=timeout)
        except AssertionError:
            logs = {i: cluster.log_batches(i, topic, p) for i in replicas}
            ends = {i: (len(b), b[-1][0] if b else None) for i, b in logs.items()}
            first = min(len(b) for b in logs.values())
            diverge = next((k for k in range(first) if len({b[k][1] for b in logs.values()}) > 1), first)
            problems.append(f"replicas of {topic}-{p} differ on disk: (batches, last base offset) per broker "
                            f"{ends}, first difference at batch {diverge}")
    return problems


def _quietly(fn: Callable[[], object]) -> object:
    """``fn()``, or None if the ZooKeeper client is between sessions (kazoo raises then)."""
    try:
        return fn()
    except Exception:
        return None


def audit_sequences(cluster: LocalCluster, topic: str, partitions: int) -> tuple[list[str], dict[int, list[bytes]]]:
    """Each partition's log (first replica; the replicas are identical by now) and the sequences it
    holds twice (violations, see :mod:`tests.fault.lab.sequence_audit`)."""
    logs: dict[int, list[bytes]] = {}
    problems = []
    for p in range(partitions):
        replicas = _quietly(lambda p=p: cluster.assignment(topic)[p]) or sorted(cluster.brokers)
        logs[p] = [data for _, data in cluster.log_batches(replicas[0], topic, p)]
        problems += repeated_sequences(p, logs[p])
    return problems, logs


def explain_duplicates(history: History, copies: dict[str, list[Copy]]) -> list[str]:
    """For each duplicated value: its copies on disk and what the client was told of its sends."""
    lines = []
    for value, where in copies.items():
        told = [f"{op.time:.2f}s {op.type}{' ' + op.error if op.error else ''}"
                for op in history.ops if op.f == "send" and (op.value or {}).get("value") == value]
        kind = " [re-sent by the client after an epoch bump]" if resent_after_epoch_bump(where) else ""
        lines.append(f"duplicate {value}{kind}: " + "; ".join(c.describe() for c in where or [])
                     + f" -- client: {', '.join(told) or 'nothing'}")
    return lines


def _keep(result: RunResult, cluster: LocalCluster, name: str, lines: list[str], client_log: ClientLog) -> Path:
    base = Path(os.environ.get("TIDELOG_FAULT_ARTIFACTS") or Path(tempfile.gettempdir()) / "tidelog-faults")
    path = base / f"{name}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    result.history.write(path / "history.jsonl")
    (path / "summary.txt").write_text("\n".join(lines) + "\n")
    for i, broker in cluster.brokers.items():
        (path / f"broker-{i}.log").write_text("".join(broker.stderr_lines))
    (path / "zookeeper.log").write_text("".join(cluster.zookeeper.output))
    (path / "clients.log").write_text("".join(line + "\n" for line in client_log.lines))
    return path


def run(cluster: LocalCluster, network: ClusterNetwork, nemesis_name: str, *, topic: str,
        workload: str = "register", duration: float = 20.0, partitions: int = 3, producers: int = 2, transactional: int = 1,
        quiet_s: float = 3.0, fault_s: float = 5.0, seed: int | None = None,
        settle_timeout: float = 60.0, out: Callable[[str], None] = print, live: bool = False,
        keep: bool = False) -> RunResult:
    """One fault run (see the module docstring); prints the history summary and verdict via ``out``
    (with ``live``, also each nemesis step as it happens)."""
    seed = random.randrange(1 << 30) if seed is None else seed

    def progress(op) -> None:
        if live:
            out(f"  {op.time:8.2f}s nemesis {op.f}: {op.value}")

    rng = random.Random(seed)
    cluster.create_topic(topic, partitions, 3, {"min.insync.replicas": "2"})
    nemesis = make_nemesis(nemesis_name, cluster, network, topic, rng)
    history = History()
    client_log = ClientLog(history.t0).__enter__()
    try:
        return _run(cluster, network, nemesis_name, nemesis, history, client_log, topic=topic, workload=workload,
                    duration=duration,
                    partitions=partitions, producers=producers, transactional=transactional, quiet_s=quiet_s,
                    fault_s=fault_s, seed=seed, rng=rng, settle_timeout=settle_timeout, out=out, progress=progress,
                    keep=keep)
    finally:
        client_log.__exit__()


def _run(cluster: LocalCluster, network: ClusterNetwork, nemesis_name: str, nemesis: Nemesis, history: History,
         client_log: ClientLog, *, topic: str, workload: str, duration: float, partitions: int, producers: int, transactional: int,
         quiet_s: float, fault_s: float, seed: int, rng: random.Random, settle_timeout: float, out: Callable[[str], None],
         progress: Callable, keep: bool) -> RunResult:
    stop_clients, stop_nemesis = threading.Event(), threading.Event()
    bootstrap = network.client_bootstrap()
    clients = make_clients(workload, (bootstrap, topic, partitions, history, stop_clients), topic=topic,
                           producers=producers, transactional=transactional, seed=seed)
    for client in clients:
        client.start()
    schedule = threading.Thread(target=run_schedule, name="nemesis", daemon=True, args=(
        nemesis, stop_nemesis, lambda phase, text: progress(history.add("nemesis", "info", phase, text))),
        kwargs={"quiet_s": quiet_s, "fault_s": fault_s, "rng": rng})
    schedule.start()
    time.sleep(duration)
    stop_nemesis.set()
    schedule.join(120)
    network.heal()  # whatever happened, the cluster is whole again
    if not cluster.zookeeper.alive:
        cluster.zookeeper.start()
    for i, broker in cluster.brokers.items():
        if not broker.alive:
            cluster.restart(i)
        else:
            cluster.resume(i)
    history.add("nemesis", "info", "healed", "every broker running, ZooKeeper up, no cuts")
    time.sleep(1.0)  # the producers' last records go to a whole cluster
    stop_clients.set()
    for client in clients:
        client.join(60)
    problems = [f"client {c.process} crashed: {c.crashed!r}" for c in clients if c.crashed]
    problems += [f"client {c.process} did not stop" for c in clients if c.is_alive()]
    problems += _settle(cluster, topic, partitions, settle_timeout)
    for isolation in ("read_uncommitted", "read_committed"):
        final_read(cluster.bootstrap(), topic, partitions, isolation, history)
    sequence_problems, logs = audit_sequences(cluster, topic, partitions)
    problems += sequence_problems
    checked, checker_lines = workload_checks(workload, history, clients)
    problems += checked
    verdict = check(history, problems)
    duplicated = sorted({v for values in verdict.duplicates.values() for v in values})
    copies = locate(duplicated, logs)
    if duplicated:
        resent = {v for v, where in copies.items() if resent_after_epoch_bump(where)}
        verdict = check(history, problems, resent)
    lines = [f"fault run {nemesis_name} ({workload} workload) on {topic}: {duration:g} s, seed {seed}",
             *history.summary(), *checker_lines, *verdict.describe()]
    bumps = Counter(line.rsplit(": ", 1)[-1].strip() for line in client_log.lines
                    if "Beginning partition drain" in line and "epoch bump" in line)
    if bumps:
        causes = Counter(m.group(1) for line in client_log.lines
                         if (m := re.search(r"caused by previous failed request \((\w+)", line)))
        lines.append("idempotent producers' epoch bumps (librdkafka): "
                     + ", ".join(f"{reason} x{n}" for reason, n in bumps.most_common())
                     + ("; the failed requests before skipped sequences: "
                        + ", ".join(f"{e} x{n}" for e, n in causes.most_common()) if causes else ""))
    lines += explain_duplicates(history, dict(list(copies.items())[:20]))
    result = RunResult(history, verdict)
    if keep or not verdict.valid:
        result.artifacts = _keep(result, cluster, f"{nemesis_name}-{topic}", lines, client_log)
        lines.append(f"history and broker logs kept in {result.artifacts}")
    for line in lines:
        out(line)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fault.lab.jepsen",
        description="Start ZooKeeper and three brokers on loopback, run a fault schedule against "
                    "them while clients write, then check that no acknowledged record was lost or "
                    "duplicated, replicas are identical, offsets are never reused and read_committed "
                    "never sees aborted data. Exit code 0: valid, 1: invalid. Needs java and mvn.")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of faults (default 600)")
    parser.add_argument("--nemesis", default="mixed",
                        help=f"one of {', '.join(NEMESES)}, 'a+b' combinations, or 'mixed' (default: a "
                             "random one each time)")
    parser.add_argument("--workload", default="register", choices=WORKLOADS,
                        help="register: idempotent and transactional producers and two readers (default); "
                             "group: idempotent producers and subscribed consumers of both group protocols, "
                             "checked for poll-skip and nonmonotonic polls; append: list-append transactions "
                             "checked for G0/G1c cycles, aborted reads and torn transactions")
    parser.add_argument("--client-proxies", action="store_true",
                        help="clients reach the brokers through proxies too (needed by the partition-clients nemeses; "
                             "implied by them)")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--producers", type=int, default=2, help="idempotent producers (default 2)")
    parser.add_argument("--transactional", type=int, default=0,
                        help="register workload: transactional producers (default 0); append workload: "
                             "list-append transaction clients (at least 2), each writing its own partitions")
    parser.add_argument("--quiet", type=float, default=4.0, help="seconds between faults (default 4)")
    parser.add_argument("--fault", type=float, default=6.0, help="seconds a fault lasts (default 6)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the history and logs of a valid run too")
    parser.add_argument("--dir", type=Path, default=None, help="data directory (default: a temporary one)")
    args = parser.parse_args(argv)
    try:
        make_nemesis(args.nemesis, None, None, "", random.Random())  # type: ignore[arg-type]
    except ValueError as e:
        print(f"tests.fault.lab.jepsen: {e}", file=sys.stderr)
        return 2
    logging.getLogger("kazoo").setLevel(logging.ERROR)  # the harness's own ZooKeeper client, through restarts
    root = args.dir or Path(tempfile.mkdtemp(prefix="tidelog-jepsen-"))
    print(f"data in {root}; {args.duration:g} s of {args.nemesis} faults", flush=True)
    proxies = args.client_proxies or any(n in args.nemesis.split("+") for n in (*CLIENT_NEMESES, "mixed"))
    cluster, network = fault_cluster(root, client_proxies=proxies)
    try:
        result = run(cluster, network, args.nemesis, topic="jepsen", workload=args.workload, duration=args.duration,
                     partitions=args.partitions, producers=args.producers, transactional=args.transactional,
                     quiet_s=args.quiet, fault_s=args.fault, seed=args.seed, live=True, keep=args.keep)
    finally:
        cluster.stop()
        network.close()
    return 0 if result.verdict.valid else 1


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["CLIENT_NEMESES", "NEMESES", "OVERRIDES", "WORKLOADS", "RunResult", "fault_cluster", "make_clients", "make_nemesis", "run",
           "workload_checks"]
