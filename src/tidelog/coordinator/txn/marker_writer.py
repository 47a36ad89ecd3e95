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

import logging
from collections.abc import Mapping

from tidelog.coordinator.runtime import MarkerFn
from tidelog.errors import ErrorCode, KafkaError
from tidelog.replica.manager import ReplicaManager

log = logging.getLogger(__name__)


class TxnMarkerWriter:
    """``listeners``: topic -> ``fn(partition, marker offset, producer id, commit)``."""

    def __init__(self, replicas: ReplicaManager, listeners: Mapping[str, MarkerFn] | None = None) -> None:
        self.replicas = replicas
        self.listeners = dict(listeners or {})
        self._written: dict[tuple[str, int], int] = {}  # (topic, partition) -> end of the last marker there

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

    def confirm(self, topic: str, partition: int) -> ErrorCode | None:
        """Whether the last marker written to the partition is committed (the high watermark passed
        it): NONE, None (not yet), NOT_LEADER_OR_FOLLOWER (no longer led here: it may be lost). A
        single node commits on append."""
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

    __call__ = write


__all__ = ["TxnMarkerWriter"]
