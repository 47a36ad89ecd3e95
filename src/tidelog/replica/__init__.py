"""The partitions this broker hosts: the one door to their logs (leadership, appends with acks and
min.insync.replicas, reads up to the high watermark, delayed fetches), the events of their logs and
the housekeeping that follows them. Between the coordinators (which write internal topics through it)
and the cluster metadata (whose changes it applies)."""

from tidelog.replica.events import LogEvents
from tidelog.replica.fetch import READ_COMMITTED, READ_UNCOMMITTED, PartitionFetch, PartitionRead
from tidelog.replica.housekeeping import LogHousekeeping
from tidelog.replica.manager import ReplicaManager
from tidelog.replica.purgatory import DelayedOperation, Purgatory

__all__ = [
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "DelayedOperation",
    "LogEvents",
    "LogHousekeeping",
    "PartitionFetch",
    "PartitionRead",
    "Purgatory",
    "ReplicaManager",
]
