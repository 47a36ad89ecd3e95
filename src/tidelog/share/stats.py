"""What happened to the records of one share partition, counted for the metrics (docs/metrics.md "Share
groups").

Plain integers a :class:`~tidelog.share.partition.SharePartition` adds to as it acquires, acknowledges,
expires and releases records (a few additions per fetch or acknowledgement, not per record), read by the
metrics collector when Prometheus scrapes. The manager keeps one per share partition for the broker's
life, so a count never goes down when a share partition is dropped and built again (a leadership change).

Kafka's names where it has them: acknowledgements per type are its ``RecordAcknowledgementsPerSec``
(``ackType`` Accept, Release, Reject, Renew; broker-wide in Kafka, per share partition here), lock
expiries its ``AcquisitionLockTimeoutPerSec`` (per share partition, as here).
"""

from __future__ import annotations

#: Acknowledgement types counted, by their wire value (AckType), as Kafka's ``ackType`` tag spells them.
#: GAP (0) is not counted, as in Kafka: it marks offsets without a record.
ACK_TYPE_NAMES = {1: "Accept", 2: "Release", 3: "Reject", 4: "Renew"}

#: Why a record was archived: its delivery count reached ``share.delivery.count.limit``; a consumer
#: rejected it; or it was never deliverable (a control record, an aborted transaction's record under
#: read_committed, an offset the log no longer has, a GAP acknowledgement).
ARCHIVE_REASONS = ("delivery_count_limit", "rejected", "not_deliverable")


class ShareStats:
    """Counters of one share partition (group, topic, partition)."""

    __slots__ = ("acknowledged", "acquired", "archived", "dead_letter_failures", "dead_lettered", "group_id",
                 "lock_timeouts", "partition", "redelivered", "released_on_leave", "topic")

    def __init__(self, group_id: str, topic: str, partition: int) -> None:
        self.group_id, self.topic, self.partition = group_id, topic, partition
        self.acquired = 0  # records acquired (every delivery)
        self.redelivered = 0  # of those, records acquired again (delivery count above 1)
        self.acknowledged = dict.fromkeys(ACK_TYPE_NAMES, 0)  # records acknowledged, by type
        self.lock_timeouts = 0  # records whose acquisition lock expired
        self.released_on_leave = 0  # records released because their member left or its connection closed
        self.archived = dict.fromkeys(ARCHIVE_REASONS, 0)
        self.dead_lettered = 0  # records written to the group's dead-letter queue (KIP-1191)
        self.dead_letter_failures = 0  # dead-letter writes that failed (their records archived all the same)


__all__ = ["ACK_TYPE_NAMES", "ARCHIVE_REASONS", "ShareStats"]
