"""Nemeses that change the cluster rather than break it: membership changes under load, and a clock
that jumps on one broker.

* :class:`Membership` -- a fourth broker joins (a fresh data directory, registered in ZooKeeper),
  one partition of the topic is reassigned onto it (AlterPartitionReassignments, replacing one of
  its replicas, the leader when it can); heal: the partition is reassigned back, and once that
  completed the broker is shut down (SIGTERM, controlled shutdown) and leaves the cluster. So a
  reassignment with data moving, a broker added and a broker removed, while clients write.
* :class:`ClockJump` -- one broker's clocks jump forward by 30-120 s (libfaketime: the broker is
  restarted once with ``LD_PRELOAD`` and a timestamp file the nemesis rewrites). libfaketime must
  move the monotonic clock with the wall clock (with ``FAKETIME_DONT_FAKE_MONOTONIC`` Python's
  ``time.sleep`` fails with EINVAL), and a monotonic clock must not go back (asyncio's timers would
  stall), so the jumps only go forward and heal leaves the clock ahead: to the broker, every
  timeout (sessions, transactions, ISR lag, ZooKeeper pings) expires at once, and its record
  timestamps run ahead of the other brokers'. Needs ``apt-get install faketime``; :func:`faketime_library`
  says whether it is there.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import threading
from pathlib import Path

from tests.fault.lab.nemesis import REPLICATION_LISTENER, Nemesis, _BrokerNemesis
from tidelog.cli.zookeeper import free_port
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import AlterPartitionReassignmentsRequest
from tidelog.testing.broker import BrokerProcess
from tidelog.testing.client import WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

FAKETIME_PATHS = ("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                  "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1", "/usr/lib/faketime/libfaketimeMT.so.1")
_ENV_LOCK = threading.Lock()


def faketime_library() -> str | None:
    return next((p for p in FAKETIME_PATHS if Path(p).exists()), None)


def reassign(cluster: LocalCluster, topic: str, partition: int, replicas: list[int]) -> None:
    """AlterPartitionReassignments through any live broker; raises unless accepted."""
    R = AlterPartitionReassignmentsRequest
    request = R(timeout_ms=10_000, topics=[R.ReassignableTopic(name=topic, partitions=[
        R.ReassignablePartition(partition_index=partition, replicas=replicas)])])
    errors = []
    for broker in [b for b in cluster.brokers.values() if b.alive]:
        try:
            with WireClient.connect(broker.bootstrap, timeout=15) as client:
                response = client.request(request, 0)
        except OSError as e:
            errors.append(repr(e))
            continue
        code = response.error_code or response.responses[0].partitions[0].error_code
        if code == 0:
            return
        errors.append(ErrorCode(code).name)
    raise AssertionError(f"reassigning {topic}-{partition} to {replicas} was refused: {errors}")


class Membership(Nemesis):
    name = "membership"

    def __init__(self, cluster: LocalCluster, *, topic: str, rng: random.Random | None = None,
                 timeout: float = 90.0) -> None:
        self.cluster = cluster
        self.topic = topic
        self.rng = rng or random.Random()
        self.timeout = timeout
        self.new_id = (cluster.count if cluster is not None else 3) + 1
        self.moved: tuple[int, list[int]] | None = None
        self._dirs = itertools.count()

    def _done(self, partition: int, replicas: list[int]) -> bool:
        try:
            data = json.loads(self.cluster.zk.get(f"/brokers/topics/{self.topic}")[0])
            state = self.cluster.state(self.topic, partition)
        except Exception:  # ZooKeeper client between sessions
            return False
        return (data["partitions"][str(partition)] == replicas and not data.get("adding_replicas")
                and not data.get("removing_replicas") and sorted(state["isr"]) == sorted(replicas))

    def start(self) -> str:
        c, i = self.cluster, self.new_id
        replication = free_port()
        c.per_broker[i] = {
            "listeners": f"PLAINTEXT://127.0.0.1:0,{REPLICATION_LISTENER}://127.0.0.1:{replication}",
            "advertised.listeners": f"{REPLICATION_LISTENER}://127.0.0.1:{replication}",
            "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,{REPLICATION_LISTENER}:PLAINTEXT",
            "inter.broker.listener.name": REPLICATION_LISTENER}
        broker = BrokerProcess(c.root / f"broker-{i}-{next(self._dirs)}", overrides=c.broker_overrides(i),
                               start_timeout=90)
        c.brokers[i] = broker.start()
        wait_for(lambda: i in c.live_ids(), 30, what=f"broker {i} registered")
        partition = self.rng.randrange(len(c.assignment(self.topic)))
        before = list(c.assignment(self.topic)[partition])
        leader = c.state(self.topic, partition)["leader"]
        out = leader if leader in before else self.rng.choice(before)
        target = [r for r in before if r != out] + [i]
        reassign(c, self.topic, partition, target)
        self.moved = (partition, before)
        return f"broker {i} joined; {self.topic}-{partition} reassigned {before} -> {target}"

    def heal(self) -> str:
        c, i = self.cluster, self.new_id
        notes = []
        if self.moved is not None:
            partition, before = self.moved
            self.moved = None
            wait_for(lambda: self._done(partition, [r for r in c.assignment(self.topic)[partition]]), self.timeout,
                     what=f"the move of {self.topic}-{partition} to complete", interval=0.3)
            reassign(c, self.topic, partition, before)
            wait_for(lambda: self._done(partition, before), self.timeout,
                     what=f"{self.topic}-{partition} back on {before}", interval=0.3)
            notes.append(f"{self.topic}-{partition} reassigned back to {before}")
        broker = c.brokers.pop(i, None)
        if broker is not None:
            if broker.alive:
                broker.stop()
            c.per_broker.pop(i, None)
            notes.append(f"broker {i} shut down and left")
        return "; ".join(notes) or "nothing to undo"


class ClockJump(_BrokerNemesis):
    name = "clock-jump"

    def __init__(self, cluster: LocalCluster, *, root: Path, **kw) -> None:
        super().__init__(cluster, **kw)
        self.library = faketime_library()
        if self.library is None:
            raise ValueError("the clock-jump nemesis needs libfaketime (apt-get install faketime)")
        self.root = root
        #: broker -> (timestamp file, seconds ahead, pid of the process under libfaketime)
        self.under: dict[int, tuple[Path, float, int]] = {}

    def _restart_under_faketime(self, victim: int) -> Path:
        stamp = self.root / f"faketime-broker-{victim}"
        stamp.write_text("+0\n")
        env = {"LD_PRELOAD": self.library, "FAKETIME_TIMESTAMP_FILE": str(stamp), "FAKETIME_CACHE_DURATION": "1"}
        with _ENV_LOCK:
            saved = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            try:
                self.cluster.restart(victim)
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
        return stamp

    def start(self) -> str:
        victim = self.victim = self.choose()
        notes = []
        broker = self.cluster.brokers[victim]
        if victim not in self.under or broker.proc is None or broker.proc.pid != self.under[victim][2]:
            stamp = self._restart_under_faketime(victim)
            self.under[victim] = (stamp, 0.0, self.cluster.brokers[victim].proc.pid)
            notes.append(f"restarted broker {victim} under libfaketime")
        stamp, ahead, pid = self.under[victim]
        jump = round(self.rng.uniform(30, 120))
        ahead += jump
        stamp.write_text(f"+{ahead:g}\n")
        self.under[victim] = (stamp, ahead, pid)
        return "; ".join([*notes, f"broker {victim}'s clocks jumped {jump} s forward ({ahead:g} s ahead)"])

    def heal(self) -> str:
        victim, self.victim = self.victim, None
        if victim is None:
            return "no jump"
        return f"broker {victim}'s clocks stay {self.under[victim][1]:g} s ahead (a monotonic clock cannot go back)"


__all__ = ["ClockJump", "Membership", "faketime_library", "reassign"]
