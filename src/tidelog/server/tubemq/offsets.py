"""TubeMQ consume offsets: committed ones in the group coordinator's offset store (the one Kafka's
consumers and ``tidelog groups describe`` read), tentative ones in memory, as TubeMQ's broker keeps them.

Rules (TubeMQ's DefaultOffsetManager, in Kafka offsets):

1. **Registering** a partition loads its offset: the group's committed offset if it has one, else
   the log start offset (``readStatus`` 0), or the end of the log when the consumer asks to start
   from the maximum (``readStatus`` 1 on a first registration, 2 always). An offset the request
   names (``currOffset``, a TubeMQ offset) wins and is clamped into the log. A loaded offset that
   differs from the committed one is committed at once. The tentative offset is dropped.
2. **Fetching** reads from the committed offset, after committing the tentative one first when the
   request says the last pack was consumed (``lastPackConsumed``); otherwise the last pack is read
   again (rolled back). A start below the log start moves up to it, one past the end moves back to
   the end, and either is committed. After a read the tentative offset is the offset after the last
   batch read; a read that found batches but no message for the consumer (all filtered out, or
   control records) commits it at once.
3. **Committing** (consumerCommitC2B, unregistering with ``readStatus`` 0) commits the tentative
   offset; ``lastPackConsumed=false`` (or ``readStatus`` 1) drops it.

Commits go through the group service's
:meth:`~tidelog.coordinator.group.service.GroupCoordinatorService.offset_commit` as the member's
OffsetCommit at its current epoch (so they are validated as any KIP-848 member's are), and committed
offsets are read with its
:meth:`~tidelog.coordinator.group.service.GroupCoordinatorService.offset_fetch`, the calls Kafka's
OffsetCommit and OffsetFetch handlers make: each returns once the write it made or reflects is
committed (in cluster mode: in the ISR of the group's ``__consumer_offsets`` partition). Loop-only,
not thread-safe.
"""

from __future__ import annotations

from tidelog.coordinator.group import PartitionCommit, RequestInfo
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.server.tubemq.balancer import tube_error

READ_NORMAL = 0
READ_FROM_MAX = 1
READ_FROM_MAX_ALWAYS = 2
#: OffsetCommit v9: what KIP-848 members send (the coordinator checks the member epoch).
_COMMIT_VERSION = 9

Key = tuple[str, str, int]  # group, topic, partition


class TubeOffsets:
    """Committed and tentative offsets of TubeMQ consumers (see the module rules)."""

    def __init__(self, groups: GroupCoordinatorService) -> None:
        self.groups = groups
        self.tentative: dict[Key, int] = {}

    async def committed(self, group: str, topic: str, partition: int) -> int | None:
        """The group's committed offset of ``topic``-``partition`` (None: none)."""
        try:
            fetched = await self.groups.offset_fetch(group, [(topic, [partition])])
        except KafkaError as e:
            raise tube_error(e, f"offset of {topic}:{partition} in group {group}") from None
        if fetched.error_code != ErrorCode.NONE:
            raise tube_error(KafkaError(ErrorCode(fetched.error_code)), f"offset of {topic}:{partition} in group "
                             f"{group}")
        offset = fetched.topics[0].partitions[0].committed_offset
        return offset if offset >= 0 else None

    async def load(self, key: Key, member: tuple[str, int], read_status: int, requested: int | None,
             log_start: int, log_end: int) -> int:
        """Rule 1: the offset a registration starts from (committed when it changed)."""
        group, topic, partition = key
        self.tentative.pop(key, None)
        committed = await self.committed(group, topic, partition)
        if requested is not None and requested >= 0:
            offset = min(max(requested, log_start), log_end)
        elif read_status == READ_FROM_MAX_ALWAYS or (read_status == READ_FROM_MAX and committed is None):
            offset = log_end
        elif committed is None:
            offset = log_start
        else:
            offset = min(max(committed, log_start), log_end)
        if offset != committed:
            await self.commit(key, member, offset)
        return offset

    async def start_of_fetch(self, key: Key, member: tuple[str, int], last_pack_consumed: bool,
                       log_start: int, log_end: int) -> int:
        """Rule 2: where a fetch reads from."""
        pending = self.tentative.pop(key, None)
        offset = await self.committed(*key)
        if last_pack_consumed and pending is not None and pending != offset:
            await self.commit(key, member, pending)
            offset = pending
        if offset is None:
            offset = log_start
            await self.commit(key, member, offset)
        elif not log_start <= offset <= log_end:
            offset = min(max(offset, log_start), log_end)
            await self.commit(key, member, offset)
        return offset

    async def after_fetch(self, key: Key, member: tuple[str, int], next_offset: int, delivered: int) -> None:
        """Rule 2: the tentative offset after a read (committed at once when nothing was delivered)."""
        if delivered:
            self.tentative[key] = next_offset
        elif next_offset != await self.committed(*key):
            await self.commit(key, member, next_offset)

    async def confirm(self, key: Key, member: tuple[str, int], consumed: bool) -> int | None:
        """Rule 3: commit (or drop) the tentative offset; returns the committed offset."""
        pending = self.tentative.pop(key, None)
        if consumed and pending is not None and pending != await self.committed(*key):
            await self.commit(key, member, pending)
        return await self.committed(*key)

    def forget(self, key: Key) -> None:
        self.tentative.pop(key, None)

    async def commit(self, key: Key, member: tuple[str, int], offset: int) -> None:
        """Write ``offset`` as ``member`` (client id, member epoch); TubeError if the coordinator refuses."""
        group, topic, partition = key
        client_id, epoch = member
        try:
            codes = await self.groups.offset_commit(RequestInfo(client_id, "", _COMMIT_VERSION), group, client_id, None,
                                                    epoch, [PartitionCommit(topic, partition, offset)])
        except KafkaError as e:
            if e.code in (ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
                raise TubeError(TubeErrorCode.HB_NO_NODE, f"cannot commit {topic}:{partition} for {client_id}: "
                                f"{e.message or e.code.name}") from None
            raise tube_error(e, f"commit of {topic}:{partition} in group {group}") from None
        code = codes.get((topic, partition), ErrorCode.NONE)
        if code != ErrorCode.NONE:
            raise TubeError(TubeErrorCode.INTERNAL_SERVER_ERROR, f"commit of {topic}:{partition} failed: {code.name}")


__all__ = ["READ_FROM_MAX", "READ_FROM_MAX_ALWAYS", "READ_NORMAL", "TubeOffsets"]
