"""The one way transaction markers reach partitions: through the replica manager.

Both the transaction coordinator (ending a transaction) and the WriteTxnMarkers API (an admin aborting
a hanging transaction, or another broker's coordinator) write markers here. A marker on a partition
whose topic a coordinator owns (``__consumer_offsets``: transactional offset commits) is handed to
that coordinator once it is in the log, so that its state follows the log exactly as a replay would
(Kafka's new group coordinator writes these markers itself for the same reason).

In a cluster a marker is written as an acks=all write is (leadership and ``min.insync.replicas``
checked) and :meth:`TxnMarkerWriter.confirm` tells the transaction coordinator when the ISR has it.

Loop-only, not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from tidelog.coordinator.runtime import MarkerFn
from tidelog.coordinator.txn.inter_broker import InterBrokerClient
from tidelog.errors import ErrorCode, KafkaError
from tidelog.replica.manager import ReplicaManager

log = logging.getLogger(__name__)


class TxnMarkerWriter:
    """``listeners``: topic -> ``fn(partition, marker offset, producer id, commit)``."""

    def __init__(self, replicas: ReplicaManager, listeners: Mapping[str, MarkerFn] | None = None,
                 remote: InterBrokerClient | None = None) -> None:
        self.replicas = replicas
        self.listeners = dict(listeners or {})
        self.remote = remote
        self._written: dict[tuple[str, int], int] = {}  # (topic, partition) -> end of the last marker there
        #: (topic, partition, producer id) -> the answer of a WriteTxnMarkers sent to its leader (None: in flight)
        self._remote: dict[tuple[str, int, int], ErrorCode | None] = {}
        self._in_flight: set[asyncio.Future] = set()

    def send(self, topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
             commit: bool) -> ErrorCode:
        """The transaction coordinator's way to write a marker: :meth:`write` when this broker leads
        the partition; otherwise WriteTxnMarkers to its leader (cluster mode), NONE at once, and
        :meth:`confirm` tells the outcome once the leader answered."""
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
        key = (topic, partition, producer_id)
        self._remote[key] = None
        task = asyncio.ensure_future(self.remote.write_marker(leader, topic, partition, producer_id, producer_epoch,
                                                              coordinator_epoch, commit))
        self._in_flight.add(task)

        def done(t: asyncio.Future) -> None:
            self._in_flight.discard(t)
            if key in self._remote and self._remote[key] is None:
                self._remote[key] = (t.result() if not t.cancelled() and t.exception() is None
                                     else ErrorCode.NETWORK_EXCEPTION)

        task.add_done_callback(done)
        return ErrorCode.NONE

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

    def confirm(self, topic: str, partition: int, producer_id: int) -> ErrorCode | None:
        """Whether the last marker written to the partition is committed (the high watermark passed
        it): NONE, None (not yet), NOT_LEADER_OR_FOLLOWER (no longer led here: it may be lost). A
        single node commits on append. A marker sent to another broker: its answer (that broker
        answers once the marker is committed there), None while it is in flight."""
        remote = (topic, partition, producer_id)
        if remote in self._remote:
            code = self._remote[remote]
            if code is not None:
                del self._remote[remote]
            return code
        key = (topic, partition)
        end = self._written.get(key)
        replication = self.replicas.replication
        if end is None or replication is None:
            self._written.pop(key, None)
            return ErrorCode.NONE
        plog = self.replicas.logs.get_log(topic, partition)
        if key not in replication.leaders or plog is None:
            del self._written[key]
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if plog.high_watermark >= end:
            del self._written[key]
            return ErrorCode.NONE
        return None

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
