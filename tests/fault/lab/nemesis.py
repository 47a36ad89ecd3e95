"""Nemeses for the fault tests (as in Jepsen): faults a schedule starts and heals while a workload runs.

:class:`ClusterNetwork` puts a :class:`~tests.fault.lab.tcp_proxy.ProxyNetwork` between the
processes of a :class:`~tidelog.testing.cluster.LocalCluster` before it starts: each broker reaches
ZooKeeper through its own proxy (``zookeeper.connect`` per broker), and followers fetch from a
leader through a proxy in front of the leader's ``REPLICATION`` listener (the inter-broker
listener, advertised at the proxy's port), while clients keep talking to the brokers' ``PLAINTEXT``
listeners directly -- or, with ``client_proxies=True``, through a proxy per broker too (the
``PLAINTEXT`` listener advertised at the proxy's port; every connection through it comes from the
node ``"clients"``, and its requests can be delayed by API key). Nodes are named ``"zk"``,
``"b<id>"`` and ``"clients"``.

A :class:`Nemesis` has ``start()`` (do the fault, return what it did) and ``heal()`` (undo it):

* :class:`Kill` -- kill -9 a broker (the partition's leader, or any), heal: start it again;
* :class:`Pause` -- SIGSTOP a broker, heal: SIGCONT;
* :class:`Isolate` -- cut a broker off from the other brokers and from ZooKeeper (``drop`` or
  ``blackhole``), heal: remove the cuts;
* :class:`PartitionClients` -- cut the clients off from a broker (the partition's leader) while
  the brokers and ZooKeeper still reach it (needs ``client_proxies``);
* :class:`PartitionBrokers` -- cut two brokers (a leader and a follower) off from each other, each
  still reaching ZooKeeper and the third broker;
* :class:`RestartZooKeeper` -- stop ZooKeeper (SIGTERM, or kill -9) and start it again on the same
  port and data directory (heal waits until it serves);
* :class:`Combined` -- several at once (started in order, healed in reverse).

:func:`run_schedule` alternates quiet and faulty periods until told to stop, logging each step.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

from tests.fault.lab.tcp_proxy import ProxyNetwork, TcpProxy, replica_fetcher_peer
from tidelog.cli.zookeeper import free_port
from tidelog.testing.cluster import LocalCluster

REPLICATION_LISTENER = "REPLICATION"
#: The node every connection through a client proxy comes from.
CLIENTS = "clients"


class ClusterNetwork:
    """Proxies between ZooKeeper and each broker and between brokers; call before ``cluster.start()``
    (starts ZooKeeper if it is not running: its port must be known)."""

    def __init__(self, cluster: LocalCluster, *, client_proxies: bool = False) -> None:
        self.cluster = cluster
        self.net = ProxyNetwork()
        self.clients: dict[int, TcpProxy] = {}
        if not cluster.zookeeper.alive:
            cluster.zookeeper.start()
        for i in range(1, cluster.count + 1):
            zk = self.net.proxy("zk", ("127.0.0.1", cluster.zookeeper.port), peer=node(i))
            replication_port = free_port()
            replication = self.net.proxy(node(i), ("127.0.0.1", replication_port), identify=replica_fetcher_peer)
            advertised = ""
            if client_proxies:  # the broker's PLAINTEXT port is known once it started (and kept on restarts)
                self.clients[i] = self.net.proxy(node(i), lambda i=i: ("127.0.0.1", cluster.brokers[i].port),
                                                 peer=CLIENTS, frames=True)
                advertised = f"PLAINTEXT://{self.clients[i].address},"
            cluster.per_broker.setdefault(i, {}).update({
                "zookeeper.connect": zk.address + cluster.chroot,
                "listeners": f"PLAINTEXT://127.0.0.1:0,{REPLICATION_LISTENER}://127.0.0.1:{replication_port}",
                "advertised.listeners": f"{advertised}{REPLICATION_LISTENER}://127.0.0.1:{replication.port}",
                "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,{REPLICATION_LISTENER}:PLAINTEXT",
                "inter.broker.listener.name": REPLICATION_LISTENER,
            })

    def nodes(self) -> list[str]:
        return ["zk", *(node(i) for i in range(1, self.cluster.count + 1))]

    def client_bootstrap(self) -> str:
        """``bootstrap.servers`` through the client proxies (the brokers' own addresses without them)."""
        if not self.clients:
            return self.cluster.bootstrap()
        return ",".join(proxy.address for proxy in self.clients.values())

    def isolate(self, broker_id: int, mode: str = "drop") -> None:
        me = node(broker_id)
        self.net.isolate(me, [n for n in self.nodes() if n != me], mode)

    def heal(self) -> None:
        self.net.heal()

    def close(self) -> None:
        self.net.close()


def node(broker_id: int) -> str:
    return f"b{broker_id}"


class Nemesis:
    """One fault: ``start()`` does it and says what it did, ``heal()`` undoes it (idempotent)."""

    name = "nemesis"

    def start(self) -> str:
        raise NotImplementedError

    def heal(self) -> str:
        raise NotImplementedError


class Quiet(Nemesis):
    """No fault at all: the control run (what the workload and checker see on a healthy cluster)."""

    name = "none"

    def start(self) -> str:
        return "no fault"

    def heal(self) -> str:
        return "nothing to heal"


class _BrokerNemesis(Nemesis):
    """A fault on one broker: the leader of ``topic``'s partition 0 (``target="leader"``) or a
    random live one."""

    def __init__(self, cluster: LocalCluster, *, topic: str | None = None, target: str = "leader",
                 rng: random.Random | None = None) -> None:
        self.cluster = cluster
        self.topic = topic
        self.target = target
        self.rng = rng or random.Random()
        self.victim: int | None = None

    def choose(self) -> int:
        alive = [i for i, b in self.cluster.brokers.items() if b.alive]
        if self.target == "leader" and self.topic is not None:
            try:
                leader = self.cluster.leader(self.topic, self.rng.randrange(self._partitions()))
                if leader in alive:
                    return leader
            except Exception:  # ZooKeeper may be down in a combined fault
                pass
        return self.rng.choice(alive)

    def _partitions(self) -> int:
        return len(self.cluster.assignment(self.topic)) if self.topic else 1


class Kill(_BrokerNemesis):
    name = "kill"

    def start(self) -> str:
        self.victim = self.choose()
        self.cluster.kill(self.victim)
        return f"kill -9 broker {self.victim}"

    def heal(self) -> str:
        if self.victim is None:
            return "nothing to restart"
        victim, self.victim = self.victim, None
        self.cluster.restart(victim)
        return f"restarted broker {victim}"


class Pause(_BrokerNemesis):
    name = "pause"

    def start(self) -> str:
        self.victim = self.choose()
        self.cluster.pause(self.victim)
        return f"SIGSTOP broker {self.victim}"

    def heal(self) -> str:
        if self.victim is None:
            return "nothing to resume"
        victim, self.victim = self.victim, None
        self.cluster.resume(victim)
        return f"SIGCONT broker {victim}"


class Isolate(_BrokerNemesis):
    name = "isolate"

    def __init__(self, cluster: LocalCluster, network: ClusterNetwork, *, mode: str = "drop", **kw) -> None:
        super().__init__(cluster, **kw)
        self.network = network
        self.mode = mode
        self.name = f"isolate-{mode}"

    def start(self) -> str:
        self.victim = self.choose()
        self.network.isolate(self.victim, self.mode)
        return f"cut broker {self.victim} off from ZooKeeper and the other brokers ({self.mode})"

    def heal(self) -> str:
        self.network.heal()
        victim, self.victim = self.victim, None
        return f"healed the network (broker {victim})"


class PartitionClients(_BrokerNemesis):
    """The clients lose a broker (``drop`` or ``blackhole``); the cluster does not."""

    def __init__(self, cluster: LocalCluster, network: ClusterNetwork, *, mode: str = "blackhole", **kw) -> None:
        super().__init__(cluster, **kw)
        if not network.clients:
            raise ValueError("partitioning the clients needs a ClusterNetwork with client_proxies=True")
        self.network = network
        self.mode = mode
        self.name = f"partition-clients-{mode}"

    def start(self) -> str:
        self.victim = self.choose()
        self.network.net.cut(CLIENTS, node(self.victim), self.mode)
        return f"cut the clients off from broker {self.victim} ({self.mode}); the brokers still reach it"

    def heal(self) -> str:
        self.network.heal()
        victim, self.victim = self.victim, None
        return f"healed the clients' path (broker {victim})"


class PartitionBrokers(_BrokerNemesis):
    """A leader and one of its followers lose each other; both keep ZooKeeper and the third broker."""

    def __init__(self, cluster: LocalCluster, network: ClusterNetwork, *, mode: str = "drop", **kw) -> None:
        super().__init__(cluster, **kw)
        self.network = network
        self.mode = mode
        self.name = f"partition-brokers-{mode}"
        self.pair: tuple[int, int] | None = None

    def start(self) -> str:
        a = self.choose()
        b = self.rng.choice([i for i, br in self.cluster.brokers.items() if br.alive and i != a])
        self.pair = (a, b)
        self.network.net.cut(node(a), node(b), self.mode)
        return f"cut brokers {a} and {b} off from each other ({self.mode}); ZooKeeper reaches both"

    def heal(self) -> str:
        self.network.heal()
        pair, self.pair = self.pair, None
        return f"healed the link between brokers {pair}"


class RestartZooKeeper(Nemesis):
    """ZooKeeper goes down (SIGTERM, or kill -9 with ``kill=True``); heal starts it again on the same
    port and data directory."""

    def __init__(self, cluster: LocalCluster, *, kill: bool = False) -> None:
        self.cluster = cluster
        self.kill = kill
        self.name = "zk-kill" if kill else "zk-stop"
        self.down = False

    def start(self) -> str:
        zk = self.cluster.zookeeper
        zk.kill() if self.kill else zk.stop()
        self.down = True
        return f"{'kill -9' if self.kill else 'stopped'} ZooKeeper"

    def heal(self) -> str:
        if not self.down:
            return "ZooKeeper is up"
        self.cluster.zookeeper.start()
        self.down = False
        return f"started ZooKeeper again on port {self.cluster.zookeeper.port}"


class Combined(Nemesis):
    def __init__(self, *parts: Nemesis) -> None:
        self.parts = parts
        self.name = "+".join(p.name for p in parts)

    def start(self) -> str:
        return "; ".join(p.start() for p in self.parts)

    def heal(self) -> str:
        return "; ".join(p.heal() for p in reversed(self.parts))


class Mixed(Nemesis):
    """A different fault each time: one of ``parts`` at random (for long soaks)."""

    def __init__(self, *parts: Nemesis, rng: random.Random | None = None) -> None:
        self.parts = parts
        self.rng = rng or random.Random()
        self.current: Nemesis | None = None
        self.name = "mixed"

    def start(self) -> str:
        self.current = self.rng.choice(self.parts)
        return f"[{self.current.name}] {self.current.start()}"

    def heal(self) -> str:
        current, self.current = self.current, None
        return current.heal() if current is not None else "nothing to heal"


def run_schedule(nemesis: Nemesis, stop: threading.Event, log: Callable[[str, str], None], *,
                 quiet_s: float = 3.0, fault_s: float = 5.0, rng: random.Random | None = None) -> None:
    """Until ``stop`` is set: quiet for ~``quiet_s``, fault for ~``fault_s`` (each +-30%), heal.
    ``log(phase, text)`` records each step (phase ``"start"``, ``"heal"``, or ``"error"`` when a
    fault could not be started). Always heals before returning."""
    rng = rng or random.Random()
    jitter = lambda s: s * rng.uniform(0.7, 1.3)  # noqa: E731
    started = False
    try:
        while not stop.wait(jitter(quiet_s)):
            started = True
            try:
                log("start", nemesis.start())
            except Exception as e:  # the fault could not be done (a broker too slow to start ...): heal, go on
                log("error", f"{nemesis.name} could not start: {e!r}"[:2000])
            stop.wait(jitter(fault_s))
            started = False
            log("heal", nemesis.heal())
    finally:
        if started:
            log("heal", nemesis.heal())


__all__ = ["CLIENTS", "ClusterNetwork", "Combined", "Isolate", "Kill", "Mixed", "Nemesis", "PartitionBrokers",
           "PartitionClients", "Pause", "Quiet", "RestartZooKeeper",
           "node", "run_schedule"]
