"""The stopping broker's side of controlled shutdown (Kafka's ``KafkaServer.controlledShutdown`` of
the ZooKeeper era), run on SIGTERM before anything else stops, so clients are still served meanwhile.

Up to ``controlled.shutdown.max.retries`` times: find the controller in the metadata, send it
ControlledShutdown (v3, through the peer client to its inter-broker listener; to itself in-process when this broker is the
controller), and stop asking once the answer has no remaining partitions. An error, an unreachable
controller or remaining partitions mean a pause of ``controlled.shutdown.retry.backoff.ms`` and
another attempt (pauses and timing on the injected clock). Then the broker stops as before (its ZooKeeper session closes, and the controller
takes whatever is left as after a broker failure). Loop-only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.errors import ErrorCode
from tidelog.peer.client import PeerClient
from tidelog.protocol.messages import ControlledShutdownRequest, ControlledShutdownResponse
from tidelog.server.partition_controller import PartitionController

log = logging.getLogger(__name__)

VERSION = 3


class ControlledShutdown:
    def __init__(self, broker_id: int, image: Callable[[], MetadataImage], leadership: PartitionController,
                 peers: PeerClient | None, clock: Clock, *, max_retries: int, backoff_ms: int,
                 timeout_ms: int) -> None:
        """``peers``: the client that reaches the controller (None: this broker only asks itself)."""
        self.broker_id = broker_id
        self._image = image
        self.leadership = leadership
        self.peers = peers
        self.clock = clock
        self.max_retries = max_retries
        self.backoff_ms = backoff_ms
        self.timeout_ms = timeout_ms

    async def run(self) -> bool:
        """True once the controller reports nothing remaining."""
        try:
            return await self._run()
        finally:
            if self.peers is not None:
                self.peers.close()

    async def _run(self) -> bool:
        started = self.clock.monotonic_ms()
        for attempt in range(1, self.max_retries + 1):
            try:
                code, remaining = await self._attempt()
            except (TimeoutError, OSError, EOFError, asyncio.IncompleteReadError, ConnectionError) as e:
                code, remaining = ErrorCode.NETWORK_EXCEPTION, []
                log.warning("controlled shutdown: the controller could not be reached: %r", e)
            if code == ErrorCode.NONE and not remaining:
                log.info("controlled shutdown succeeded in %d ms", self.clock.monotonic_ms() - started)
                return True
            log.warning("controlled shutdown attempt %d of %d: %s, %d partitions remaining %s", attempt,
                        self.max_retries, code.name, len(remaining), remaining[:10])
            if attempt < self.max_retries:
                await self.clock.sleep(self.backoff_ms)
        log.warning("controlled shutdown did not complete; stopping anyway")
        return False

    async def _attempt(self) -> tuple[ErrorCode, list[tuple[str, int]]]:
        image = self._image()
        controller = image.controller_id
        if controller == self.broker_id:
            return await self.leadership.controlled_shutdown(self.broker_id, self.timeout_ms)
        if controller not in image.brokers or self.peers is None:
            return ErrorCode.NOT_CONTROLLER, []
        response: ControlledShutdownResponse = await self.peers.send(
            controller, ControlledShutdownRequest(broker_id=self.broker_id, broker_epoch=-1), VERSION,
            timeout_ms=self.timeout_ms)
        return (ErrorCode(response.error_code),
                [(r.topic_name, r.partition_index) for r in response.remaining_partitions])


__all__ = ["ControlledShutdown"]
