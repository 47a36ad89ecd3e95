"""The composition root: every component of the broker, built and wired here, at construction.

Construction reads and writes nothing: it builds the components and connects them. Then
:meth:`Broker.start`, in Kafka's order of safety: bind every listener (not serving yet: a taken port
is reported before any data is read), check and lock every log dir (a second broker on the same
data directory stops here, having read nothing), open the metadata store, open (and if needed
recover) every log off the event loop and log what recovery did, bring the logs in line with the
metadata, load the group and transaction coordinators, start housekeeping, then start serving.
:meth:`Broker.stop` (SIGINT/SIGTERM): stop accepting, close connections, release waiting requests,
flush and checkpoint every log and write the clean-shutdown marker (the next start skips recovery).

How things flow (docs/architecture.md draws it):

* requests: :class:`~tidelog.server.network.SocketServer` -> :class:`~tidelog.server.dispatcher.HandlerRegistry`
  -> a handler object, built here with exactly the components it uses;
* partition data, for clients and coordinators alike, goes through the
  :class:`~tidelog.replica.manager.ReplicaManager`;
* metadata changes: the controller publishes through the store; the store's subscribers (the replica
  manager, the group coordinator's clean-up) react;
* log events (created, appended, truncated, deleted): :class:`~tidelog.replica.events.LogEvents`,
  heard by the delayed-fetch purgatory and the housekeeping (later: replication, transactions, metrics);
* TubeMQ clients (when ``tubemq.*.listener`` are set): :class:`~tidelog.server.tubemq.TubeServer`, the
  TubeMQ front end with its own listeners and registries, onto the same replica manager and group
  coordinator (docs/tubemq.md).

Loop-only, except the storage work it hands to the default executor.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tidelog import __version__
from tidelog.clock import Clock, SystemClock
from tidelog.cluster.config_entries import ConfigDescriber
from tidelog.cluster.controller import Controller, NewTopic
from tidelog.cluster.credential_store import (
    CredentialStore,
    EmbeddedCredentialStore,
    ZooKeeperCredentialStore,
)
from tidelog.cluster.metadata import BrokerInfo, MetadataImage, TopicMetadata
from tidelog.cluster.store import EmbeddedStore, MetadataStore
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.cluster.tubemq_secret_store import TubeSecretStore
from tidelog.config import BrokerConfig
from tidelog.coordinator.group import OFFSETS_TOPIC, GroupConfig, GroupCoordinator
from tidelog.coordinator.group.modern.consumer.group_type import ConsumerGroupType
from tidelog.coordinator.group.modern.consumer.manager import ConsumerGroupCoordinator
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.coordinator.leadership import follow_leadership
from tidelog.coordinator.runtime import ReplicaWriter
from tidelog.coordinator.txn import TRANSACTION_STATE_TOPIC, TransactionCoordinator, TxnConfig
from tidelog.coordinator.txn.inter_broker import InterBrokerClient
from tidelog.coordinator.txn.marker_writer import TxnMarkerWriter
from tidelog.coordinator.txn.producer_ids import ProducerIdManager
from tidelog.coordinator.txn.service import TransactionCoordinatorService
from tidelog.listener import NON_ROUTABLE_HOSTS, Listener
from tidelog.meter import PartitionTraffic, RequestTimes, SyncHistogram
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.replica.events import LogEvents
from tidelog.replica.housekeeping import LogHousekeeping
from tidelog.replica.hw_checkpoint import HighWatermarkCheckpoints
from tidelog.replica.manager import ReplicaManager
from tidelog.replica.replication import ReplicationSettings
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.controlled_shutdown import ControlledShutdown
from tidelog.server.dispatcher import HandlerRegistry
from tidelog.server.fetch_session import FetchSessionCache
from tidelog.server.handlers import (
    AclHandlers,
    ApiVersionsHandler,
    ClusterInfoHandlers,
    ConfigHandlers,
    ConsumerGroupHandlers,
    DeleteRecordsHandler,
    DescribeTopicPartitionsHandler,
    FetchHandler,
    FindCoordinatorHandler,
    GroupHandlers,
    InitProducerIdHandler,
    ListOffsetsHandler,
    MetadataHandler,
    OffsetForLeaderEpochHandler,
    OffsetHandlers,
    ProduceHandler,
    TopicHandlers,
    TransactionHandlers,
    TxnOffsetCommitHandler,
    TxnPartitionHandlers,
)
from tidelog.server.handlers.client_quotas import ClientQuotaHandlers
from tidelog.server.handlers.leadership import ControlledShutdownHandler, ElectLeadersHandler
from tidelog.server.handlers.reassignment import ReassignmentHandlers
from tidelog.server.handlers.sasl import SaslHandlers
from tidelog.server.handlers.scram_credentials import ScramCredentialHandlers
from tidelog.server.inter_broker import inter_broker_listener_name, jaas_key, peer_settings
from tidelog.server.internal_client import InternalClient
from tidelog.server.leadership import LeadershipChanges
from tidelog.server.network import ConnectionSettings, ListenerError, SocketServer
from tidelog.server.periodic import PeriodicJobs
from tidelog.server.quota import ClientQuotaManagers
from tidelog.server.throttle import RequestThrottler
from tidelog.server.tls import ListenerSecurity, ignored_listener_keys, listener_security
from tidelog.server.txn_verification import TransactionVerifier
from tidelog.storage.log_manager import LogManager

# Imported where they are used, only when configured: a broker without an HTTP listener, TubeMQ or
# ZooKeeper starts without loading aiohttp, prometheus_client, protobuf or kazoo (bench/startup.py).
if TYPE_CHECKING:
    from tidelog.server.tubemq import TubeServer
    from tidelog.web.console import Console
    from tidelog.web.server import HttpServer

log = logging.getLogger(__name__)


def advertised_endpoint(listener: Listener, advertised: tuple[Listener, ...], bound_port: int) -> tuple[str, int]:
    """Where clients are told to connect for ``listener``: its advertised.listeners entry if any,
    else its own address; an empty or 0.0.0.0 host becomes this machine's host name, as in Kafka."""
    chosen = next((a for a in advertised if a.name == listener.name), None)
    host, port = (chosen.host, chosen.port) if chosen else (listener.host, bound_port)
    if host in ("", *NON_ROUTABLE_HOSTS):
        host = socket.getfqdn()
    return host, port or bound_port


