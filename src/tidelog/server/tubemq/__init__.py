"""The TubeMQ front end (docs/tubemq.md): TubeMQ's master and broker services on their own listeners
and handler registries, onto the same replica manager and group coordinator as the Kafka front end.

:mod:`.network` (listeners, connections), :mod:`.dispatcher` (method registry, errors), :mod:`.master`
(producer metadata, consumer registration), :mod:`.balancer` (TubeMQ consumers as KIP-848 group
members; rebalance events), :mod:`.producer` (sendMessage), :mod:`.consumer` (register, heartbeat,
getMessages, commit), :mod:`.authentication` (signatures and tokens, with
``tubemq.authentication.enable``), :mod:`.offsets` (committed and tentative offsets), :mod:`.record`
(messages in and out of record batches). The composition root (server/broker.py) builds and wires them."""

from tidelog.server.tubemq.authentication import TubeAuthenticator
from tidelog.server.tubemq.balancer import TubeBalancer
from tidelog.server.tubemq.consumer import ConsumerService
from tidelog.server.tubemq.dispatcher import TubeHandlerRegistry
from tidelog.server.tubemq.master import MasterService
from tidelog.server.tubemq.network import TubeListener, TubeServer
from tidelog.server.tubemq.offsets import TubeOffsets
from tidelog.server.tubemq.producer import ProducerService

__all__ = [
    "ConsumerService",
    "MasterService",
    "ProducerService",
    "TubeAuthenticator",
    "TubeBalancer",
    "TubeHandlerRegistry",
    "TubeListener",
    "TubeOffsets",
    "TubeServer",
]
