"""Writing a decided transaction's markers, and completing it (Kafka's ``TransactionMarkerChannelManager``).

Once PrepareCommit or PrepareAbort is in ``__transaction_state`` the outcome is decided; this
channel then writes a COMMIT or ABORT marker to every partition of the transaction (with the
producer id and epoch of the metadata, and the coordinator epoch of its ``__transaction_state``
partition) and, when none is left, writes CompleteCommit / CompleteAbort. Rules, per partition and
marker result (``write_marker`` returns an error code, NONE when the marker is in the log):

==================================================== ===============================================
NONE                                                 the partition is done (removed from the metadata)
UNKNOWN_TOPIC_OR_PARTITION                           the topic was deleted: done without a marker
                                                     (Kafka: "no leader: likely deleted")
UNSUPPORTED_FOR_MESSAGE_FORMAT, UNSUPPORTED_VERSION  done without a marker
NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(...),    retried after ``retry_backoff_ms``
REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, others
INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_     the producer or coordinator moved on: sending
FENCED                                               stops and the transaction is left as it is
==================================================== ===============================================

Completion is written through ``complete(pending)``; COORDINATOR_NOT_AVAILABLE retries it, any other
error drops it (the coordinator lost the partition; whoever loads it completes the transaction).
In a cluster a marker counts once it is committed (Kafka writes markers with acks=all): with a
``confirm(topic, partition, producer id)`` function the channel writes CompleteCommit/CompleteAbort
only after every marker it wrote is confirmed (NONE). ``confirm`` answers at once (an error code) or
with a future of one (the high watermark passing the marker, or the answer of the broker it was sent
to); the channel goes on when the last future is done, nothing polls. An error (the partition's
leadership moved, no answer: the marker may be lost) writes that marker again after
``retry_backoff_ms``.
A coordinator restarted in PrepareCommit/PrepareAbort hands the transaction back to this channel
after loading, which writes every marker again (a second marker for a transaction a partition has
already ended changes nothing there) and completes it. On a single node every marker is written
synchronously; retries run on the coordinator's timers.

Loop-only, not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from tidelog.coordinator.runtime import Timers
from tidelog.coordinator.txn.metadata import TransactionMetadata, TxnTransitMetadata
from tidelog.errors import ErrorCode

log = logging.getLogger(__name__)

#: (topic, partition, producer id, producer epoch, coordinator epoch, commit) -> error code
MarkerWriteFn = Callable[[str, int, int, int, int, bool], ErrorCode]
#: (topic, partition, producer id) -> NONE (the last marker written there is committed), an error, or
#: a future of either (an asyncio future: done callbacks run on the loop; cancelled: the writer closed)
MarkerConfirmFn = Callable[[str, int, int], "ErrorCode | asyncio.Future[ErrorCode]"]

_DONE_WITHOUT_MARKER = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                                  ErrorCode.UNSUPPORTED_VERSION})
_FENCED = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})
DEFAULT_RETRY_BACKOFF_MS = 100


@dataclass(slots=True)
class PendingCompletion:
    """A decided transaction whose markers are being written. ``complete`` is the prepared
    CompleteCommit/CompleteAbort transition (the metadata's ``pending_state``)."""

    transactional_id: str
    coordinator_epoch: int
    commit: bool
    metadata: TransactionMetadata
    complete: TxnTransitMetadata
    #: partitions whose marker is written but not yet confirmed -> the confirmation
    unconfirmed: dict[tuple[str, int], ErrorCode | asyncio.Future[ErrorCode]] = field(default_factory=dict)


class TxnMarkerChannel:
    def __init__(self, write_marker: MarkerWriteFn, complete: Callable[[PendingCompletion], ErrorCode],
                 timers: Timers, retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS,
                 confirm: MarkerConfirmFn | None = None) -> None:
        self.write_marker = write_marker
        self.confirm = confirm
        self._complete = complete
        self.timers = timers
        self.retry_backoff_ms = retry_backoff_ms
        self.pending: dict[str, PendingCompletion] = {}

    def add(self, pending: PendingCompletion) -> None:
        """Start writing the markers of a decided transaction."""
        previous = self.pending.get(pending.transactional_id)
        if previous is not None and previous is not pending:
            log.info("replacing the pending completion of %s", pending.transactional_id)
        self.pending[pending.transactional_id] = pending
        self._send(pending)

    def remove(self, transactional_id: str) -> None:
        self.pending.pop(transactional_id, None)
        self.timers.cancel(_timer_key(transactional_id))

    def clear(self) -> None:
        for txn_id in list(self.pending):
            self.remove(txn_id)

    def _send(self, pending: PendingCompletion) -> None:
        if self.pending.get(pending.transactional_id) is not pending:
            return  # replaced or removed meanwhile
        md = pending.metadata
        retry = False
        for topic, partition in sorted(md.topic_partitions):
            code = self.write_marker(topic, partition, md.producer_id, md.producer_epoch, pending.coordinator_epoch,
                                     pending.commit)
            if code == ErrorCode.NONE or code in _DONE_WITHOUT_MARKER:
                if code != ErrorCode.NONE:
                    log.info("%s: no marker for %s-%d (%s): skipped", pending.transactional_id, topic, partition,
                             code.name)
                md.remove_partition((topic, partition))
                if code == ErrorCode.NONE and self.confirm is not None:
                    pending.unconfirmed[(topic, partition)] = self._confirmation(pending, topic, partition)
            elif code in _FENCED:
                log.info("%s: the marker for %s-%d failed with %s: no more markers are sent",
                         pending.transactional_id, topic, partition, code.name)
                self.remove(pending.transactional_id)
                return
            else:
                log.info("%s: the marker for %s-%d failed with %s; retrying", pending.transactional_id, topic,
                         partition, code.name)
                retry = True
        waiting = False
        for tp, confirmation in sorted(pending.unconfirmed.items()):
            state = _outcome(confirmation)
            if state is None:
                waiting = True
                continue
            del pending.unconfirmed[tp]
            if state in _DONE_WITHOUT_MARKER:
                continue
            if state in _FENCED:
                log.info("%s: the marker for %s-%d failed with %s: no more markers are sent",
                         pending.transactional_id, *tp, state.name)
                self.remove(pending.transactional_id)
                return
            if state != ErrorCode.NONE:
                log.info("%s: the marker for %s-%d was not committed (%s); writing it again",
                         pending.transactional_id, *tp, state.name)
                md.topic_partitions.add(tp)
                retry = True
        if retry:
            self._retry_later(pending)
        elif not waiting:
            self._write_completion(pending)
        # else: the last confirmation to arrive sends again (_confirmed)

    def _confirmation(self, pending: PendingCompletion, topic: str,
                      partition: int) -> ErrorCode | asyncio.Future[ErrorCode]:
        assert self.confirm is not None
        confirmation = self.confirm(topic, partition, pending.metadata.producer_id)
        if isinstance(confirmation, asyncio.Future) and not confirmation.done():
            confirmation.add_done_callback(lambda f: self._confirmed(pending, f))
        return confirmation

    def _confirmed(self, pending: PendingCompletion, confirmation: asyncio.Future) -> None:
        if confirmation.cancelled() or self.pending.get(pending.transactional_id) is not pending:
            return  # the writer closed, or the transaction was replaced or removed meanwhile
        if _timer_key(pending.transactional_id) in self.timers:
            return  # a retry is due: it looks at every confirmation
        if all(_outcome(c) is not None for c in pending.unconfirmed.values()):
            self._send(pending)

    def _write_completion(self, pending: PendingCompletion) -> None:
        code = self._complete(pending)
        if code == ErrorCode.COORDINATOR_NOT_AVAILABLE:
            self._retry_later(pending)
            return
        if code != ErrorCode.NONE:
            log.info("%s: completing the transaction failed with %s; left to whoever loads its partition",
                     pending.transactional_id, code.name)
        self.remove(pending.transactional_id)

    def _retry_later(self, pending: PendingCompletion) -> None:
        self.timers.schedule(_timer_key(pending.transactional_id), self.retry_backoff_ms, lambda: self._send(pending))


def _outcome(confirmation: ErrorCode | asyncio.Future[ErrorCode]) -> ErrorCode | None:
    """A confirmation's error code, None while it is not done (a failed future: NETWORK_EXCEPTION)."""
    if not isinstance(confirmation, asyncio.Future):
        return confirmation
    if not confirmation.done():
        return None
    if confirmation.cancelled() or confirmation.exception() is not None:
        return ErrorCode.NETWORK_EXCEPTION
    return confirmation.result()


def _timer_key(transactional_id: str) -> str:
    return f"txn-markers:{transactional_id}"


__all__ = ["DEFAULT_RETRY_BACKOFF_MS", "MarkerConfirmFn", "MarkerWriteFn", "PendingCompletion", "TxnMarkerChannel"]
