"""What differs between a single node and a cluster, chosen once: :func:`broker_mode`.

A broker without ``zookeeper.connect`` is a single node (:class:`SingleNode`): its metadata and SCRAM
users are in its data dir, it leads every partition, it hands out producer-id blocks itself, and there
is nothing to replicate. With ``zookeeper.connect`` it is one broker of a cluster (:class:`ClusterMode`,
docs/cluster.md): the metadata is in ZooKeeper, followers fetch from leaders over the inter-broker
listener, ISR changes and leader elections are written to ZooKeeper, producer-id blocks come from
ZooKeeper's ``/latest_producer_id_block``, high watermarks are checkpointed, leadership moves on
request (ElectLeaders, ControlledShutdown at the controller, this broker's own on SIGTERM) and, with
``auto.leader.rebalance.enable``, back to the preferred replicas.

The composition root (:mod:`tidelog.server.broker`) asks the mode for each of these and never asks
which mode it is. A mode is built in two steps, because some of its parts need components the broker
builds from the first step's: the mode itself (store, credentials, replication settings) before the
logs and the replica manager; then :meth:`~ClusterMode.runtime` (high-watermark checkpoints,
controlled shutdown, the ControlledShutdown API, periodic jobs), with them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Collection
from pathlib import Path
from typing import Any, Protocol

from tidelog.clock import Clock
from tidelog.cluster.controller import Controller
from tidelog.cluster.credential_store import (
    CredentialStore,
    EmbeddedCredentialStore,
    ZooKeeperCredentialStore,
)
from tidelog.cluster.store import EmbeddedStore, MetadataStore
from tidelog.cluster.token_store import EmbeddedTokenStore, ZooKeeperTokenStore
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.config import BrokerConfig
from tidelog.coordinator.txn.inter_broker import InterBrokerClient
from tidelog.coordinator.txn.producer_ids import ProducerIdManager
from tidelog.listener import Listener
from tidelog.peer.client import PeerClient
from tidelog.replica.hw_checkpoint import HighWatermarkCheckpoints
from tidelog.replica.manager import ReplicaManager
from tidelog.replica.replication import ReplicationSettings
from tidelog.security.authorizer import Authorizer
from tidelog.server.controlled_shutdown import ControlledShutdown
from tidelog.server.controller_events import ControllerEventManager
from tidelog.server.handlers.leadership import ControlledShutdownHandler
from tidelog.server.inter_broker import inter_broker_listener_name, jaas_key, peer_settings
from tidelog.server.partition_controller import AlterPartitionState, ControllerDuties, PartitionController
from tidelog.storage.log_manager import LogManager

log = logging.getLogger(__name__)

#: (interval in ms, async job): what :class:`~tidelog.server.periodic.PeriodicJobs` runs
Job = tuple[float, Callable[[], Awaitable[None]]]


class ModeRuntime(Protocol):
    """The mode's parts that live with the logs and the replica manager."""

    def handlers(self, authorizer: Authorizer) -> tuple[object, ...]:
        """Handler objects only this mode serves."""
        ...

    async def load(self) -> None:
        """Once the metadata store is open and the logs are loaded."""
        ...

    def jobs(self) -> list[Job]:
        ...

    async def shut_down(self) -> None:
        """Before stopping, while clients are still served (a controlled shutdown)."""
        ...

    async def close_replication(self) -> None:
        ...

    async def checkpoint(self) -> None:
        """The last state to keep, before the logs close."""
        ...

    def close(self) -> None:
        """After the logs closed."""
        ...


class Mode(Protocol):
    store: MetadataStore
    credentials: CredentialStore
    #: delegation tokens (tidelog.cluster.token_store), read by every broker
    tokens: EmbeddedTokenStore | ZooKeeperTokenStore
    #: how the partition states the controller decides are written (first states, ElectLeaders ...)
    alter_partition_state: AlterPartitionState | None
    #: what the active controller carries out after each metadata change (elections after a broker loss,
    #: reassignment completion, topic deletion); None: a single node has no such duties
    controller_duties: ControllerDuties | None

    def replica_options(self) -> dict[str, Any]:
        """Keyword arguments of the :class:`~tidelog.replica.manager.ReplicaManager` for this mode."""
        ...

    def is_controller(self) -> bool: ...

    def producer_ids(self, controller: Controller) -> ProducerIdManager: ...

    def peer_client(self, replicas: ReplicaManager) -> InterBrokerClient | None:
        """The transaction coordinator's requests to other brokers (None: there are none)."""
        ...

    def prepare(self, loop: asyncio.AbstractEventLoop) -> set[str]:
        """At start, on the loop: read what the connections to other brokers need (PEM files);
        returns the JAAS keys they use (the others are reported as ignored)."""
        ...

    def runtime(self, logs: LogManager, replicas: ReplicaManager, leadership: PartitionController) -> ModeRuntime: ...


