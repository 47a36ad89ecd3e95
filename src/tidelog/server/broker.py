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
* what differs between a single node and a cluster (the metadata store, replication, producer-id
  blocks, leadership moves, high-watermark checkpoints): the mode, chosen once
  (:mod:`tidelog.server.modes`); the composition root never asks which one it runs;
* the coordinators' internal topics: declared once in :mod:`tidelog.coordinator.internal_topics`
  (created on first use, found by FindCoordinator); each coordinator is bound to its topic
  (:class:`~tidelog.coordinator.leadership.CoordinatorLeadership`: loading, leadership following,
  transaction markers on the topic);
* other front ends (TubeMQ clients, when ``tubemq.*.listener`` are set): components in a list
  (:mod:`tidelog.server.front_ends`), started and stopped with the Kafka listeners, onto the same
  replica manager and group coordinator (docs/tubemq.md).

Loop-only, except the storage work it hands to the default executor.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tidelog import __version__
from tidelog.clock import Clock, SystemClock
from tidelog.cluster.config_entries import ConfigDescriber
from tidelog.cluster.controller import Controller
from tidelog.cluster.features import SHARE_GROUP_APIS, SHARE_VERSION, ClusterFeatures, initial_levels
from tidelog.cluster.metadata import BrokerInfo, MetadataImage
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.config import BrokerConfig
from tidelog.coordinator.group import GroupConfig, GroupCoordinator
from tidelog.coordinator.group.modern.consumer.group_type import ConsumerGroupType
from tidelog.coordinator.group.modern.share.group_type import ShareGroupType
from tidelog.coordinator.group.modern.streams.group_type import StreamsGroupType
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.coordinator.internal_topics import (
    CONSUMER_OFFSETS,
    FIRST_LEADERS_WAIT_MS,
    INTERNAL_TOPIC_NAMES,
    SCHEMAS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    InternalTopicManager,
    enabled_internal_topics,
)
from tidelog.coordinator.leadership import CoordinatedTopic, CoordinatorLeadership, marker_listeners
from tidelog.coordinator.runtime import ReplicaWriter
from tidelog.coordinator.share.persister import SharePersister
from tidelog.coordinator.share.remote import share_state
from tidelog.coordinator.txn import TransactionCoordinator, TxnConfig
from tidelog.coordinator.txn.marker_writer import TxnMarkerWriter
from tidelog.coordinator.txn.service import TransactionCoordinatorService
from tidelog.errors import KafkaError
from tidelog.listener import NON_ROUTABLE_HOSTS, Listener
from tidelog.meter import PartitionTraffic, RequestTimes, SyncHistogram
from tidelog.peer.client import PeerClient
from tidelog.replica.events import LogEvents
from tidelog.replica.housekeeping import LogHousekeeping
from tidelog.replica.manager import ReplicaManager
from tidelog.schema_registry.validation import SchemaIdValidation
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.security.delegation_token import DelegationTokenManager, TokenSettings
from tidelog.server.controller_events import ControllerEventManager
from tidelog.server.dispatcher import HandlerRegistry
from tidelog.server.fetch_session import FetchSessionCache
from tidelog.server.front_ends import FrontEnd, front_ends
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
from tidelog.server.handlers.delegation_tokens import DelegationTokenHandlers
from tidelog.server.handlers.features import UpdateFeaturesHandler
from tidelog.server.handlers.leadership import ElectLeadersHandler
from tidelog.server.handlers.reassignment import ReassignmentHandlers
from tidelog.server.handlers.sasl import SaslHandlers
from tidelog.server.handlers.scram_credentials import ScramCredentialHandlers
from tidelog.server.handlers.share import ShareHandlers
from tidelog.server.handlers.share_group import ShareGroupHandlers
from tidelog.server.handlers.share_state import ShareStateHandlers
from tidelog.server.handlers.streams_group import StreamsGroupHandlers
from tidelog.server.handlers.telemetry import ClientSoftware, TelemetryHandlers
from tidelog.server.internal_client import InternalClient
from tidelog.server.modes import broker_mode
from tidelog.server.network import ConnectionSettings, ListenerError, SocketServer
from tidelog.server.partition_controller import PartitionController
from tidelog.server.periodic import PeriodicJobs
from tidelog.server.quota import ClientQuotaManagers
from tidelog.server.throttle import RequestThrottler
from tidelog.server.tls import ListenerSecurity, ignored_listener_keys, listener_security
from tidelog.server.txn_verification import TransactionVerifier
from tidelog.share.dead_letter import PRODUCE_VERSION, DeadLetterWriter
from tidelog.share.manager import ResettingPersister, SharePartitionManager
from tidelog.storage.log_manager import LogManager
from tidelog.telemetry.manager import ClientMetricsManager
from tidelog.telemetry.pushed import PushedMetrics

