"""The one way transaction markers reach partitions: through the replica manager.

Both the transaction coordinator (ending a transaction) and the WriteTxnMarkers API (an admin aborting
a hanging transaction, or another broker's coordinator) write markers here. A marker on a partition
whose topic a coordinator owns (``__consumer_offsets``: transactional offset commits) is handed to
that coordinator once it is in the log, so that its state follows the log exactly as a replay would
(Kafka's new group coordinator writes these markers itself for the same reason).

In a cluster a marker is written as an acks=all write is (leadership and ``min.insync.replicas``
checked) and :meth:`TxnMarkerWriter.confirm` hands the transaction coordinator a future of the moment
the ISR has it (a marker sent to another broker: the future of that broker's answer).

Loop-only, not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping
from typing import Any

from tidelog.coordinator.runtime import MarkerFn
from tidelog.coordinator.txn.inter_broker import InterBrokerClient
from tidelog.errors import ErrorCode, KafkaError
from tidelog.replica.manager import ReplicaManager

log = logging.getLogger(__name__)

#: how long a marker written here may take to be committed before it is written again (Kafka's
#: request.timeout.ms, the timeout of its acks=all marker writes)
MARKER_TIMEOUT_MS = 30_000


class TxnMarkerWriter:
    """``listeners``: topic -> ``fn(partition, marker offset, producer id, commit)``."""

    def __init__(self, replicas: ReplicaManager, listeners: Mapping[str, MarkerFn] | None = None,
                 remote: InterBrokerClient | None = None) -> None:
        self.replicas = replicas
        self.listeners = dict(listeners or {})
        self.remote = remote
        self._written: dict[tuple[str, int], int] = {}  # (topic, partition) -> end of the last marker there
        #: (topic, partition, producer id) -> the answer of a WriteTxnMarkers sent to its leader
        self._remote: dict[tuple[str, int, int], asyncio.Future] = {}
        self._in_flight: set[asyncio.Future] = set()

    def send(self, topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
             commit: bool) -> ErrorCode:
        """The transaction coordinator's way to write a marker: :meth:`write` when this broker leads
        the partition; otherwise WriteTxnMarkers to its leader (cluster mode), NONE at once, and
        :meth:`confirm` hands out the future of the leader's answer."""
        if self.remote is None or self.replicas.replication is None:
            return self.write(topic, partition, producer_id, producer_epoch, coordinator_epoch, commit)
        try:
            leader = self.replicas.partition(topic, partition).leader
        except KafkaError as e:
            return e.code
        if leader == self.replicas.broker_id:
            return self.write(topic, partition, producer_id, producer_epoch, coordinator_epoch, commit)
        if leader < 0:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        self._remote[(topic, partition, producer_id)] = self._track(self.remote.write_marker(
            leader, topic, partition, producer_id, producer_epoch, coordinator_epoch, commit))
        return ErrorCode.NONE

    def _track(self, coro: Coroutine[Any, Any, ErrorCode]) -> asyncio.Future:
        task = asyncio.ensure_future(coro)
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)
        return task

    def write(self, topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
              commit: bool) -> ErrorCode:
        """Write one marker; returns the error code of the append (NONE when it is in the log)."""
        try:
            result = self.replicas.write_txn_marker(topic, partition, producer_id, producer_epoch, coordinator_epoch,
                                                    commit=commit)
        except KafkaError as e:
            return e.code
        self._written[(topic, partition)] = result.first_offset + 1
        listener = self.listeners.get(topic)
        if listener is not None:
            try:
                listener(partition, result.first_offset, producer_id, commit)
            except Exception:
                log.exception("applying the %s marker of producer %d on %s-%d failed",
                              "COMMIT" if commit else "ABORT", producer_id, topic, partition)
                return ErrorCode.UNKNOWN_SERVER_ERROR
        return ErrorCode.NONE

    def confirm(self, topic: str, partition: int, producer_id: int) -> ErrorCode | asyncio.Future:
        """Whether the last marker written to the partition is committed (the high watermark passed
        it): NONE at once on a single node (it commits on append), else a future of NONE, or of
        NOT_LEADER_OR_FOLLOWER / REQUEST_TIMED_OUT when it may be lost (no longer led here, or not
        committed within the marker timeout). A marker sent to another broker: the future of that
        broker's answer (it answers once the marker is committed there)."""
        remote = self._remote.pop((topic, partition, producer_id), None)
        if remote is not None:
            return remote
        key = (topic, partition)
        end = self._written.pop(key, None)
        replication = self.replicas.replication
        if end is None or replication is None:
            return ErrorCode.NONE
        if key not in replication.leaders or self.replicas.logs.get_log(topic, partition) is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        # min.insync.replicas is the append's check, not this one's (1): the marker counts once the ISR has it
        return self._track(replication.wait_for_acks(topic, partition, end, MARKER_TIMEOUT_MS, 1))

    async def committed(self, topic: str, partition: int, timeout_ms: int) -> ErrorCode:
        """WriteTxnMarkers from another broker's coordinator: wait until the marker just written to
        the partition is committed (acks=all), or its error."""
        end = self._written.pop((topic, partition), None)
        if end is None or self.replicas.replication is None:
            return ErrorCode.NONE
        return await self.replicas.wait_for_acks(topic, partition, end, timeout_ms)

    def close(self) -> None:
        for task in list(self._in_flight):
            task.cancel()
        if self.remote is not None:
            self.remote.close()

    __call__ = write


__all__ = ["TxnMarkerWriter"]