def broker_mode(config: BrokerConfig, listeners: tuple[Listener, ...], data_dir: Path, topic_configs: TopicConfigs,
                internal_topics: Collection[str], events: ControllerEventManager, clock: Clock) -> Mode:
    """A single node, or (``zookeeper.connect``) a broker of a cluster whose ZooKeeper callbacks go to
    the controller's event queue ``events``."""
    if config["zookeeper.connect"] is None:
        return SingleNode(data_dir)
    return ClusterMode(config, listeners, topic_configs, internal_topics, events, clock)


# ------------------------------------------------------------------------------------ single node


class SingleNode:
    """Metadata and SCRAM users in the data dir; this broker leads every partition (the first state of
    each new one is decided in the controller's queue and written to the data dir, as a cluster's)."""

    controller_duties = None

    def __init__(self, data_dir: Path) -> None:
        self.store = EmbeddedStore(data_dir)
        self.credentials = EmbeddedCredentialStore(data_dir)
        self.tokens: EmbeddedTokenStore | ZooKeeperTokenStore = EmbeddedTokenStore(data_dir)
        self.alter_partition_state: AlterPartitionState | None = self.store.alter_partition_state

    def replica_options(self) -> dict[str, Any]:
        return {}

    def is_controller(self) -> bool:
        return True

    def producer_ids(self, controller: Controller) -> ProducerIdManager:
        return ProducerIdManager(controller.allocate_producer_id_block)

    def peer_client(self, replicas: ReplicaManager) -> InterBrokerClient | None:
        return None

    def prepare(self, loop: asyncio.AbstractEventLoop) -> set[str]:
        return set()

    def runtime(self, logs: LogManager, replicas: ReplicaManager, leadership: PartitionController) -> ModeRuntime:
        return _SingleNodeRuntime()


class _SingleNodeRuntime:
    def handlers(self, authorizer: Authorizer) -> tuple[object, ...]:
        return ()  # ControlledShutdown: Kafka's ZooKeeper-era brokers served it; a single node (like KRaft) does not

    async def load(self) -> None:
        pass

    def jobs(self) -> list[Job]:
        return []

    async def shut_down(self) -> None:
        pass

    async def close_replication(self) -> None:
        pass

    async def checkpoint(self) -> None:
        pass

    def close(self) -> None:
        pass


# ----------------------------------------------------------------------------------------- cluster


class ClusterMode:
    """One broker of a cluster whose metadata is in ZooKeeper (see the module docstring)."""

    def __init__(self, config: BrokerConfig, listeners: tuple[Listener, ...], topic_configs: TopicConfigs,
                 internal_topics: Collection[str], events: ControllerEventManager, clock: Clock) -> None:
        from tidelog.cluster.zk_store import ZooKeeperSettings, ZooKeeperStore  # kazoo: only for a cluster

        self.config = config
        self.broker_id: int = config["broker.id"]
        settings = ZooKeeperSettings(config["zookeeper.connect"], config["zookeeper.session.timeout.ms"],
                                     config["zookeeper.connection.timeout.ms"],
                                     dict(config["listener.security.protocol.map"]), frozenset(internal_topics))
        # ZooKeeper's callbacks: this broker's own writes' answers to the loop, everything read to the queue
        self.store = store = ZooKeeperStore(settings, self.broker_id, events.dispatch_threadsafe,
                                            events.put_threadsafe)
        self.controller_duties: ControllerDuties | None = store
        # SCRAM users in /config/users, read from a cache (watched), never from ZooKeeper on the loop
        self.credentials = ZooKeeperCredentialStore(lambda: store.client)
        # delegation tokens in /delegation_token/tokens, read from a map kept current by watches
        self.tokens = ZooKeeperTokenStore(lambda: store.client)
        self.alter_partition_state = store.alter_partition_state
        listener = inter_broker_listener_name(config, listeners)
        # Connections to other brokers (peer clients) use the inter-broker listener's TLS/SASL
        # (server/inter_broker.py, tidelog.peer).
        self.peers = peer_settings(config, listener, lambda: store.image, clock)
        self.replication = ReplicationSettings(
            listener, config["replica.lag.time.max.ms"],
            config["replica.fetch.wait.max.ms"], config["replica.fetch.max.bytes"],
            config["replica.fetch.response.max.bytes"], config["replica.fetch.backoff.ms"],
            config["replica.socket.timeout.ms"], peers=self.peers)

    def replica_options(self) -> dict[str, Any]:
        """Followers fetch from leaders, leaders write ISR changes to ZooKeeper, the controller elects
        leaders (docs/cluster.md)."""
        return {"replication": self.replication, "alter_isr": self.store.alter_partition_state,
                "may_lead": self.store.may_lead}

    def is_controller(self) -> bool:
        return self.store.is_controller

    def producer_ids(self, controller: Controller) -> ProducerIdManager:
        from tidelog.cluster.zk_producer_id import allocate_producer_id_block

        store = self.store
        return ProducerIdManager(functools.partial(allocate_producer_id_block, lambda: store.client, self.broker_id))

    def peer_client(self, replicas: ReplicaManager) -> InterBrokerClient | None:
        """The transaction coordinator's requests to other brokers (markers, KIP-890 verification),
        sent to their inter-broker listener, as followers' fetches are."""
        return InterBrokerClient(self.broker_id, self.peers)

    def prepare(self, loop: asyncio.AbstractEventLoop) -> set[str]:
        security = self.peers.prepare()  # reads PEM files
        log.info("connections to other brokers: %s", security.describe())
        return {jaas_key(security.listener, security.mechanism)} if security.mechanism else set()

    def runtime(self, logs: LogManager, replicas: ReplicaManager, leadership: PartitionController) -> ModeRuntime:
        return _ClusterRuntime(self, logs, replicas, leadership)


