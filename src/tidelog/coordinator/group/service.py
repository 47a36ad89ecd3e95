"""The group coordinator service: what the front ends call, one ``async`` method per group API (Kafka's
``GroupCoordinatorService``). Each method routes to the group's ``__consumer_offsets`` partition, runs
the operation there (:class:`~tidelog.coordinator.group.coordinator.GroupCoordinator` writes its
records at once) and returns once the partition's high watermark passes the writes the answer
reflects (:meth:`CoordinatorRuntime.run <tidelog.coordinator.runtime.CoordinatorRuntime.run>`, runtime
rule 6). Rules:

1. **Answered only once committed.** A write's answer, and a read of state that writes built
   (OffsetFetch, DescribeGroups, ConsumerGroupDescribe), waits for the partition's last write as of
   the moment the answer is ready. A JoinGroup or SyncGroup answer parked until another request's
   write (a JoinGroup completed by the leader's SyncGroup) waits for that write too, once given.
2. **Failures.** A write that is not committed in time (the leader lost its ISR or its leadership)
   raises the coordinator's :class:`~tidelog.errors.KafkaError` (NOT_COORDINATOR,
   COORDINATOR_NOT_AVAILABLE): the front end answers it as the API's error response. The write stays
   in the leader's memory and log (runtime rule 6).
3. **Single node.** Without replication a write is committed when it is appended; every method
   completes without waiting.

TubeMQ consumers are KIP-848 members: their heartbeats are :meth:`consumer_group_heartbeat`, their
commits :meth:`offset_commit` and their fetches :meth:`offset_fetch`; the TubeMQ master asks
:meth:`coordinates` (is this its active master) and the TubeMQ broker :meth:`consumer_group_members`
(who owns which partition).

Loop-only, not thread-safe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.coordinator import FetchGroup, GroupCoordinator
from tidelog.coordinator.group.group import CONSUMER, RequestInfo
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroupMember
from tidelog.coordinator.group.modern.consumer.group_type import ConsumerGroupType
from tidelog.coordinator.group.modern.consumer.manager import ConsumerGroupCoordinator
from tidelog.coordinator.group.modern.share.group import SHARE, ShareGroup
from tidelog.coordinator.group.modern.share.group_type import ShareGroupType
from tidelog.coordinator.group.modern.share.manager import ShareGroupCoordinator
from tidelog.coordinator.group.modern.streams.describe import describe_group, not_found
from tidelog.coordinator.group.modern.streams.group import STREAMS
from tidelog.coordinator.group.modern.streams.group_type import StreamsGroupType
from tidelog.coordinator.group.modern.streams.manager import HeartbeatOutcome, StreamsGroupCoordinator
from tidelog.coordinator.group.offsets import PartitionCommit
from tidelog.coordinator.share.persister import SharePartitionKey, SharePersister
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetDeleteResponse,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    StreamsGroupDescribeResponse,
    StreamsGroupHeartbeatRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)

log = logging.getLogger(__name__)

OffsetCodes = dict[tuple[str, int], ErrorCode]

T = TypeVar("T")


class GroupCoordinatorService:
    """The group APIs over one :class:`GroupCoordinator` (and its consumer group type, if built with one)."""

    def __init__(self, coordinator: GroupCoordinator, share_persister: SharePersister | None = None,
                 ready: Callable[[int], Awaitable[None]] | None = None) -> None:
        """``share_persister``: the share coordinator's state (share groups initialize and delete share
        partitions through it; none: share groups' partitions stay uninitialized, and unassigned).
        ``ready``: awaited before a call on a ``__consumer_offsets`` partition (the broker waits there,
        bounded, for a brand-new topic's first leaders and its load, as FindCoordinator does, for the
        callers that do not look their coordinator up first: TubeMQ, the console)."""
        self.ready = ready
        self.coordinator = coordinator
        self.runtime = coordinator.runtime
        consumer = coordinator.types.get(CONSUMER)
        self.consumer_groups: ConsumerGroupCoordinator | None = (
            consumer.manager if isinstance(consumer, ConsumerGroupType) else None)
        share = coordinator.types.get(SHARE)
        self.share_groups: ShareGroupCoordinator | None = share.manager if isinstance(share, ShareGroupType) else None
        streams = coordinator.types.get(STREAMS)
        self.streams_groups: StreamsGroupCoordinator | None = (
            streams.manager if isinstance(streams, StreamsGroupType) else None)
        self.share_persister = share_persister
        self._share_tasks: set[asyncio.Task[None]] = set()

    async def _run(self, partition: int, fn: Callable[[], T]) -> T:
        if self.ready is not None:
            await self.ready(partition)
        return await self.runtime.run(partition, fn)

    @property
    def active(self) -> bool:
        return self.coordinator.active

    def partition_for(self, group_id: str) -> int:
        """The group's ``__consumer_offsets`` partition (FindCoordinator routing)."""
        return self.coordinator.partition_for(group_id)

    def coordinates(self, group_id: str) -> bool:
        """Whether this broker coordinates ``group_id``: it leads the group's partition (loading it
        counts). Reflects leadership, not a write: answered at once."""
        try:
            self.runtime.check_owned(self.partition_for(group_id))
        except KafkaError as e:
            return e.code != ErrorCode.NOT_COORDINATOR
        return True

    async def _committed(self, partitions: Iterable[int]) -> None:
        for partition in set(partitions):
            await self.runtime.wait_committed(partition)

    async def _parked(self, partition: int, start: Any) -> Any:
        """Rule 1 for an answer given later: ``start(respond)`` runs the operation on ``partition``."""
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def respond(response: Any) -> None:
            if not answer.done():
                answer.set_result(response)

        await self._run(partition, lambda: start(respond))
        response = await answer
        await self.runtime.wait_committed(partition)  # the writes made while it was parked
        return response

    # ------------------------------------------------------------------------- classic protocol

    async def join_group(self, info: RequestInfo, request: JoinGroupRequest) -> JoinGroupResponse:
        """JoinGroup; answered when the join phase completes (and its writes are committed)."""
        return await self._parked(self.partition_for(request.group_id),
                                  lambda respond: self.coordinator.join_group(info, request, respond))

    async def sync_group(self, info: RequestInfo, request: SyncGroupRequest) -> SyncGroupResponse:
        """SyncGroup; answered once the leader's assignment is written and committed."""
        return await self._parked(self.partition_for(request.group_id),
                                  lambda respond: self.coordinator.sync_group(info, request, respond))

    async def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                        generation_id: int) -> HeartbeatResponse:
        return await self._run(self.partition_for(group_id), lambda: self.coordinator.heartbeat(
            group_id, member_id, group_instance_id, generation_id))

    async def leave_group(self, group_id: str, members: list[tuple[str, str | None, str | None]]
                          ) -> LeaveGroupResponse:
        """``members``: (member id, group instance id, reason) triples."""
        return await self._run(self.partition_for(group_id),
                                      lambda: self.coordinator.leave_group(group_id, members))

    # ---------------------------------------------------------------------------------- offsets

    async def offset_commit(self, info: RequestInfo, group_id: str, member_id: str, group_instance_id: str | None,
                            generation_or_epoch: int, commits: list[PartitionCommit],
                            retention_time_ms: int = -1) -> OffsetCodes:
        """OffsetCommit: the code of each partition; KafkaError when the whole request fails."""
        return await self._run(self.partition_for(group_id), lambda: self.coordinator.commit_offsets(
            info, group_id, member_id, group_instance_id, generation_or_epoch, commits, retention_time_ms))

    async def txn_offset_commit(self, info: RequestInfo, group_id: str, producer_id: int, producer_epoch: int,
                                member_id: str, group_instance_id: str | None, generation_id: int,
                                commits: list[PartitionCommit]) -> OffsetCodes:
        """TxnOffsetCommit: pending offsets of the producer's transaction (offsets.py rule 5)."""
        return await self._run(self.partition_for(group_id), lambda: self.coordinator.commit_transactional_offsets(
            info, group_id, producer_id, producer_epoch, member_id, group_instance_id, generation_id, commits))

    async def offset_fetch(self, group_id: str, topics: list[tuple[str, list[int]]] | None,
                           member_id: str | None = None, member_epoch: int = -1,
                           require_stable: bool = False) -> FetchGroup:
        """OffsetFetch for one group (``topics=None``: every committed offset)."""
        return await self._run(self.partition_for(group_id), lambda: self.coordinator.fetch_offsets(
            group_id, topics, member_id, member_epoch, require_stable))

    async def offset_delete(self, group_id: str, topics: list[tuple[str, list[int]]]) -> OffsetDeleteResponse:
        return await self._run(self.partition_for(group_id),
                                      lambda: self.coordinator.delete_offsets(group_id, topics))

    # ------------------------------------------------------------------------------------ admin

    async def list_groups(self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
                          ) -> list[ListGroupsResponse.ListedGroup]:
        return self.coordinator.list_groups(states_filter, types_filter)

    async def describe_groups(self, group_ids: Iterable[str], api_version: int
                              ) -> list[DescribeGroupsResponse.DescribedGroup]:
        ids = list(group_ids)
        described = self.coordinator.describe_groups(ids, api_version)
        await self._committed(self.partition_for(g) for g in ids)
        return described

    async def delete_groups(self, group_ids: Iterable[str]) -> list[DeleteGroupsResponse.DeletableGroupResult]:
        """DeleteGroups; an empty share group's share state is deleted through the persister first (a
        failure there is the group's error, and the group stays)."""
        ids = list(group_ids)
        failed: dict[str, ErrorCode] = {}
        for group_id in dict.fromkeys(ids):
            group = self.coordinator.groups.get(group_id)
            if isinstance(group, ShareGroup) and group.is_empty():
                code = await self._delete_share_state(group_id, group.share_partitions())
                if code != ErrorCode.NONE:
                    failed[group_id] = code
        if failed:
            ids = [g for g in ids if g not in failed]
            results = self.coordinator.delete_groups(ids) if ids else []
            await self._committed(self.partition_for(g) for g in ids)
            return results + [DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=int(c))
                              for g, c in failed.items()]
        results = self.coordinator.delete_groups(ids)
        await self._committed(self.partition_for(g) for g in ids)
        return results

    # -------------------------------------------------------------------- consumer groups (KIP-848)

    def _consumer_groups(self) -> ConsumerGroupCoordinator:
        if self.consumer_groups is None:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "this coordinator has no consumer groups")
        if not self.coordinator.active:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group coordinator is not available")
        return self.consumer_groups

    async def consumer_group_heartbeat(self, request: ConsumerGroupHeartbeatRequest, *, api_version: int,
                                       image: MetadataImage, client_id: str | None = "",
                                       client_host: str = "") -> ConsumerGroupHeartbeatResponse:
        """ConsumerGroupHeartbeat (join, heartbeat, leave); a KafkaError is the answer's error code."""
        consumer_groups = self._consumer_groups()
        partition = self.partition_for(request.group_id)
        response = await self._run(partition, lambda: self.runtime.apply(partition, lambda: consumer_groups.heartbeat(
            request, api_version=api_version, image=image, client_id=client_id, client_host=client_host)))
        assert response is not None
        return response

    async def consumer_group_describe(self, group_ids: Iterable[str], image: MetadataImage
                                      ) -> list[ConsumerGroupDescribeResponse.DescribedGroup]:
        """ConsumerGroupDescribe of valid (non-empty) ids, in order; NOT_COORDINATOR /
        COORDINATOR_LOAD_IN_PROGRESS for a group whose partition is not served here."""
        consumer_groups = self._consumer_groups()
        ids = list(group_ids)
        described: dict[str, ConsumerGroupDescribeResponse.DescribedGroup] = {}
        for group_id in ids:
            try:
                self.runtime.check_owned(self.partition_for(group_id))
            except KafkaError as e:
                described[group_id] = ConsumerGroupDescribeResponse.DescribedGroup(group_id=group_id,
                                                                                   error_code=int(e.code))
        valid = [g for g in ids if g not in described]
        described.update({d.group_id: d for d in consumer_groups.describe(valid, image)})
        await self._committed(self.partition_for(g) for g in valid)
        return [described[g] for g in ids]

    async def consumer_group_members(self, group_id: str) -> dict[str, ConsumerGroupMember]:
        """The members of consumer group ``group_id`` by member id, as the coordinator has them now
        (epoch, assigned partitions, partitions pending revocation; each member is immutable), or
        none when there is no such consumer group; answered once the writes they reflect are
        committed (rule 1). Ownership is not checked: a partition not served here has no groups."""
        consumer_groups = self._consumer_groups()
        group = consumer_groups.group(group_id)
        members = dict(group.members) if group is not None else {}
        await self.runtime.wait_committed(self.partition_for(group_id))
        return members

    # ---------------------------------------------------------------------- share groups (KIP-932)

    def _share_groups(self) -> ShareGroupCoordinator:
        if self.share_groups is None:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "this coordinator has no share groups")
        if not self.coordinator.active:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group coordinator is not available")
        return self.share_groups

    async def share_group_heartbeat(self, request: ShareGroupHeartbeatRequest, *, api_version: int,
                                    image: MetadataImage, client_id: str | None = "",
                                    client_host: str = "") -> ShareGroupHeartbeatResponse:
        """ShareGroupHeartbeat (join, heartbeat, leave); a KafkaError is the answer's error code. Share
        partitions the heartbeat found uninitialized are initialized in the background (manager rule 4)."""
        share_groups = self._share_groups()
        partition = self.partition_for(request.group_id)
        response = await self._run(partition, lambda: self.runtime.apply(partition, lambda: share_groups.heartbeat(
            request, api_version=api_version, image=image, client_id=client_id, client_host=client_host)))
        assert response is not None
        self._start_initialization(request.group_id)
        return response

    def _start_initialization(self, group_id: str) -> None:
        share_groups = self.share_groups
        if share_groups is None or self.share_persister is None:
            return
        state_epoch, pending = share_groups.take_initialization(group_id)
        if pending:
            self._share_task(self._initialize(group_id, state_epoch, pending))
        deleting = share_groups.take_deletion(group_id)
        if deleting:
            self._share_task(self._delete_deleted_topics(group_id, deleting))

    def _share_task(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._share_tasks.add(task)
        task.add_done_callback(self._share_tasks.discard)

    async def _delete_deleted_topics(self, group_id: str, deleting: dict[Any, tuple[str, frozenset[int]]]) -> None:
        """Manager rule 4: the share state of topics deleted from the cluster goes, then the group forgets them."""
        share_groups = self.share_groups
        assert share_groups is not None
        done, failed = [], []
        for topic_id, parts in deleting.items():
            ok = await self._delete_share_state(group_id, {topic_id: parts}) == ErrorCode.NONE
            (done if ok else failed).append(topic_id)
        partition = self.partition_for(group_id)
        try:
            await self._run(partition, lambda: self.runtime.apply(
                partition, lambda: share_groups.deleted(group_id, done, failed)))
        except KafkaError as e:
            share_groups.deleted(group_id, [], [*done, *failed])
            log.info("share group %s: deletion of share state not recorded: %s", group_id, e)

    async def _initialize(self, group_id: str, state_epoch: int,
                          pending: dict[Any, tuple[str, frozenset[int]]]) -> None:
        """Manager rule 4: initialize each share partition (start offset -1), then record which did."""
        persister = self.share_persister
        assert persister is not None and self.share_groups is not None
        share_groups = self.share_groups
        done: dict[Any, tuple[str, frozenset[int]]] = {}
        failed: dict[Any, tuple[str, frozenset[int]]] = {}
        for topic_id, (name, partitions) in pending.items():
            for p in sorted(partitions):
                try:
                    code = await persister.initialize(SharePartitionKey(group_id, topic_id, p), state_epoch, -1)
                except KafkaError as e:
                    code = e.code
                target = done if code == ErrorCode.NONE else failed
                target[topic_id] = (name, target.get(topic_id, (name, frozenset()))[1] | {p})
        partition = self.partition_for(group_id)
        try:
            await self._run(partition, lambda: self.runtime.apply(
                partition, lambda: share_groups.initialized(group_id, done, failed)))
        except KafkaError as e:  # not the coordinator any more: the next one initializes them again
            share_groups.initialized(group_id, {}, {**done, **failed})
            log.info("share group %s: initialization not recorded: %s", group_id, e)

    async def _delete_share_state(self, group_id: str, partitions: dict[Any, tuple[str, frozenset[int]]]) -> ErrorCode:
        if self.share_persister is None:
            return ErrorCode.NONE
        for topic_id, (_, ps) in partitions.items():
            for p in sorted(ps):
                try:
                    code = await self.share_persister.delete(SharePartitionKey(group_id, topic_id, p))
                except KafkaError as e:
                    code = e.code
                if code not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    return code
        return ErrorCode.NONE

    async def share_group_describe(self, group_ids: Iterable[str], image: MetadataImage
                                   ) -> list[ShareGroupDescribeResponse.DescribedGroup]:
        """ShareGroupDescribe of valid (non-empty) ids, in order; NOT_COORDINATOR /
        COORDINATOR_LOAD_IN_PROGRESS for a group whose partition is not served here."""
        share_groups = self._share_groups()
        ids = list(group_ids)
        described: dict[str, ShareGroupDescribeResponse.DescribedGroup] = {}
        for group_id in ids:
            try:
                self.runtime.check_owned(self.partition_for(group_id))
            except KafkaError as e:
                described[group_id] = ShareGroupDescribeResponse.DescribedGroup(group_id=group_id,
                                                                                error_code=int(e.code))
        valid = [g for g in ids if g not in described]
        described.update({d.group_id: d for d in share_groups.describe(valid, image)})
        await self._committed(self.partition_for(g) for g in valid)
        return [described[g] for g in ids]

    def share_group(self, group_id: str) -> ShareGroup:
        """The share group ``group_id`` on a partition served here; GROUP_ID_NOT_FOUND otherwise."""
        self.runtime.check_owned(self.partition_for(group_id))
        group = self._share_groups().group(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return group

    async def share_group_offsets(self, group_id: str, topics: list[tuple[Any, list[int]]] | None
                                  ) -> dict[tuple[Any, int], Any]:
        """DescribeShareGroupOffsets: the share state summary (a persister ``ShareState``) of each asked
        (topic id, partition), or of every initialized one (``topics`` None)."""
        group = self.share_group(group_id)
        await self.runtime.wait_committed(self.partition_for(group_id))
        wanted = ([(t, p) for t, ps in topics for p in ps] if topics is not None
                  else [(t, p) for t, (_, ps) in sorted(group.initialized.items()) for p in sorted(ps)])
        out: dict[tuple[Any, int], Any] = {}
        for topic_id, p in wanted:
            if topic_id not in group.initialized or p not in group.initialized[topic_id][1] or self.share_persister is None:
                out[(topic_id, p)] = None
                continue
            out[(topic_id, p)] = await self.share_persister.read_summary(SharePartitionKey(group_id, topic_id, p), -1)
        return out

    async def alter_share_group_offsets(self, group_id: str, offsets: dict[tuple[Any, str, int], int]) -> dict[
            tuple[Any, int], ErrorCode]:
        """AlterShareGroupOffsets (only while the group is empty: NON_EMPTY_GROUP): each (topic id, name,
        partition) gets a new start offset: its share state is initialized again at a higher state epoch."""
        group = self.share_group(group_id)
        if not group.is_empty():
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
        if self.share_persister is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no share coordinator")
        share_groups = self._share_groups()
        state_epoch = group.group_epoch + 1
        codes: dict[tuple[Any, int], ErrorCode] = {}
        done: dict[Any, tuple[str, frozenset[int]]] = {}
        for (topic_id, name, p), offset in offsets.items():
            try:
                code = await self.share_persister.initialize(SharePartitionKey(group_id, topic_id, p), state_epoch, offset)
            except KafkaError as e:
                code = e.code
            codes[(topic_id, p)] = code
            if code == ErrorCode.NONE:
                done[topic_id] = (name, done.get(topic_id, (name, frozenset()))[1] | {p})
        partition = self.partition_for(group_id)
        await self._run(partition, lambda: self.runtime.apply(partition, lambda: share_groups.record_initialized(
            group_id, done)))
        return codes

    async def delete_share_group_offsets(self, group_id: str, topic_ids: dict[Any, str]) -> dict[Any, ErrorCode]:
        """DeleteShareGroupOffsets (only while the group is empty): every share partition of each topic
        forgets its state; the topics leave the group's initialized partitions."""
        group = self.share_group(group_id)
        if not group.is_empty():
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
        share_groups = self._share_groups()
        codes: dict[Any, ErrorCode] = {}
        gone: dict[Any, tuple[str, frozenset[int]]] = {}
        for topic_id, _name in topic_ids.items():
            parts = group.share_partitions().get(topic_id)
            if parts is None:
                codes[topic_id] = ErrorCode.NONE
                continue
            codes[topic_id] = await self._delete_share_state(group_id, {topic_id: parts})
            if codes[topic_id] == ErrorCode.NONE:
                gone[topic_id] = parts
        partition = self.partition_for(group_id)
        await self._run(partition, lambda: self.runtime.apply(partition, lambda: share_groups.forget_partitions(
            group_id, gone)))
        return codes

    # ---------------------------------------------------------------------- streams groups (KIP-1071)

    def _streams_groups(self) -> StreamsGroupCoordinator:
        if self.streams_groups is None:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "this coordinator has no streams groups")
        if not self.coordinator.active:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group coordinator is not available")
        return self.streams_groups

    async def streams_group_heartbeat(self, request: StreamsGroupHeartbeatRequest, *, api_version: int,
                                      image: MetadataImage, client_id: str | None = "",
                                      client_host: str = "") -> HeartbeatOutcome:
        """StreamsGroupHeartbeat (join, heartbeat, leave): the answer and the internal topics the topology
        misses (the caller creates them); a KafkaError is the answer's error code."""
        streams_groups = self._streams_groups()
        partition = self.partition_for(request.group_id)
        outcome = await self._run(partition, lambda: self.runtime.apply(partition, lambda: streams_groups.heartbeat(
            request, api_version=api_version, image=image, client_id=client_id, client_host=client_host)))
        assert outcome is not None
        return outcome

    async def streams_group_describe(self, group_ids: Iterable[str], image: MetadataImage,
                                     include_description: bool = False
                                     ) -> list[StreamsGroupDescribeResponse.DescribedGroup]:
        """StreamsGroupDescribe of valid (non-empty) ids, in order; NOT_COORDINATOR /
        COORDINATOR_LOAD_IN_PROGRESS for a group whose partition is not served here."""
        streams_groups = self._streams_groups()
        ids = list(group_ids)
        described: dict[str, StreamsGroupDescribeResponse.DescribedGroup] = {}
        for group_id in ids:
            try:
                self.runtime.check_owned(self.partition_for(group_id))
            except KafkaError as e:
                described[group_id] = StreamsGroupDescribeResponse.DescribedGroup(group_id=group_id,
                                                                                  error_code=int(e.code))
                continue
            group = streams_groups.group(group_id)
            described[group_id] = (describe_group(group, image, include_description) if group is not None
                                   else not_found(group_id, group_id in self.coordinator.groups))
        await self._committed(self.partition_for(g) for g in ids)
        return [described[g] for g in ids]

    async def stop_share_tasks(self) -> None:
        for task in list(self._share_tasks):
            task.cancel()
        if self._share_tasks:
            await asyncio.gather(*self._share_tasks, return_exceptions=True)


__all__ = ["GroupCoordinatorService", "OffsetCodes"]