class _LoopHandoff:
    """Hands a callback from another thread (the ZooKeeper client's) to the broker's event loop,
    which is known once the broker starts."""

    loop: asyncio.AbstractEventLoop | None = None

    def __call__(self, fn: Callable[[], None]) -> None:
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(fn)


def _metadata_store(config: BrokerConfig, data_dir: Path, handoff: _LoopHandoff) -> MetadataStore:
    """A single node keeps its metadata in its data dir; a cluster (zookeeper.connect) in ZooKeeper."""
    if config["zookeeper.connect"] is None:
        return EmbeddedStore(data_dir)
    from tidelog.cluster.zk_store import ZooKeeperSettings, ZooKeeperStore

    settings = ZooKeeperSettings(config["zookeeper.connect"], config["zookeeper.session.timeout.ms"],
                                 config["zookeeper.connection.timeout.ms"],
                                 dict(config["listener.security.protocol.map"]))
    return ZooKeeperStore(settings, config["broker.id"], handoff)


def _credential_store(config: BrokerConfig, store: MetadataStore, data_dir: Path) -> CredentialStore:
    """SCRAM credentials: beside the metadata, in the data dir or in ZooKeeper (``/config/users``)."""
    if _clustered(store):
        return ZooKeeperCredentialStore(lambda: store.client)  # type: ignore[attr-defined]
    return EmbeddedCredentialStore(data_dir)


def _clustered(store: MetadataStore) -> bool:
    """Cluster mode: the metadata is in ZooKeeper (a ZooKeeperStore), not in the data dir."""
    return not isinstance(store, EmbeddedStore)


