"""AlterPartitionReassignments and ListPartitionReassignments on one broker: the checks of a request
(unknown topic or partition, empty, duplicate or unregistered replicas, cancelling what is not being
reassigned) and the empty listings; a reassignment to the replicas a partition already has changes
nothing and succeeds."""

from __future__ import annotations

from tests.oracle.wire.program import Program
from tests.oracle.wire.setup import create_topics
from tidelog.protocol.messages import AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest

TOPIC = "diff-reassign"


def add(program: Program) -> None:
    create_topics(program, "reassign", {TOPIC: (2, {})})
    A = AlterPartitionReassignmentsRequest

    def alter(topic: str, targets: dict[int, list[int] | None]) -> A:
        return A(timeout_ms=10_000, topics=[A.ReassignableTopic(name=topic, partitions=[
            A.ReassignablePartition(partition_index=p, replicas=r) for p, r in targets.items()])])

    api = A.API_KEY
    program.each_version(api, "unknown-topic", lambda v: alter("diff-reassign-none", {0: [0]}))
    program.each_version(api, "unknown-partition", lambda v: alter(TOPIC, {5: [0]}))
    program.each_version(api, "empty-replicas", lambda v: alter(TOPIC, {0: []}))
    program.each_version(api, "duplicate-replicas", lambda v: alter(TOPIC, {0: [0, 0]}))
    program.each_version(api, "unregistered-broker", lambda v: alter(TOPIC, {0: [0, 7]}))
    program.each_version(api, "negative-broker", lambda v: alter(TOPIC, {0: [-1]}))
    program.each_version(api, "cancel-none", lambda v: alter(TOPIC, {0: None}))
    program.each_version(api, "cancel-unknown-partition", lambda v: alter(TOPIC, {9: None}))
    program.each_version(api, "same-replicas", lambda v: alter(TOPIC, {0: [0], 1: [0]}))
    program.each_version(api, "mixed", lambda v: alter(TOPIC, {0: [0], 1: [3], 7: None}))

    L = ListPartitionReassignmentsRequest
    api = L.API_KEY
    program.each_version(api, "all", lambda v: L(topics=None))
    program.each_version(api, "named", lambda v: L(topics=[
        L.ListPartitionReassignmentsTopics(name=TOPIC, partition_indexes=[0, 1, 9]),
        L.ListPartitionReassignmentsTopics(name="diff-reassign-none", partition_indexes=[0])]))


__all__ = ["add"]
