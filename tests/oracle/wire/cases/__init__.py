"""The requests of the wire-level differential suite, one module per API family.

:func:`build` assembles them into one :class:`~tests.oracle.wire.program.Program`, in a fixed order
(each family creates the topics and groups it uses, under its own names), so both brokers see the
same requests in the same order.
"""

from __future__ import annotations

import time

from tests.oracle.wire.cases import (
    client_quota,
    cluster,
    config,
    consumer_group,
    delegation_token,
    features,
    generated,
    group,
    offset,
    reassignment,
    record,
    scram,
    share_group,
    topic,
)
from tests.oracle.wire.program import Program
from tests.oracle.wire.setup import wait_for_coordinator, wait_for_group_partition, wait_for_producer_ids

FAMILIES = (generated, cluster, topic, record, config, group, offset, consumer_group, scram, client_quota,
            reassignment, delegation_token, share_group, features)


def build(kafka_ranges: dict[int, tuple[int, int]], tidelog_ranges: dict[int, tuple[int, int]],
          now_ms: int | None = None) -> Program:
    """The whole program. ``now_ms`` anchors record timestamps (the same for both brokers)."""
    program = Program(kafka_ranges, tidelog_ranges)
    program.now_ms = now_ms if now_ms is not None else (int(time.time()) // 60) * 60_000
    wait_for_coordinator(program, "start", "diff-start")
    wait_for_group_partition(program, "empty-group-id", "")
    wait_for_producer_ids(program)
    for family in FAMILIES:
        family.add(program)
    return program


__all__ = ["FAMILIES", "build"]