def _call_later(delay_ms: float, fn: Callable[[], None]) -> Any:
    """Timers for components built before the event loop runs: the loop is looked up when needed."""
    return asyncio.get_running_loop().call_later(delay_ms / 1000, fn)


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock | None = None, *, use_sendfile: bool | None = None) -> None:
        self.config = config
        self.clock = clock = clock or SystemClock()
        self.broker_id: int = config["broker.id"]
        self.listeners: tuple[Listener, ...] = config["listeners"]
        self.log_dirs = [Path(d) for d in config["log.dirs"]]

        # Metadata and storage.
        self._handoff = _LoopHandoff()
        self.store = store = _metadata_store(config, self.log_dirs[0], self._handoff)
        self.peers: PeerSettings | None = None  # cluster mode (how to reach the other brokers): set by _replication
        self.topic_configs = topic_configs = TopicConfigs(config.topic_defaults)
        self.logs = logs = LogManager(
            self.log_dirs, clock, topic_config=lambda topic: topic_configs.for_topic(store.image, topic),
            producer_id_expiration_ms=config["producer.id.expiration.ms"])
        self.controller = controller = Controller(store, self.broker_id, topic_configs, config)

        # The partitions this broker hosts, and what happens to their logs.
        self.events = events = LogEvents()
        self.replicas = replicas = ReplicaManager(self.broker_id, logs, store, topic_configs, clock, _call_later, events,
                                                  **self._replication(config, store, topic_configs))
        self.housekeeping = LogHousekeeping(logs, clock, events)
        # Cluster mode: high watermarks survive restarts (replication-offset-checkpoint); leadership moves on
        # request (ElectLeaders anywhere, ControlledShutdown at the controller, and this broker's own on SIGTERM).
        clustered = _clustered(store)
        self.hw_checkpoints = HighWatermarkCheckpoints(logs) if clustered else None
        self.leadership = leadership = LeadershipChanges(
            store, store.alter_partition_state if clustered else None,
            (lambda: store.is_controller) if clustered else (lambda: True))
        store.subscribe(leadership.forget_departed)
        self.controlled_shutdown = (ControlledShutdown(
            self.broker_id, lambda: store.image, leadership,
            PeerClient(self.peers, f"broker-{self.broker_id}-controlled-shutdown") if self.peers is not None else None,
            max_retries=config["controlled.shutdown.max.retries"],
            backoff_ms=config["controlled.shutdown.retry.backoff.ms"],
            timeout_ms=config["replica.socket.timeout.ms"])
            if clustered and config["controlled.shutdown.enable"] else None)

        # Coordinators.
        offsets_topic = NewTopic(
            OFFSETS_TOPIC, config["offsets.topic.num.partitions"], config["offsets.topic.replication.factor"],
            {"cleanup.policy": "compact", "compression.type": "producer",
             "segment.bytes": str(config["offsets.topic.segment.bytes"])},
            internal=True)
        self.ensure_offsets_topic = lambda: controller.ensure_topic(offsets_topic)
        self.group_coordinator = groups = GroupCoordinator(
            GroupConfig.from_broker_config(config), clock, ReplicaWriter(replicas, OFFSETS_TOPIC, self.ensure_offsets_topic),
            _call_later, group_types=[ConsumerGroupType], image_source=lambda: store.image,
            topic_exists=lambda name: name in store.image.topics)
        self.group_service = group_service = GroupCoordinatorService(groups)
        consumer_groups = group_service.consumer_groups
        assert consumer_groups is not None
        if clustered:
            from tidelog.cluster.zk_producer_id import allocate_producer_id_block

            self.producer_ids = ProducerIdManager(
                functools.partial(allocate_producer_id_block, lambda: store.client, self.broker_id))
        else:
            self.producer_ids = ProducerIdManager(controller.allocate_producer_id_block)
        inter_broker = self._inter_broker_client()
        self.marker_writer = TxnMarkerWriter(replicas, {OFFSETS_TOPIC: groups.complete_transaction}, inter_broker)
        self.transactions = transactions = TransactionCoordinator(
            TxnConfig.from_broker_config(config), clock,
            ReplicaWriter(replicas, TRANSACTION_STATE_TOPIC, self.ensure_transaction_topic),
            self.producer_ids.next_producer_id, self.marker_writer.send, _call_later,
            coordinator_epoch=self._transaction_coordinator_epoch, confirm_marker=self.marker_writer.confirm)
        txn_service = TransactionCoordinatorService(transactions)
        self.verifier = verifier = TransactionVerifier(
            transactions, replicas, clock, enabled=config["transaction.partition.verification.enable"],
            retry_backoff_ms=config["add.partitions.to.txn.retry.backoff.ms"],
            retry_backoff_max_ms=config["add.partitions.to.txn.retry.backoff.max.ms"], remote=inter_broker)
        # Security: SCRAM credentials (users), and each listener's TLS and SASL (docs/security.md).
        self.credentials = credentials = _credential_store(config, store, self.log_dirs[0])
        self.listener_security: dict[str, ListenerSecurity] = {}  # filled at start: reads the PEM files
        self.fetch_sessions = FetchSessionCache(config["max.incremental.fetch.session.cache.slots"], clock)
        store.subscribe(self._after_metadata_change)

        # Authorization (authorizer.class.name): every handler asks this one object, which reads the ACLs
        # of the current metadata image.
        self.authorizer = auth = (
            Authorizer(lambda: store.image.acls, config["super.users"], config["allow.everyone.if.no.acl.found"])
            if config["authorizer.class.name"] else NO_AUTHORIZER)

        # The front end: one handler object per API family, each with what it uses.
        describer = ConfigDescriber(config, topic_configs)
        self.handlers = handlers = HandlerRegistry()
        handlers.add(
            ApiVersionsHandler(handlers, {"transaction.version": (2, config["transaction.version"])}),
            MetadataHandler(store, controller, config, auth),
            DescribeTopicPartitionsHandler(store, auth),
            ProduceHandler(replicas, verifier, auth),
            FetchHandler(replicas, self.fetch_sessions, auth),
            ListOffsetsHandler(replicas, auth),
            OffsetForLeaderEpochHandler(replicas, auth),
            DeleteRecordsHandler(replicas, auth),
            TopicHandlers(controller, config, describer, auth),
            ConfigHandlers(controller, describer, self.broker_id, auth),
            ClusterInfoHandlers(store, replicas.local_logs, auth),
            FindCoordinatorHandler(store, group_service, self.ensure_offsets_topic, txn_service,
                                   self.ensure_transaction_topic, auth),
            GroupHandlers(group_service, auth),
            OffsetHandlers(group_service, store, auth),
            ConsumerGroupHandlers(group_service, store, config["group.coordinator.rebalance.protocols"], auth),
            InitProducerIdHandler(self.producer_ids, txn_service, auth),
            TransactionHandlers(txn_service, group_service, replicas, auth),
            TxnOffsetCommitHandler(group_service, replicas, verifier, self.ensure_offsets_topic, auth),
            TxnPartitionHandlers(self.marker_writer, replicas, auth),
            AclHandlers(controller, auth),
            SaslHandlers(config["sasl.enabled.mechanisms"]),
            ScramCredentialHandlers(credentials, auth),
            ClientQuotaHandlers(store, controller, auth),
            ElectLeadersHandler(leadership, auth),
            ReassignmentHandlers(store, auth),
        )
        if clustered:  # Kafka's ZooKeeper-era brokers served it; a single node (like KRaft brokers) does not
            handlers.add(ControlledShutdownHandler(leadership, auth))
        # Client quotas (docs/security.md "Quotas"): measured and enforced around every handler.
        self.client_quotas = ClientQuotaManagers(config["quota.window.num"], config["quota.window.size.seconds"])
        store.subscribe(lambda _old, new: self.client_quotas.update(new.client_quotas))
        handlers.set_throttler(RequestThrottler(self.client_quotas, clock))
        settings = ConnectionSettings(config["socket.request.max.bytes"], config["queued.max.requests"],
                                      config["connections.max.idle.ms"])
        self.network = SocketServer(handlers, clock, settings, use_sendfile, self.listener_security)
        # The TubeMQ front end, when its listeners are configured (docs/tubemq.md).
        self.tubemq = (self._tubemq_front_end(replicas, groups, consumer_groups, settings)
                       if config["tubemq.master.listener"] is not None else None)

        # The HTTP listener: health checks, and (plugged in here) metrics and the web console.
        http_endpoint = config["metrics.listener"]
        self.http: HttpServer | None = None
        if http_endpoint is not None:
            from tidelog.web.server import HttpServer

            self.http = HttpServer(*http_endpoint, ready=self._not_ready_reason)
        # The web console and its JSON API: Kafka requests to the handlers above, made in-process (docs/console.md).
        self.console: Console | None = None
        if self.http is not None and config["console.enable"]:
            from tidelog.web.console import Console

            self.console = Console(replicas, InternalClient(handlers).send, clock, groups=groups,
                                   broker_id=self.broker_id,
                                   read_only=config["console.read.only"],
                                   sample_interval_ms=config["console.sample.interval.ms"],
                                   authentication=config["console.authentication"] or (
                                       "sasl" if config["authorizer.class.name"] else "none"),
                                   lookup=credentials.get, session_ms=config["connections.max.reauth.ms"])
            self.console.install(self.http.app)
        self._serving = False
        self.startup_reports: list = []
        # Metrics (GET /metrics) only with an HTTP listener: otherwise nothing is measured at all.
        self.metrics = self._metrics(self.http) if self.http is not None else None

        self.periodic = PeriodicJobs()
        self._loaded = False
        self.stopped = asyncio.Event()

    def _replication(self, config: BrokerConfig, store: MetadataStore, topic_configs: TopicConfigs) -> dict[str, Any]:
        """Cluster mode: followers fetch from leaders, ISR changes are written to ZooKeeper by the
        leaders, the controller elects leaders (docs/cluster.md). A single node: nothing."""
        if not _clustered(store):
            return {}
        store.unclean_election = lambda image, topic: topic_configs.for_topic(image, topic).unclean_leader_election_enable
        listener = inter_broker_listener_name(config, self.listeners)
        # Connections to other brokers use the inter-broker listener's TLS/SASL (server/inter_broker.py).
        self.peers = peer_settings(config, listener, lambda: store.image, self.clock)
        settings = ReplicationSettings(
            listener, config["replica.lag.time.max.ms"],
            config["replica.fetch.wait.max.ms"], config["replica.fetch.max.bytes"],
            config["replica.fetch.response.max.bytes"], config["replica.fetch.backoff.ms"],
            config["replica.socket.timeout.ms"], peers=self.peers)
        return {"replication": settings, "alter_isr": store.alter_partition_state, "may_lead": store.may_lead}

    def _inter_broker_client(self) -> InterBrokerClient | None:
        """Cluster mode: the transaction coordinator's requests to other brokers (markers, KIP-890
        verification), sent to their inter-broker listener, as followers' fetches are."""
        return None if self.peers is None else InterBrokerClient(self.broker_id, self.peers)

    def _metrics(self, http: HttpServer):
        """The hot-path meters, handed to the components that update them, and the broker's own
        Prometheus registry that reads them (docs/metrics.md)."""
        from tidelog.web.metrics import BrokerSources, IsrChanges, metrics_registry, metrics_routes

        traffic = self.replicas.traffic = PartitionTraffic()
        self.events.on_deleted(traffic.forget)
        request_times = self.network.request_times = RequestTimes()
        flush_latency = self.logs.flush_latency = SyncHistogram()
        isr_changes = IsrChanges(self.broker_id)
        self.store.subscribe(isr_changes)
        self.metrics_sources = BrokerSources(
            self.broker_id, self.store, self.replicas, self.group_coordinator, self.transactions,
            traffic, request_times, flush_latency, isr_changes,
            connections=lambda: Counter(c.listener_name for c in self.network.connections),
            startup_reports=lambda: self.startup_reports,
            failed_authentications=lambda: self.network.failed_authentications)
        registry = metrics_registry(self.metrics_sources)
        http.add_routes(metrics_routes(registry))
        return registry

    def ensure_transaction_topic(self) -> object:
        """``__transaction_state``, created on first use with Kafka's configs (compacted, uncompressed,
        no unclean election); its replication factor and min.insync.replicas are capped at the number
        of brokers (Kafka would instead refuse to create it, or refuse every write)."""
        config = self.config
        brokers = max(1, len(self.store.image.brokers))
        rf = min(config["transaction.state.log.replication.factor"], brokers)
        return self.controller.ensure_topic(NewTopic(
            TRANSACTION_STATE_TOPIC, config["transaction.state.log.num.partitions"], rf,
            {"cleanup.policy": "compact", "compression.type": "uncompressed", "unclean.leader.election.enable": "false",
             "min.insync.replicas": str(min(config["transaction.state.log.min.isr"], rf)),
             "segment.bytes": str(config["transaction.state.log.segment.bytes"])},
            internal=True))

    def _transaction_coordinator_epoch(self, partition: int) -> int:
        """A ``__transaction_state`` partition's leader epoch (0 before the topic exists)."""
        topic = self.store.image.topics.get(TRANSACTION_STATE_TOPIC)
        if topic is None or partition >= len(topic.partitions):
            return 0
        return topic.partitions[partition].leader_epoch

    def _tubemq_front_end(self, replicas: ReplicaManager, groups: GroupCoordinator,
                          consumer_groups: ConsumerGroupCoordinator, settings: ConnectionSettings) -> TubeServer:
        """TubeMQ's master service (producer metadata; consumers balanced as KIP-848 group members) and
        broker service (send, register, get, commit), each on its own listener and registry."""
        from tidelog.protocol.tubemq.notation import BrokerAddress
        from tidelog.protocol.tubemq.rpc import Service
        from tidelog.server.tubemq import (
            ConsumerService,
            MasterService,
            ProducerService,
            TubeAuthenticator,
            TubeBalancer,
            TubeHandlerRegistry,
            TubeListener,
            TubeOffsets,
            TubeServer,
        )

        def broker_address() -> BrokerAddress:
            assert self.tubemq is not None
            host, port = self.tubemq.advertised("broker", self.config["tubemq.broker.advertised.listener"])
            return BrokerAddress(self.broker_id, host, port)

        balancer = TubeBalancer(self.group_service, self.store, self.clock, broker_address)
        consumers = ConsumerService(replicas, balancer, TubeOffsets(self.group_service))
        # tubemq.authentication.enable: clients sign with their TubeMQ secret (docs/security.md).
        authenticator = (TubeAuthenticator(TubeSecretStore(self.log_dirs[0]).get, self.clock.wall_ms)
                         if self.config["tubemq.authentication.enable"] else None)
        master = TubeHandlerRegistry("master", frozenset({Service.MASTER}))
        master.add(MasterService(self.store, self.topic_configs, balancer, consumers, broker_address, authenticator))
        broker = TubeHandlerRegistry("broker", frozenset({Service.BROKER_READ, Service.BROKER_WRITE}))
        broker.add(ProducerService(replicas, self.clock, authenticator), consumers)
        (master_host, master_port), (broker_host, broker_port) = (self.config["tubemq.master.listener"],
                                                                  self.config["tubemq.broker.listener"])
        return TubeServer((TubeListener(master, master_host, master_port), TubeListener(broker, broker_host, broker_port)),
                          self.clock, settings)

    @property
    def host(self) -> str:
        return self.listeners[0].host

    @property
    def port(self) -> int:
        """The first listener's port (the bound one, once started)."""
        bound = self.network.bound.get(self.listeners[0].name)
        return bound[1] if bound else self.listeners[0].port

    @property
    def ports(self) -> dict[str, Any]:
        """Every port this broker opened (once started), as ``tidelog serve`` prints it in its
        ``tidelog ports: {...}`` line: ``kafka`` (the first listener), ``listeners`` (name -> port),
        ``http`` (metrics.listener: console, metrics, health) and ``tubemq.master``/``tubemq.broker``
        when those are configured."""
        out: dict[str, Any] = {"kafka": self.port,
                               "listeners": {name: port for name, (_, port) in self.network.bound.items()}}
        if self.http is not None and self.http.bound is not None:
            out["http"] = self.http.bound[1]
        if self.tubemq is not None:
            out.update({f"tubemq.{name}": port for name, (_, port) in self.tubemq.bound.items()})
        return out

    # ---------------------------------------------------------------------------------- start

    async def start(self) -> None:
        for key in self.config.unknown:
            log.warning("%s", self.config.describe_unknown(key))
        inter_broker = self.peers.prepare() if self.peers is not None else None  # reads PEM files
        used = {jaas_key(inter_broker.listener, inter_broker.mechanism)} if inter_broker and inter_broker.mechanism else set()
        for reason in ignored_listener_keys(self.config, used):
            log.warning("%s", reason)
        self._handoff.loop = asyncio.get_running_loop()
        self.listener_security.update({listener.name: listener_security(self.config, listener, self.credentials)
                                       for listener in self.listeners})
        if inter_broker is not None:
            log.info("connections to other brokers: %s", inter_broker.describe())
        await self.network.bind(self.listeners)
        try:
            if self.tubemq is not None:
                await self.tubemq.bind()
            if self.http is not None:  # early: /readyz answers "not ready" while the logs load
                try:
                    await self.http.start()
                except OSError as e:
                    raise ListenerError(e.strerror or str(e)) from e
            await self._load()
        except BaseException:
            if self.http is not None:
                await self.http.stop()
            self.network.close()
            if self.tubemq is not None:
                self.tubemq.close()
            self.store.close()
            self.logs.release_dirs()
            raise
        self._start_housekeeping()
        await self.network.start_serving()
        self._serving = True
        if self.tubemq is not None:
            await self.tubemq.start_serving()
            for name, (host, port) in self.tubemq.bound.items():
                log.info("TubeMQ %s service listening on %s:%d", name, host or "0.0.0.0", port)
        log.info(
            "tidelog %s broker %d (cluster %s) listening on %s, data in %s",
            __version__, self.broker_id, self.store.image.cluster_id,
            ", ".join(f"{name}://{host or '0.0.0.0'}:{port}" for name, (host, port) in self.network.bound.items()),
            ", ".join(str(d) for d in self.log_dirs),
        )
        if self.http is not None:
            log.info("console, metrics and health checks on %s", self.http.url)

    async def _load(self) -> None:
        self.logs.lock_dirs()
        advertised = self.config["advertised.listeners"]
        endpoints = tuple(
            (listener.name, *advertised_endpoint(listener, advertised, self.network.bound[listener.name][1]))
            for listener in self.listeners
        )
        _, host, port = endpoints[0]
        self.store.open(BrokerInfo(self.broker_id, host, port, self.config["broker.rack"], endpoints))
        if isinstance(self.credentials, ZooKeeperCredentialStore):
            self.credentials.watch()  # SCRAM lookups from a cache, never from ZooKeeper on the loop
        self.client_quotas.update(self.store.image.client_quotas)
        reports = await asyncio.get_running_loop().run_in_executor(None, self.logs.startup)
        self.startup_reports = reports
        if self.hw_checkpoints is not None:
            lowered = self.hw_checkpoints.restore()
            if lowered:
                log.info("%d high watermarks restored from replication-offset-checkpoint", lowered)
        self._loaded = True
        for report in reports:
            for line in report.describe():
                (log.warning if report.truncated else log.info)("%s", line)
        self.replicas.start()
        self.housekeeping.schedule_purge()  # leftovers of deletions a crash interrupted
        # The coordinators load the partitions of their topic this broker leads (a single node: all).
        offsets = self.store.image.topics.get(OFFSETS_TOPIC)
        if offsets is None:
            self.group_coordinator.load(())
        else:
            self.group_coordinator.load(self._led_partitions(offsets), num_partitions=len(offsets.partitions))
        txn_state = self.store.image.topics.get(TRANSACTION_STATE_TOPIC)
        if txn_state is None:  # created on first use: every partition starts empty
            self.transactions.load(range(self.config["transaction.state.log.num.partitions"]), read=False)
        else:
            self.transactions.load(self._led_partitions(txn_state), num_partitions=len(txn_state.partitions))

    def _not_ready_reason(self) -> str | None:
        """/readyz: ready once the logs are loaded and the Kafka listeners accept connections."""
        if not self._loaded:
            return "loading logs"
        if not self._serving:
            return "listeners not open yet"
        failing = self.logs.full_dirs()
        if failing:  # reads, deletes and retention still work; writes answer KAFKA_STORAGE_ERROR
            return "; ".join(filter(None, (space.status() for space in failing))) + (
                ": writes fail with KAFKA_STORAGE_ERROR until space is freed")
        return None

    def _led_partitions(self, topic: TopicMetadata) -> list[int]:
        return [p.partition for p in topic.partitions if p.leader == self.broker_id]

    def _start_housekeeping(self) -> None:
        jobs = [
            (1000, self.housekeeping.flush_by_time),
            (1000, self._check_disk_space),
            (self.config["log.flush.offset.checkpoint.interval.ms"], self.housekeeping.checkpoint),
            (self.config["log.retention.check.interval.ms"], self.housekeeping.retention),
            (min(10_000, self.config["connections.max.idle.ms"]), self._reap_idle),
        ]
        if self.config["log.cleaner.enable"]:
            jobs.append((self.config["log.cleaner.backoff.ms"], self.housekeeping.compact))
        if self.console is not None:
            jobs.append((self.config["console.sample.interval.ms"], self.console.sample))
        if self.hw_checkpoints is not None:
            jobs.append((self.config["replica.high.watermark.checkpoint.interval.ms"], self._checkpoint_high_watermarks))
        if self.hw_checkpoints is not None and self.config["auto.leader.rebalance.enable"]:
            jobs.append((self.config["leader.imbalance.check.interval.seconds"] * 1000, self._rebalance_leaders))
        self.periodic.start(jobs)

    async def _check_disk_space(self) -> None:
        """A full log dir ends once there is room again (tidelog.disk_space): checked every second."""
        self.logs.check_space()

    async def _checkpoint_high_watermarks(self) -> None:
        assert self.hw_checkpoints is not None
        snapshot = self.hw_checkpoints.snapshot()
        await asyncio.get_running_loop().run_in_executor(None, self.hw_checkpoints.write, snapshot)

    async def _rebalance_leaders(self) -> None:
        await self.leadership.rebalance(self.config["leader.imbalance.per.broker.percentage"])

    async def _reap_idle(self) -> None:
        self.network.reap_idle()
        if self.tubemq is not None:
            self.tubemq.reap_idle()

    def _after_metadata_change(self, old: MetadataImage, new: MetadataImage) -> None:
        """Committed offsets of deleted topics go as soon as the topics do (after this change is applied)."""
        if any(name not in new.topics for name in old.topics):
            asyncio.get_running_loop().call_soon(self.group_coordinator.cleanup_group_metadata)
        if self._loaded:
            self._take_over_coordinators(old, new)

    def _take_over_coordinators(self, old: MetadataImage, new: MetadataImage) -> None:
        """Cluster mode: coordinators follow the leadership of their partitions
        (:mod:`tidelog.coordinator.leadership`). A partition taken over loads in a background task on the
        loop, a chunk at a time; its requests answer COORDINATOR_LOAD_IN_PROGRESS until it is done."""
        follow_leadership(self.broker_id, old, new, ((OFFSETS_TOPIC, self.group_coordinator, False),
                                                     (TRANSACTION_STATE_TOPIC, self.transactions, True)))

    # ----------------------------------------------------------------------------------- stop

    async def stop(self) -> None:
        log.info("shutting down")
        if self.controlled_shutdown is not None and self._serving:  # clients are still served meanwhile
            await self.controlled_shutdown.run()
        self.periodic.cancel()
        self.transactions.close()
        self.marker_writer.close()
        self.group_coordinator.close()
        self._serving = False
        if self.http is not None:
            await self.http.stop()
        self.network.close()
        if self.tubemq is not None:
            self.tubemq.close()
        self.replicas.purgatory.complete_all()
        if self.replicas.replication is not None:
            await self.replicas.replication.close()
        await self.network.wait_closed()
        if self.tubemq is not None:
            await self.tubemq.wait_closed()
        if self._loaded:
            if self.hw_checkpoints is not None:
                await self._checkpoint_high_watermarks()
            await asyncio.get_running_loop().run_in_executor(None, self.logs.shutdown)
        if isinstance(self.credentials, ZooKeeperCredentialStore):
            self.credentials.close()
        self.store.close()
        log.info("shut down cleanly")
        self.stopped.set()


__all__ = ["Broker", "ListenerError", "advertised_endpoint"]