# Imported where they are used, only when configured: a broker without an HTTP listener, TubeMQ or
# ZooKeeper starts without loading aiohttp, prometheus_client, protobuf or kazoo (bench/startup.py).
if TYPE_CHECKING:
    from tidelog.schema_registry.leader import RegistryCluster
    from tidelog.schema_registry.service import SchemaRegistry
    from tidelog.web.console import Console
    from tidelog.web.schema_registry_forward import Forwarder
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


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock | None = None, *, use_sendfile: bool | None = None,
                 share_persister: SharePersister | None = None) -> None:
        self.config = config
        self.clock = clock = clock or SystemClock()
        self.broker_id: int = config["broker.id"]
        self.listeners: tuple[Listener, ...] = config["listeners"]
        self.log_dirs = [Path(d) for d in config["log.dirs"]]
        # Metrics (GET /metrics) only with an HTTP listener: otherwise nothing is measured at all.
        measured = config["metrics.listener"] is not None
        traffic, request_times, flush_latency = ((PartitionTraffic(), RequestTimes(), SyncHistogram()) if measured
                                                 else (None, None, None))

        # Metadata and storage. A single node or a broker of a cluster (zookeeper.connect): the mode says
        # what differs (the store, replication, producer-id blocks, leadership moves; server/modes.py).
        self.topic_configs = topic_configs = TopicConfigs(config.topic_defaults)
        # The controller's one event queue: ZooKeeper's callbacks and every partition-state decision.
        self.controller_events = ControllerEventManager()
        self.mode = mode = broker_mode(config, self.listeners, self.log_dirs[0], topic_configs, INTERNAL_TOPIC_NAMES,
                                       self.controller_events, clock)
        self.store = store = mode.store
        self.logs = logs = LogManager(
            self.log_dirs, clock, topic_config=lambda topic: topic_configs.for_topic(store.image, topic),
            producer_id_expiration_ms=config["producer.id.expiration.ms"], flush_latency=flush_latency)
        self.controller = controller = Controller(store, self.broker_id, topic_configs, config,
                                                  internal_topics=INTERNAL_TOPIC_NAMES)
        # The finalized feature levels (KIP-584), cluster state in the store; share.version turns share groups on.
        self.features = features = ClusterFeatures(store, initial_levels(config), self.broker_id)

        # The partitions this broker hosts, and what happens to their logs.
        self.events = events = LogEvents()
        self.replicas = replicas = ReplicaManager(self.broker_id, logs, store, topic_configs, clock, clock.call_later, events,
                                                  traffic=traffic, **mode.replica_options())
        self.housekeeping = LogHousekeeping(logs, clock, events)
        # Every partition-state decision, one at a time on the controller's queue: leadership moves on request
        # (ElectLeaders anywhere; in a cluster, ControlledShutdown at the controller) and, in a cluster, the
        # controller's duties (elections after a broker loss, reassignment completion, topic deletion).
        self.partition_controller = leadership = PartitionController(
            store, self.controller_events, clock, alter=mode.alter_partition_state, is_controller=mode.is_controller,
            duties=mode.controller_duties,
            unclean=lambda image, topic: topic_configs.for_topic(image, topic).unclean_leader_election_enable)
        store.subscribe(leadership.on_metadata_change)
        self.mode_runtime = mode_runtime = mode.runtime(logs, replicas, leadership)
        # The coordinators' internal topics (coordinator/internal_topics.py): created on first use, found by key.
        self.internal_topics = internal_topics = InternalTopicManager(
            controller, config, lambda: store.image, enabled_internal_topics(features.share_groups_enabled),
            leadership.await_leaders)

        # Coordinators, each bound to its internal topic (loaded and unloaded as its partitions' leadership moves).
        # Streams groups (KIP-1071) only with ``streams`` in group.coordinator.rebalance.protocols (docs/streams-groups.md).
        streams = "streams" in config["group.coordinator.rebalance.protocols"]
        self.group_coordinator = groups = GroupCoordinator(
            GroupConfig.from_broker_config(config), clock,
            ReplicaWriter(replicas, CONSUMER_OFFSETS.name, internal_topics.ensurer(CONSUMER_OFFSETS)),
            clock.call_later, group_types=[ConsumerGroupType, ShareGroupType, *([StreamsGroupType] if streams else [])],
            image_source=lambda: store.image,
            topic_exists=lambda name: name in store.image.topics)
        # The share coordinator (KIP-932) and the broker's share-state persister, served while share.version
        # >= 1 (``share_persister`` given: what the share groups and share partitions use instead, in tests).
        self.share_coordinator, self.share_persister = share_state(
            config, clock, ReplicaWriter(replicas, SHARE_GROUP_STATE.name, internal_topics.ensurer(SHARE_GROUP_STATE)),
            clock.call_later, lambda: store.image, getattr(mode, "peers", None), self.broker_id)
        share_persister = share_persister or self.share_persister
        # The group coordinator's resets of share state drop the share partitions this broker holds for it.
        self.share_partitions: SharePartitionManager | None = None
        self._dead_letter_peers: PeerClient | None = None  # share groups' DLQ writes to other brokers
        self.group_service = group_service = GroupCoordinatorService(
            groups, share_persister=ResettingPersister(share_persister, lambda: self.share_partitions)
            if share_persister is not None else None,
            ready=functools.partial(self._offsets_partition_ready, internal_topics, groups, clock,
                                    self.broker_id))
        consumer_groups = group_service.consumer_groups
        assert consumer_groups is not None
        coordinated = [CoordinatedTopic(CONSUMER_OFFSETS, groups, on_marker=groups.complete_transaction)]
        self.producer_ids = mode.producer_ids(controller)
        inter_broker = mode.peer_client(replicas)
        self.marker_writer = TxnMarkerWriter(replicas, marker_listeners(coordinated), inter_broker)
        self.transactions = transactions = TransactionCoordinator(
            TxnConfig.from_broker_config(config), clock,
            ReplicaWriter(replicas, TRANSACTION_STATE.name, internal_topics.ensurer(TRANSACTION_STATE)),
            self.producer_ids.next_producer_id, self.marker_writer.send, clock.call_later,
            coordinator_epoch=functools.partial(internal_topics.leader_epoch, TRANSACTION_STATE),
            confirm_marker=self.marker_writer.confirm)
        txn_service = TransactionCoordinatorService(transactions)
        coordinated.append(CoordinatedTopic(TRANSACTION_STATE, transactions))
        if self.share_coordinator is not None:
            coordinated.append(CoordinatedTopic(SHARE_GROUP_STATE, self.share_coordinator))
        self.coordinators = CoordinatorLeadership(self.broker_id, config, coordinated)
        self.verifier = verifier = TransactionVerifier(
            transactions, replicas, clock, enabled=config["transaction.partition.verification.enable"],
            retry_backoff_ms=config["add.partitions.to.txn.retry.backoff.ms"],
            retry_backoff_max_ms=config["add.partitions.to.txn.retry.backoff.max.ms"], remote=inter_broker)
        # Security: SCRAM credentials (users), and each listener's TLS and SASL (docs/security.md).
        self.credentials = credentials = mode.credentials
        # Delegation tokens (delegation.token.secret.key), kept where the mode keeps metadata.
        self.delegation_tokens = DelegationTokenManager(TokenSettings.from_config(config), mode.tokens, clock)
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
        # Broker-side schema id validation (confluent.*.schema.validation): given the registry below, if served.
        schema_ids = SchemaIdValidation()
        self.handlers = handlers = HandlerRegistry()
        # Client telemetry (KIP-714, telemetry.enable; docs/telemetry.md): subscriptions are the image's
        # client-metrics resources; what clients push is kept for /metrics and the console.
        self.client_software = ClientSoftware()
        self.pushed_metrics = PushedMetrics(clock.wall_ms)
        self.client_metrics = ClientMetricsManager(
            lambda: store.image.client_metrics_configs, clock.wall_ms, config["telemetry.max.bytes"],
            self.pushed_metrics) if config["telemetry.enable"] else None
        handlers.add(
            ApiVersionsHandler(handlers, features.finalized, lambda: store.image.cluster_id, self.broker_id,
                               on_client_software=self.client_software.told if self.client_metrics is not None else None),
            UpdateFeaturesHandler(features, auth),
            MetadataHandler(store, controller, config, auth),
            DescribeTopicPartitionsHandler(store, auth),
            ProduceHandler(replicas, verifier, auth, schema_ids),
            FetchHandler(replicas, self.fetch_sessions, auth),
            ListOffsetsHandler(replicas, auth),
            OffsetForLeaderEpochHandler(replicas, auth),
            DeleteRecordsHandler(replicas, auth),
            TopicHandlers(controller, config, describer, auth, leadership.await_leaders),
            ConfigHandlers(controller, describer, self.broker_id, auth),
            ClusterInfoHandlers(store, replicas.local_logs, auth),
            FindCoordinatorHandler(store, internal_topics, auth),
            GroupHandlers(group_service, auth),
            OffsetHandlers(group_service, store, auth),
            ConsumerGroupHandlers(group_service, store, config["group.coordinator.rebalance.protocols"], auth),
            ShareGroupHandlers(group_service, store, auth, high_watermarks=lambda t, p: (
                o.high_watermark if (o := replicas.local_logs.offsets(t, p)) is not None else None)),
            *([StreamsGroupHandlers(group_service, store, controller, config["default.replication.factor"], auth)]
              if streams else []),
            InitProducerIdHandler(self.producer_ids, txn_service, auth),
            TransactionHandlers(txn_service, group_service, replicas, auth),
            TxnOffsetCommitHandler(group_service, replicas, verifier, internal_topics.ensurer(CONSUMER_OFFSETS), auth),
            TxnPartitionHandlers(self.marker_writer, replicas, auth),
            AclHandlers(controller, auth),
            SaslHandlers(config["sasl.enabled.mechanisms"]),
            ScramCredentialHandlers(credentials, auth),
            DelegationTokenHandlers(self.delegation_tokens, auth),
            ClientQuotaHandlers(store, controller, auth),
            ElectLeadersHandler(leadership, auth),
            ReassignmentHandlers(store, leadership.reassign, auth),
            *mode_runtime.handlers(auth),
            *([ShareStateHandlers(self.share_persister.local, auth)] if self.share_persister is not None else []),
            *([TelemetryHandlers(self.client_metrics, self.client_software)] if self.client_metrics is not None else []),
        )
        # Share groups' fetches (KIP-932) with the share-state persister (the share coordinator's service;
        # tests pass an in-memory one). Every share API is served only while share.version >= 1.
        if share_persister is not None:
            self.share_partitions = SharePartitionManager(
                replicas, share_persister, clock, config.values,
                group_configs=lambda group_id: store.image.group_configs.get(group_id),
                dead_letters=self._dead_letter_writer(config, replicas, controller, leadership, clock))
            handlers.add(ShareHandlers(self.share_partitions, auth))
        handlers.gate(SHARE_GROUP_APIS, features.share_groups_enabled)
        # Client quotas (docs/security.md "Quotas"): measured and enforced around every handler.
        self.client_quotas = ClientQuotaManagers(config["quota.window.num"], config["quota.window.size.seconds"])
        store.subscribe(lambda _old, new: self.client_quotas.update(new.client_quotas))
        handlers.set_throttler(RequestThrottler(self.client_quotas, clock))
        settings = ConnectionSettings(config["socket.request.max.bytes"], config["queued.max.requests"],
                                      config["connections.max.idle.ms"])
        self.network = SocketServer(handlers, clock, settings, use_sendfile, self.listener_security,
                                    request_times=request_times)
        if self.share_partitions is not None:  # a closed connection ends its share sessions (Kafka 4.1+)
            share_partitions = self.share_partitions
            self.network.on_connection_closed.append(
                lambda connection_id: asyncio.ensure_future(share_partitions.connection_closed(connection_id)))
        if self.client_metrics is not None:  # a closed connection forgets its client instance, as Kafka's
            self.network.on_connection_closed += [self.client_metrics.connection_closed,
                                                  self.client_software.connection_closed]
        # Other front ends (TubeMQ, when its listeners are configured: docs/tubemq.md).
        self.front_ends: list[FrontEnd] = front_ends(config, clock, settings, store, topic_configs, self.log_dirs[0],
                                                     replicas, group_service)

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
                                   lookup=credentials.get, session_ms=config["connections.max.reauth.ms"],
                                   **({"share_in_flight": self.share_partitions.snapshot}
                                      if self.share_partitions is not None else {}),
                                   pushed_metrics=self.pushed_metrics if self.client_metrics is not None else None)
            self.console.install(self.http.app)
        # The schema registry (docs/schema-registry.md): Confluent's REST API, its state in _schemas.
        self.schema_registry: SchemaRegistry | None = None
        self.schema_registry_cluster: RegistryCluster | None = None
        self.schema_registry_forwarder: Forwarder | None = None
        if self.http is not None and config["schema.registry.enable"]:
            from tidelog.schema_registry.service import SchemaRegistry
            from tidelog.web.schema_registry import SchemaRegistryApi
            from tidelog.web.schema_registry_access import RegistryAccess

            self.schema_registry = SchemaRegistry(
                ReplicaWriter(replicas, SCHEMAS.name, internal_topics.ensurer(SCHEMAS)), clock.wall_ms)
            schema_ids.registry = self.schema_registry  # broker-side schema id validation reads its state
            path = config["schema.registry.path"]
            # who may use it: the console's login users over HTTP basic auth, the broker's ACLs on subjects
            access = RegistryAccess((config["console.authentication"] or (
                "sasl" if config["authorizer.class.name"] else "none")) == "sasl", credentials.get, self.authorizer)
            # a cluster: the leader of _schemas writes, the others follow it and forward changes to it
            peers = getattr(mode, "peers", None)
            if peers is not None:
                from tidelog.peer.client import PeerClient
                from tidelog.schema_registry.leader import RegistryCluster
                from tidelog.web.schema_registry_forward import Forwarder

                self.schema_registry_cluster = RegistryCluster(
                    self.schema_registry, SCHEMAS.name, self.broker_id, lambda: replicas.image, replicas.may_lead,
                    functools.partial(internal_topics.ready, SCHEMAS),
                    PeerClient(peers, f"broker-{self.broker_id}-schema-registry"),
                    PeerClient(peers, f"broker-{self.broker_id}-schema-registry-sync"), clock)
                self.store.subscribe(self.schema_registry_cluster.on_metadata)
                self.schema_registry_forwarder = Forwarder(self.schema_registry_cluster)
            self.http.add_routes(SchemaRegistryApi(self.schema_registry, "" if path == "/" else path, access,
                                                   self.schema_registry_forwarder).routes())
            if self.console is not None:  # the console's Schemas page
                from tidelog.web.console.schema_api import SchemaApi

                self.http.add_routes(SchemaApi(self.schema_registry, access).routes())
        self._serving = False
        self.startup_reports: list = []
        self.metrics = (self._metrics(self.http, traffic, request_times, flush_latency)
                        if self.http is not None else None)

        self.periodic = PeriodicJobs(clock)
        self._loaded = False
        self.stopped = asyncio.Event()

    def _dead_letter_writer(self, config: BrokerConfig, replicas: ReplicaManager, controller: Controller,
                            leadership: PartitionController, clock: Clock) -> DeadLetterWriter:
        """Share groups' dead-letter queues (KIP-1191), used while the finalized share.version is 2: written
        through the replica manager, or to the DLQ partition's leader over the inter-broker client."""
        store = self.store
        features = self.features

        async def create_topic(name: str, configs: Mapping[str, str]) -> None:
            controller.create_topic(name, config["num.partitions"], config["default.replication.factor"], configs)
            await leadership.await_leaders([name], 30_000)

        peer_settings = getattr(self.mode, "peers", None)
        peers = self._dead_letter_peers = (PeerClient(peer_settings, f"tidelog-share-dlq-{self.broker_id}")
                                           if peer_settings is not None else None)
        return DeadLetterWriter(
            replicas, share_version=lambda: features.level(SHARE_VERSION), broker_values=config.values,
            group_configs=lambda group_id: store.image.group_configs.get(group_id), create_topic=create_topic,
            wall_ms=clock.wall_ms, remote=(lambda leader, request: peers.send(leader, request, PRODUCE_VERSION))
            if peers is not None else None)

    def _metrics(self, http: HttpServer, traffic: PartitionTraffic | None, request_times: RequestTimes | None,
                 flush_latency: SyncHistogram | None):
        """The broker's own Prometheus registry, reading the hot-path meters the components update
        (docs/metrics.md)."""
        from tidelog.web.metrics import BrokerSources, IsrChanges, metrics_registry, metrics_routes

        assert traffic is not None and request_times is not None and flush_latency is not None  # with http

        self.events.on_deleted(traffic.forget)
        isr_changes = IsrChanges(self.broker_id)
        self.store.subscribe(isr_changes)
        self.metrics_sources = BrokerSources(
            self.broker_id, self.store, self.replicas, self.group_coordinator, self.transactions,
            traffic, request_times, flush_latency, isr_changes,
            connections=lambda: Counter(c.listener_name for c in self.network.connections),
            startup_reports=lambda: self.startup_reports,
            failed_authentications=lambda: self.network.failed_authentications,
            share_partitions=self.share_partitions,
            pushed_metrics=self.pushed_metrics if self.client_metrics is not None else None)
        registry = metrics_registry(self.metrics_sources)
        http.add_routes(metrics_routes(registry))
        return registry

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
        for front_end in self.front_ends:
            out.update(front_end.ports())
        return out

    @property
    def schema_registry_url(self) -> str | None:
        """The schema registry's base URL, as clients are given it (once started; None: not served)."""
        if self.schema_registry is None or self.http is None or self.http.bound is None:
            return None
        return self.http.url.rstrip("/") + self.config["schema.registry.path"]

    # ---------------------------------------------------------------------------------- start

    @staticmethod
    async def _offsets_partition_ready(internal_topics: InternalTopicManager, groups: GroupCoordinator, clock: Clock,
                                       broker_id: int, partition: int) -> None:
        """A brand-new ``__consumer_offsets`` (this call creates it) has no leaders yet: wait, bounded as
        FindCoordinator waits, for the controller to decide them and for this broker to load the partition,
        instead of answering NOT_COORDINATOR to a front end that does not look its coordinator up first."""
        topic = internal_topics.image().topics.get(CONSUMER_OFFSETS.name)
        if topic is not None and partition < len(topic.partitions) and not topic.partitions[partition].is_new:
            return
        topic = await internal_topics.ready(CONSUMER_OFFSETS)
        if topic is None or partition >= len(topic.partitions) or topic.partitions[partition].leader != broker_id:
            return  # another broker coordinates it: NOT_COORDINATOR, as Kafka answers
        deadline = clock.monotonic_ms() + FIRST_LEADERS_WAIT_MS
        while clock.monotonic_ms() < deadline:
            try:
                groups.runtime.check_owned(partition)
                return
            except KafkaError:  # not led here (yet), or loading
                await clock.sleep(10)

    async def start(self) -> None:
        for key in self.config.unknown:
            log.warning("%s", self.config.describe_unknown(key))
        used = self.mode.prepare(asyncio.get_running_loop())  # the connections to other brokers: reads PEM files
        self.controller_events.start()
        for reason in ignored_listener_keys(self.config, used):
            log.warning("%s", reason)
        self.listener_security.update({listener.name: listener_security(self.config, listener, self.credentials,
                                                                        self.delegation_tokens)
                                       for listener in self.listeners})
        await self.network.bind(self.listeners)
        try:
            for front_end in self.front_ends:
                await front_end.bind()
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
            for front_end in self.front_ends:
                front_end.close()
            self.store.close()
            await self.controller_events.stop()
            self.logs.release_dirs()
            raise
        self._start_housekeeping()
        await self.network.start_serving()
        self._serving = True
        for front_end in self.front_ends:
            await front_end.start_serving()
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
        self.store.open(BrokerInfo(self.broker_id, host, port, self.config["broker.rack"], endpoints,
                                   self._http_address(host)))
        self.partition_controller.start()  # new partitions whose first state a restart interrupted
        self.client_quotas.update(self.store.image.client_quotas)
        reports = await asyncio.get_running_loop().run_in_executor(None, self.logs.startup)
        self.startup_reports = reports
        await self.mode_runtime.load()
        self._loaded = True
        for report in reports:
            for line in report.describe():
                (log.warning if report.truncated else log.info)("%s", line)
        self.replicas.start()
        self.housekeeping.schedule_purge()  # leftovers of deletions a crash interrupted
        # The coordinators load the partitions of their topics this broker leads (a single node: all).
        self.coordinators.load(self.store.image)
        if self.schema_registry is not None:  # its state: every record of _schemas
            log.info("schema registry: %d records of _schemas read", self.schema_registry.load())
            if self.schema_registry_cluster is not None:
                self.schema_registry_cluster.start()

    def _http_address(self, advertised_host: str) -> str | None:
        """The HTTP listener as the other brokers reach it (registered: schema registry writes are
        forwarded there); a wildcard host is the first listener's advertised host, as in Kafka."""
        if self.http is None or self.http.bound is None:
            return None
        host, port = self.http.bound
        if host in ("", "0.0.0.0", "::"):
            host = advertised_host
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

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
        if self.delegation_tokens.enabled:
            jobs.append((self.config["delegation.token.expiry.check.interval.ms"], self._sweep_tokens))
        jobs.extend(self.mode_runtime.jobs())  # a cluster: high-watermark checkpoints, leader rebalance
        self.periodic.start(jobs)

    async def _check_disk_space(self) -> None:
        """A full log dir ends once there is room again (tidelog.disk_space): checked every second."""
        self.logs.check_space()

    async def _sweep_tokens(self) -> None:
        """Expired delegation tokens are removed (delegation.token.expiry.check.interval.ms)."""
        self.delegation_tokens.sweep()

    async def _reap_idle(self) -> None:
        self.network.reap_idle()
        for front_end in self.front_ends:
            front_end.reap_idle()

    def _after_metadata_change(self, old: MetadataImage, new: MetadataImage) -> None:
        """Committed offsets of deleted topics go as soon as the topics do (after this change is applied);
        coordinators follow the leadership of their partitions (:mod:`tidelog.coordinator.leadership`)."""
        if any(name not in new.topics for name in old.topics):
            asyncio.get_running_loop().call_soon(self.group_coordinator.cleanup_group_metadata)
        if self._loaded:
            self.coordinators.follow(old, new)

    # ----------------------------------------------------------------------------------- stop

    async def stop(self) -> None:
        log.info("shutting down")
        if self._serving:  # a cluster: a controlled shutdown, while clients are still served
            await self.mode_runtime.shut_down()
        self.periodic.cancel()
        self.transactions.close()
        if self.share_persister is not None:
            self.share_persister.close()
        if self._dead_letter_peers is not None:
            self._dead_letter_peers.close()
        self.marker_writer.close()
        await self.group_service.stop_share_tasks()
        self.group_coordinator.close()
        if self.share_partitions is not None:
            await self.share_partitions.close()
        self._serving = False
        if self.schema_registry_cluster is not None:
            await self.schema_registry_cluster.stop()
        if self.schema_registry_forwarder is not None:
            await self.schema_registry_forwarder.close()
        if self.http is not None:
            await self.http.stop()
        self.network.close()
        for front_end in self.front_ends:
            front_end.close()
        self.replicas.purgatory.complete_all()
        await self.mode_runtime.close_replication()
        await self.network.wait_closed()
        for front_end in self.front_ends:
            await front_end.wait_closed()
        if self._loaded:
            await self.mode_runtime.checkpoint()
            await asyncio.get_running_loop().run_in_executor(None, self.logs.shutdown)
        self.mode_runtime.close()
        self.store.close()
        await self.controller_events.stop()
        log.info("shut down cleanly")
        self.stopped.set()


__all__ = ["Broker", "ListenerError", "advertised_endpoint"]
