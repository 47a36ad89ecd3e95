"""TubeMQ answers only once committed: the one place the TubeMQ front end waits for the ISR.

Rules (those of the Kafka front end's coordinator APIs and acks=all Produce, docs/cluster.md):

1. **Coordinator state.** A TubeMQ request that wrote a group's coordinator state (a consumer's
   register, heartbeat or close at the master; a partition's register, unregister, getMessages or
   commit at the broker service, which may commit an offset) or whose answer reflects it (ownership
   checks) is answered once the high watermark of the group's ``__consumer_offsets`` partition
   passes the *last* coordinator write to it: :func:`when_committed`. A wait that fails (the write
   did not reach the ISR within ``offsets.commit.timeout.ms``, or leadership moved) answers the
   coordinator error as TubeMQ's code (:func:`~tidelog.server.tubemq.balancer.tube_error`: 503
   SERVICE_UNAVAILABLE for NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE), never success.
2. **Messages.** A sendMessageP2B is answered once every in-sync replica has the message (acks=all),
   bounded by the request's timeout: :func:`when_replicated`; a failed wait answers 503.
3. **Single node.** Nothing waits: the high watermark is the log end, both functions return the
   response itself and the dispatcher answers at once. In cluster mode they return an awaitable the
   dispatcher awaits before it answers (TubeMQ clients match responses by serial number, so other
   requests of the connection are answered meanwhile).
4. **The active master.** A consumer's master requests go to the broker that coordinates its group
   (:func:`coordinates`); the master service of another broker answers them as a TubeMQ standby
   master does (:mod:`.master`), so a client that lists every broker's master finds the active one.

Only :func:`when_committed` touches the coordinator runtime's commit wait (``is_committed`` /
``committed``), and :func:`coordinates` its ownership check (``check_owned``). Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from tidelog.coordinator.group import GroupCoordinator
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.replica.manager import ReplicaManager
from tidelog.server.tubemq.balancer import tube_error

T = TypeVar("T")
#: What a handler that may wait returns: its response, or an awaitable of it (cluster mode).
Answer = T | Awaitable[T]

#: How long a message waits for the ISR when its request names no timeout (the Java client's default).
DEFAULT_TIMEOUT_MS = 10_000


def when_committed(groups: GroupCoordinator, group: str, response: T,
                   on_failed: Callable[[], None] | None = None) -> Answer[T]:
    """Rule 1: ``response``, once the coordinator writes to ``group``'s partition are committed;
    ``on_failed`` runs when the wait fails (what the response would have handed out is taken back)."""
    runtime = groups.runtime
    partition = groups.partition_for(group)
    if runtime.is_committed(partition):
        return response

    async def committed() -> T:
        code = await runtime.committed(partition)
        if code != ErrorCode.NONE:
            if on_failed is not None:
                on_failed()
            raise tube_error(KafkaError(code), f"group {group}: the coordinator's write did not reach the in-sync "
                             "replicas")
        return response

    return committed()


def coordinates(groups: GroupCoordinator, group: str) -> bool:
    """Rule 4: whether this broker coordinates ``group`` (leads its ``__consumer_offsets`` partition)."""
    try:
        groups.runtime.check_owned(groups.partition_for(group))
    except KafkaError as e:
        return e.code != ErrorCode.NOT_COORDINATOR
    return True


def when_replicated(replicas: ReplicaManager, topic: str, partition: int, end_offset: int, timeout_ms: int,
                    response: T) -> Answer[T]:
    """Rule 2: ``response``, once every in-sync replica of ``topic``-``partition`` has ``end_offset``."""
    if not replicas.needs_acks_wait(topic, partition, -1):
        return response

    async def replicated() -> T:
        code = await replicas.wait_for_acks(topic, partition, end_offset, timeout_ms if timeout_ms > 0
                                            else DEFAULT_TIMEOUT_MS)
        if code != ErrorCode.NONE:
            raise TubeError(TubeErrorCode.SERVICE_UNAVAILABLE,
                            f"Put message failed: {code.name}: the message did not reach the in-sync replicas")
        return response

    return replicated()


__all__ = ["DEFAULT_TIMEOUT_MS", "Answer", "coordinates", "when_committed", "when_replicated"]
