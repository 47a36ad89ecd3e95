"""Front ends besides the Kafka listeners: optional components the broker starts and stops in a list.

A front end binds its listeners early (a taken port is reported before any data is read), serves once
the broker is loaded, reaps idle connections with the broker's, closes with it, and reports its ports
(``tidelog serve``'s ``tidelog ports: {...}`` line). Today there is one: TubeMQ's, when
``tubemq.master.listener`` is set (:func:`front_ends`; docs/tubemq.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tidelog.clock import Clock
from tidelog.cluster.store import MetadataStore
from tidelog.cluster.topic_config import TopicConfigs
from tidelog.cluster.tubemq_secret_store import TubeSecretStore
from tidelog.config import BrokerConfig
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.replica.manager import ReplicaManager
from tidelog.server.network import ConnectionSettings

# Imported only when configured: a broker without TubeMQ starts without loading protobuf (bench/startup.py).
if TYPE_CHECKING:
    from tidelog.server.tubemq import TubeServer

log = logging.getLogger(__name__)


class FrontEnd(Protocol):
    async def bind(self) -> None: ...

    async def start_serving(self) -> None: ...

    def reap_idle(self) -> None: ...

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...

    def ports(self) -> dict[str, int]:
        """Name (as in the ``tidelog ports`` line) -> bound port, once bound."""
        ...


class TubeFrontEnd:
    """TubeMQ's master and broker services, each on its own listener (:class:`~tidelog.server.tubemq.TubeServer`)."""

    def __init__(self, build: Callable[[Callable[[], TubeServer]], TubeServer]) -> None:
        """``build(server)``: the TubeServer, given a way to reach it once built (its services
        advertise its bound address)."""
        self.server = build(lambda: self.server)

    async def bind(self) -> None:
        await self.server.bind()

    async def start_serving(self) -> None:
        await self.server.start_serving()
        for name, (host, port) in self.server.bound.items():
            log.info("TubeMQ %s service listening on %s:%d", name, host or "0.0.0.0", port)

    def reap_idle(self) -> None:
        self.server.reap_idle()

    def close(self) -> None:
        self.server.close()

    async def wait_closed(self) -> None:
        await self.server.wait_closed()

    def ports(self) -> dict[str, int]:
        return {f"tubemq.{name}": port for name, (_, port) in self.server.bound.items()}


def front_ends(config: BrokerConfig, clock: Clock, settings: ConnectionSettings, store: MetadataStore,
               topic_configs: TopicConfigs, data_dir: Path, replicas: ReplicaManager,
               group_service: GroupCoordinatorService) -> list[FrontEnd]:
    """The configured front ends besides Kafka's (docs/tubemq.md)."""
    if config["tubemq.master.listener"] is None:
        return []
    return [TubeFrontEnd(lambda server: _tubemq(config, clock, settings, store, topic_configs, data_dir, replicas,
                                                group_service, server))]


def _tubemq(config: BrokerConfig, clock: Clock, settings: ConnectionSettings, store: MetadataStore,
            topic_configs: TopicConfigs, data_dir: Path, replicas: ReplicaManager,
            group_service: GroupCoordinatorService, server: Callable[[], TubeServer]) -> TubeServer:
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

    broker_id = config["broker.id"]

    def broker_address() -> BrokerAddress:
        host, port = server().advertised("broker", config["tubemq.broker.advertised.listener"])
        return BrokerAddress(broker_id, host, port)

    balancer = TubeBalancer(group_service, store, clock, broker_address)
    consumers = ConsumerService(replicas, balancer, TubeOffsets(group_service))
    # tubemq.authentication.enable: clients sign with their TubeMQ secret (docs/security.md).
    authenticator = (TubeAuthenticator(TubeSecretStore(data_dir).get, clock.wall_ms)
                     if config["tubemq.authentication.enable"] else None)
    master = TubeHandlerRegistry("master", frozenset({Service.MASTER}))
    master.add(MasterService(store, topic_configs, balancer, consumers, broker_address, authenticator))
    broker = TubeHandlerRegistry("broker", frozenset({Service.BROKER_READ, Service.BROKER_WRITE}))
    broker.add(ProducerService(replicas, clock, authenticator), consumers)
    (master_host, master_port), (broker_host, broker_port) = (config["tubemq.master.listener"],
                                                              config["tubemq.broker.listener"])
    return TubeServer((TubeListener(master, master_host, master_port), TubeListener(broker, broker_host, broker_port)),
                      clock, settings)


__all__ = ["FrontEnd", "TubeFrontEnd", "front_ends"]