class _ClusterRuntime:
    """High watermarks survive restarts (replication-offset-checkpoint); leadership moves on request
    (ElectLeaders anywhere, ControlledShutdown at the controller, and this broker's own on SIGTERM)."""

    def __init__(self, mode: ClusterMode, logs: LogManager, replicas: ReplicaManager,
                 leadership: PartitionController) -> None:
        config = mode.config
        self.config = config
        self.credentials = mode.credentials
        self.tokens = mode.tokens
        self.replicas = replicas
        self.leadership = leadership
        self.hw_checkpoints = HighWatermarkCheckpoints(logs)
        self.controlled_shutdown = (ControlledShutdown(
            mode.broker_id, lambda: mode.store.image, leadership,
            PeerClient(mode.peers, f"broker-{mode.broker_id}-controlled-shutdown"), mode.peers.clock,
            max_retries=config["controlled.shutdown.max.retries"],
            backoff_ms=config["controlled.shutdown.retry.backoff.ms"],
            timeout_ms=config["replica.socket.timeout.ms"])
            if config["controlled.shutdown.enable"] else None)

    def handlers(self, authorizer: Authorizer) -> tuple[object, ...]:
        return (ControlledShutdownHandler(self.leadership, authorizer),)

    async def load(self) -> None:
        self.credentials.watch()  # SCRAM lookups from a cache, never from ZooKeeper on the loop
        if self.config["delegation.token.secret.key"]:  # as Kafka, the token paths only with tokens enabled
            self.tokens.watch()
        lowered = self.hw_checkpoints.restore()
        if lowered:
            log.info("%d high watermarks restored from replication-offset-checkpoint", lowered)

    def jobs(self) -> list[Job]:
        config = self.config
        jobs: list[Job] = [(config["replica.high.watermark.checkpoint.interval.ms"], self.checkpoint)]
        if config["auto.leader.rebalance.enable"]:
            jobs.append((config["leader.imbalance.check.interval.seconds"] * 1000, self._rebalance_leaders))
        return jobs

    async def _rebalance_leaders(self) -> None:
        await self.leadership.rebalance(self.config["leader.imbalance.per.broker.percentage"])

    async def shut_down(self) -> None:
        if self.controlled_shutdown is not None:  # clients are still served meanwhile
            await self.controlled_shutdown.run()

    async def close_replication(self) -> None:
        assert self.replicas.replication is not None
        await self.replicas.replication.close()

    async def checkpoint(self) -> None:
        snapshot = self.hw_checkpoints.snapshot()
        await asyncio.get_running_loop().run_in_executor(None, self.hw_checkpoints.write, snapshot)

    def close(self) -> None:
        self.credentials.close()
        self.tokens.close()


__all__ = ["ClusterMode", "Mode", "ModeRuntime", "SingleNode", "broker_mode"]
