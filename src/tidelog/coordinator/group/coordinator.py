"""The group coordinator: every group of the broker, their committed offsets, and the operations the
group APIs call. This broker coordinates every group; a group's records go to partition
``abs(java_string_hash(group_id)) % partitions`` of ``__consumer_offsets``.

Public API (what the group coordinator service, tools and tests use; clients' requests reach it through
:class:`~tidelog.coordinator.group.service.GroupCoordinatorService`, which awaits each write's commit)::

    coordinator = GroupCoordinator(GroupConfig.from_broker_config(cfg), clock, writer, schedule,
                                   group_types=[ConsumerGroupType], image_source=lambda: store.image)
    coordinator.load(partitions)          # replay __consumer_offsets at start-up; starts offset expiry
    coordinator.partition_for(group_id)   # FindCoordinator routing
    coordinator.groups                    # GroupRegistry: group id -> Group (ClassicGroup, or a group type's)
    coordinator.types                     # group type name -> the GroupType built for it ("consumer")
    coordinator.offsets                   # OffsetStore: committed offsets, by group/topic/partition
    coordinator.runtime                   # CoordinatorRuntime: writes, commits, timers, clock
    join_group / sync_group / heartbeat / leave_group          the classic protocol (classic/manager.py)
    commit_offsets / fetch_offsets / delete_offsets            offsets (any group type)
    commit_transactional_offsets / complete_transaction        TxnOffsetCommit and its marker (offsets.py rule 5)
    list_groups / describe_groups / delete_groups              admin
    cleanup_group_metadata()              # one offsets-expiry pass (also runs on its own timer)
    close()                               # parked requests get NOT_COORDINATOR; timers stop

Each operation writes its records now (``runtime.apply``); the answer may reflect writes the high
watermark has not passed yet, which is why clients are answered through the service.

Group types besides classic (:mod:`tidelog.coordinator.group.group_type`): the coordinator is built
with them (``group_types``: factories called once with a ``GroupContext``), and they are fixed from
then on:

1. **The group contract.** A group type's groups subclass :class:`~tidelog.coordinator.group.group.Group`
   and set ``group_type`` (``"consumer"``). Everything group-type-aware here goes through it:
   ``state_name()`` / ``is_in_states()`` / ``listed_group()`` (ListGroups with state and type filters),
   ``validate_offset_commit(member_id, instance_id, generation_or_member_epoch, api_version)``
   (OffsetCommit; v9 is what KIP-848 members send; it may return a validator of each committed
   partition, run before any offset is written), ``validate_offset_fetch(member_id, member_epoch)``
   (OffsetFetch v9), ``validate_offset_delete()`` and ``is_subscribed_to(topic)`` (OffsetDelete),
   ``validate_delete()`` and ``tombstones()`` (DeleteGroups; the coordinator adds the offset
   tombstones), ``is_empty()`` and ``offsets_expire_from(commit_ts)`` (offset expiry and the
   deletion of groups left empty without offsets). DescribeGroups describes classic groups only
   (others: ``Dead``, or GROUP_ID_NOT_FOUND "Group X is not a classic group." from v6), as in Kafka.
   JoinGroup on an empty group of another type replaces it with a classic group (its ``tombstones()``
   are written first); on a non-empty one it goes to the type's ``classic_protocol``, or fails with
   INCONSISTENT_GROUP_PROTOCOL. SyncGroup, Heartbeat and LeaveGroup on a non-classic group go to that
   handler, or answer UNKNOWN_MEMBER_ID.
2. **Records.** The coordinator's record serde is one table built at construction: the classic
   record types and each group type's ``record_types``; its replay dispatch is one table too (offset
   commits, classic group metadata, and each type's ``replayers``, ``fn(partition, offset, record)``).
   Operations return :class:`~tidelog.coordinator.runtime.Result` and are written with
   ``runtime.apply(partition_for(group_id), op)``; timers with ``runtime.schedule(key, delay_ms,
   partition, op)``.
3. **Lifecycle.** Each type gets ``on_loaded(group_ids)`` after a partition's replay (schedule session
   timers) and ``on_unloaded()`` at shutdown (answer parked requests).

Rules: durable state (offsets, groups' existence and persisted metadata) changes only in
:meth:`replay`, which the runtime calls for written records and at load; classic rebalance
bookkeeping is soft state that the classic operations change directly (see classic/manager.py). Records are
appended before any response that depends on them is sent.

Concurrency: loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group import expiry
from tidelog.coordinator.group.classic.group import ClassicGroup
from tidelog.coordinator.group.classic.manager import ClassicGroupManager, join_error
from tidelog.coordinator.group.config import GroupConfig
from tidelog.coordinator.group.group import CLASSIC, CONSUMER, GroupRegistry, RequestInfo
from tidelog.coordinator.group.group_type import (
    ClassicProtocol,
    GroupContext,
    GroupType,
    GroupTypeFactory,
    ReplayerFn,
)
from tidelog.coordinator.group.offsets import (
    INVALID_OFFSET,
    NO_METADATA,
    OffsetStore,
    PartitionCommit,
    java_length,
)
from tidelog.coordinator.group.records import (
    CLASSIC_RECORD_TYPES,
    CoordinatorRecord,
    GroupMetadataKey,
    OffsetCommitKey,
    RecordSerde,
)
from tidelog.coordinator.runtime import CoordinatorRuntime, PartitionWriter, Result, partition_for
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    HeartbeatResponse,
    JoinGroupRequest,
    LeaveGroupResponse,
    ListGroupsResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
EXPIRATION_TIMER = "group-metadata-expiration"
KNOWN_GROUP_TYPES = ("classic", "consumer", "share", "streams")

FetchGroup = OffsetFetchResponse.OffsetFetchResponseGroup
FetchTopic = OffsetFetchResponse.OffsetFetchResponseTopics
FetchPartition = OffsetFetchResponse.OffsetFetchResponsePartitions


class GroupCoordinator:
    def __init__(self, config: GroupConfig, clock: Clock, writer: PartitionWriter,
                 schedule: Callable[[float, Callable[[], None]], Any] | None = None, *,
                 num_partitions: int | None = None,
                 group_types: Iterable[GroupTypeFactory] = (),
                 image_source: Callable[[], MetadataImage] | None = None,
                 topic_exists: Callable[[str], bool] | None = None) -> None:
        """``group_types``: the group types served besides classic groups (module docstring);
        ``image_source()``: the current metadata image, for them. ``topic_exists(name)``, when given,
        lets the expiry pass delete the offsets of topics that no longer exist (Kafka deletes them
        when the topic is deleted)."""
        self.config = config
        self.clock = clock
        self.num_partitions = num_partitions or config.offsets_topic_num_partitions
        self.groups = GroupRegistry()
        self.offsets = OffsetStore()
        self.runtime = CoordinatorRuntime(clock, writer, self.replay, self._serialize, self._deserialize, schedule,
                                          replay_marker=self._replay_transaction_marker,
                                          write_timeout_ms=config.offsets_commit_timeout_ms)
        self.classic = ClassicGroupManager(self.groups, self.runtime, config, clock, self.partition_for)
        context = GroupContext(config, clock, self.runtime, self.groups, self.partition_for, self.classic,
                               image_source)
        self.types: dict[str, GroupType] = {}
        record_types = list(CLASSIC_RECORD_TYPES)
        self._replayers: dict[type, ReplayerFn] = {
            OffsetCommitKey: self._replay_offset_commit,
            GroupMetadataKey: lambda partition, offset, record: self.classic.replay(record.key, record.value),
        }
        for factory in group_types:
            group_type = factory(context)
            if group_type.group_type in self.types or group_type.group_type == CLASSIC:
                raise ValueError(f"group type {group_type.group_type} given twice")
            self.types[group_type.group_type] = group_type
            record_types += group_type.record_types
            for key_cls, fn in group_type.replayers.items():
                if key_cls in self._replayers:
                    raise ValueError(f"two replayers for {key_cls.__name__}")
                self._replayers[key_cls] = fn
        self._serde = RecordSerde(record_types)
        self.active = True
        self.topic_exists = topic_exists

    def _serialize(self, record: CoordinatorRecord) -> tuple[bytes, bytes | None]:
        return self._serde.serialize(record)

    def _deserialize(self, key: bytes, value: bytes | None) -> CoordinatorRecord:
        return self._serde.deserialize(key, value)

    def _classic_for(self, group_id: str, joining: bool = False) -> ClassicProtocol:
        group = self.groups.get(group_id)
        if joining and group is not None and not group.classic_joinable:
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                             f"Group {group_id} is a {group.group_type} group: it has no classic members.")
        group_type = self.types.get(group.group_type) if group is not None else None
        handler = group_type.classic_protocol if group_type is not None else None
        if handler is None or group is None or (joining and group.is_empty()):
            return self.classic
        return handler

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    # ---------------------------------------------------------------------------- replay, load

    def replay(self, partition: int, offset: int, producer_id: int, record: CoordinatorRecord) -> None:
        if type(record.key) is OffsetCommitKey:  # the one replay that needs the batch's producer id
            self._replay_offset_commit(partition, offset, record, producer_id)
            return
        fn = self._replayers.get(type(record.key))
        if fn is None:
            log.warning("no replayer for %s; record at %d of partition %d ignored", type(record.key).__name__,
                        offset, partition)
            return
        fn(partition, offset, record)

    def _replay_offset_commit(self, partition: int, offset: int, record: CoordinatorRecord,
                              producer_id: int = -1) -> None:
        key: OffsetCommitKey = record.key
        if record.value is not None and key.group not in self.groups:
            # Offsets without a group: a "simple" group (manual assignment or admin commits).
            self.groups[key.group] = ClassicGroup(key.group, self.clock)
        self.offsets.replay(offset, key, record.value, producer_id)

    def complete_transaction(self, partition: int, offset: int, producer_id: int, commit: bool) -> None:
        """A transaction marker was written to ``partition`` of __consumer_offsets: the producer's
        pending offsets become committed, or are dropped. A partition being loaded reads it back from
        its log instead (loader rule 2)."""
        if not self.runtime.is_loading(partition):
            self._replay_transaction_marker(partition, offset, producer_id, commit)

    def _replay_transaction_marker(self, partition: int, offset: int, producer_id: int, commit: bool) -> None:
        committed = self.offsets.replay_end_transaction_marker(producer_id, commit)
        if committed:
            log.debug("producer %d committed %d transactional offsets", producer_id, committed)

    def load(self, partitions: Iterable[int], *, num_partitions: int | None = None, background: bool = False) -> int:
        """Replay the given partitions of __consumer_offsets, then start timers. Returns records replayed.
        ``num_partitions``: the topic's partition count, when it exists already (it decides where each
        group lives, whatever ``offsets.topic.num.partitions`` says now). ``background``: each
        partition loads in a task (runtime rule 3; COORDINATOR_LOAD_IN_PROGRESS meanwhile) and its
        groups' timers start when it is done."""
        if num_partitions is not None:
            self.num_partitions = num_partitions
        if background:
            for p in partitions:
                self.runtime.start_load(p, self._partition_loaded)
            return 0
        count = sum(self.runtime.load(p) for p in partitions)
        self.classic.on_loaded()
        for group_type in self.types.values():
            group_type.on_loaded()
        self.runtime.timers.schedule(EXPIRATION_TIMER, self.config.offsets_retention_check_interval_ms,
                                     self._expiration_tick)
        log.info("loaded %d groups and %d committed offsets from %d records", len(self.groups), len(self.offsets),
                 count)
        return count

    def _partition_loaded(self, partition: int, records: int) -> None:
        ids = [gid for gid in self.groups if self.partition_for(gid) == partition]
        self.classic.on_loaded(ids)
        for group_type in self.types.values():
            group_type.on_loaded(ids)
        log.info("loaded %d groups of __consumer_offsets partition %d from %d records", len(ids), partition, records)

    def unload(self, partitions: Iterable[int]) -> None:
        """This broker no longer leads these partitions of __consumer_offsets (a leader change while
        alive): their groups and offsets are dropped, parked requests answer NOT_COORDINATOR, their
        timers stop; requests for them answer NOT_COORDINATOR from now on (runtime rule 7)."""
        parts = set(partitions)
        gone = [gid for gid in self.groups if self.partition_for(gid) in parts]
        for gid in gone:
            group = self.groups[gid]
            if isinstance(group, ClassicGroup):
                for member in list(group.members.values()):
                    group.complete_join(member, join_error(ErrorCode.NOT_COORDINATOR, member.member_id))
                    group.complete_sync(member, SyncGroupResponse(error_code=ErrorCode.NOT_COORDINATOR))
            del self.groups[gid]
        for gid in set(gone) | {g for g in self.offsets.groups() if self.partition_for(g) in parts}:
            self.offsets.drop_group(gid)
        for p in parts:
            self.runtime.unload(p)
        log.info("unloaded %d groups of __consumer_offsets partitions %s", len(gone), sorted(parts))

    def close(self) -> None:
        self.active = False
        self.classic.on_unloaded()
        for group_type in self.types.values():
            group_type.on_unloaded()
        self.runtime.close()

    def poll(self) -> int:
        """Run due timers (tests with a ManualClock call this; the broker's loop timer does too)."""
        return self.runtime.poll()

    # --------------------------------------------------------------------------- classic protocol

    def _check_active(self) -> None:
        if not self.active:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group coordinator is shutting down")

    def join_group(self, info: RequestInfo, request: JoinGroupRequest, respond: Callable[[Any], None]) -> None:
        """JoinGroup; ``respond(JoinGroupResponse)`` is called now or when the join phase completes."""
        self._check_active()
        if not request.group_id:
            respond(join_error(ErrorCode.INVALID_GROUP_ID, request.member_id))
            return
        if not (self.config.group_min_session_timeout_ms <= request.session_timeout_ms
                <= self.config.group_max_session_timeout_ms):
            respond(join_error(ErrorCode.INVALID_SESSION_TIMEOUT, request.member_id))
            return
        try:
            self.runtime.apply(self.partition_for(request.group_id),
                             lambda: self._classic_for(request.group_id, joining=True).join_group(info, request, respond))
        except KafkaError as e:
            respond(join_error(e.code))

    def sync_group(self, info: RequestInfo, request: SyncGroupRequest, respond: Callable[[Any], None]) -> None:
        """SyncGroup; ``respond(SyncGroupResponse)`` now or once the leader's assignment is written."""
        self._check_active()
        if not request.group_id:
            respond(SyncGroupResponse(error_code=ErrorCode.INVALID_GROUP_ID))
            return
        partition = self.partition_for(request.group_id)
        try:
            self.runtime.check_owned(partition)
        except KafkaError as e:
            respond(SyncGroupResponse(error_code=int(e.code)))
            return
        try:
            self.runtime.apply(partition, lambda: self._classic_for(request.group_id).sync_group(info, request, respond))
        except KafkaError:
            pass  # the result's on_failed answered the parked members

    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                  generation_id: int) -> HeartbeatResponse:
        self._check_active()
        if not group_id:
            return HeartbeatResponse(error_code=ErrorCode.INVALID_GROUP_ID)
        try:
            return self.runtime.apply(self.partition_for(group_id), lambda: self._classic_for(group_id).heartbeat(
                group_id, member_id, group_instance_id, generation_id))
        except KafkaError as e:
            if e.code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                raise
            return HeartbeatResponse(error_code=ErrorCode.NONE)  # as Kafka: a loading group's heartbeat passes blindly

    def leave_group(self, group_id: str, members: list[tuple[str, str | None, str | None]]) -> LeaveGroupResponse:
        """``members``: (member id, group instance id, reason) triples."""
        self._check_active()
        if not group_id:
            return LeaveGroupResponse(error_code=ErrorCode.INVALID_GROUP_ID)
        try:
            return self.runtime.apply(self.partition_for(group_id),
                                    lambda: self._classic_for(group_id).leave_group(group_id, members))
        except KafkaError as e:
            return LeaveGroupResponse(error_code=int(e.code))

    # -------------------------------------------------------------------------------- offsets

    def commit_offsets(self, info: RequestInfo, group_id: str, member_id: str, group_instance_id: str | None,
                       generation_or_epoch: int, commits: list[PartitionCommit],
                       retention_time_ms: int = -1) -> dict[tuple[str, int], ErrorCode]:
        """OffsetCommit for partitions that exist. Returns the code of each; raises KafkaError when the
        whole request fails (group-level validation, or the append)."""
        self._check_active()

        def op() -> Result[dict[tuple[str, int], ErrorCode]]:
            group = self.groups.get(group_id)
            if group is None:
                if generation_or_epoch >= 0:
                    if info.api_version >= 9:
                        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
                    raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"group {group_id} does not exist")
            else:
                validator = group.validate_offset_commit(member_id, group_instance_id, generation_or_epoch,
                                                         info.api_version)
                _validate_partitions(validator, commits, self.config.offset_metadata_max_bytes)
                if isinstance(group, ClassicGroup):
                    self.classic.on_offset_commit(group, member_id)
            records, accepted = self.offsets.commit_records(group_id, commits, self.clock.wall_ms(),
                                                            retention_time_ms, self.config.offset_metadata_max_bytes)
            response = {tp: ErrorCode.NONE if ok else ErrorCode.OFFSET_METADATA_TOO_LARGE for tp, ok in accepted.items()}
            return Result(records, response)

        return self.runtime.apply(self.partition_for(group_id), op) or {}

    def commit_transactional_offsets(self, info: RequestInfo, group_id: str, producer_id: int, producer_epoch: int,
                                     member_id: str, group_instance_id: str | None, generation_id: int,
                                     commits: list[PartitionCommit]) -> dict[tuple[str, int], ErrorCode]:
        """TxnOffsetCommit (Kafka's commitTransactionalOffset): the offsets are written in a
        transactional batch of the producer and stay pending until its marker (offsets.py rule 5).
        Raises KafkaError when the whole request fails."""
        self._check_active()

        def op() -> Result[dict[tuple[str, int], ErrorCode]]:
            group = self.groups.get(group_id)
            # v6 (KIP-1251) has GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH; older versions ILLEGAL_GENERATION
            if group is None:
                if generation_id >= 0:
                    code = ErrorCode.GROUP_ID_NOT_FOUND if info.api_version >= 6 else ErrorCode.ILLEGAL_GENERATION
                    raise KafkaError(code, f"Group {group_id} not found." if info.api_version >= 6
                                     else f"group {group_id} does not exist")
            else:
                try:
                    validator = group.validate_offset_commit(member_id, group_instance_id, generation_id,
                                                             info.api_version, transactional=True)
                    _validate_partitions(validator, commits, self.config.offset_metadata_max_bytes)
                except KafkaError as e:
                    if e.code == ErrorCode.STALE_MEMBER_EPOCH and info.api_version < 6:
                        raise KafkaError(ErrorCode.ILLEGAL_GENERATION, e.message) from None
                    raise
            records, accepted = self.offsets.commit_records(group_id, commits, self.clock.wall_ms(), -1,
                                                            self.config.offset_metadata_max_bytes)
            response = {tp: ErrorCode.NONE if ok else ErrorCode.OFFSET_METADATA_TOO_LARGE for tp, ok in accepted.items()}
            return Result(records, response, producer_id=producer_id, producer_epoch=producer_epoch)

        return self.runtime.apply(self.partition_for(group_id), op) or {}

    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None, member_id: str | None = None,
                      member_epoch: int = -1, require_stable: bool = False) -> FetchGroup:
        """OffsetFetch for one group (the v8+ group form); ``topics=None`` means every committed offset.
        An unknown group is no error: its partitions have offset -1 (or there are none). With
        ``require_stable`` a partition with a pending transactional offset is UNSTABLE_OFFSET_COMMIT.
        NOT_COORDINATOR where this broker does not lead the group's partition (the service answers
        once the writes it reflects are committed: runtime rule 6)."""
        try:
            self.runtime.check_owned(self.partition_for(group_id))
        except KafkaError as e:
            return FetchGroup(group_id=group_id, error_code=int(e.code))
        group = self.groups.get(group_id)
        known = group is not None
        if group is not None:
            try:
                group.validate_offset_fetch(member_id, member_epoch)
            except KafkaError as e:
                if e.code != ErrorCode.GROUP_ID_NOT_FOUND:
                    return FetchGroup(group_id=group_id, error_code=int(e.code))
                known = False
        out: list[FetchTopic] = []
        if topics is None:
            if known:
                for topic, parts in self.offsets.group_offsets(group_id).items():
                    out.append(FetchTopic(name=topic, partitions=[
                        _unstable(p) if require_stable and self.offsets.has_pending(group_id, topic, p) else
                        FetchPartition(partition_index=p, committed_offset=om.offset,
                                       committed_leader_epoch=om.leader_epoch, metadata=om.metadata)
                        for p, om in parts.items()]))
            return FetchGroup(group_id=group_id, topics=out)
        for topic, partitions in topics:
            parts = []
            for p in partitions:
                om = self.offsets.get(group_id, topic, p) if known else None
                if require_stable and self.offsets.has_pending(group_id, topic, p):
                    parts.append(_unstable(p))
                elif om is None:
                    parts.append(FetchPartition(partition_index=p, committed_offset=INVALID_OFFSET,
                                                committed_leader_epoch=-1, metadata=NO_METADATA))
                else:
                    parts.append(FetchPartition(partition_index=p, committed_offset=om.offset,
                                                committed_leader_epoch=om.leader_epoch, metadata=om.metadata))
            out.append(FetchTopic(name=topic, partitions=parts))
        return FetchGroup(group_id=group_id, topics=out)

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]]) -> OffsetDeleteResponse:
        """OffsetDelete; raises KafkaError for group-level errors."""
        self._check_active()

        def op() -> Result[OffsetDeleteResponse]:
            group = self.groups.get(group_id)
            if group is None:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
            group.validate_offset_delete()
            records: list[CoordinatorRecord] = []
            out = []
            for topic, partitions in topics:
                if group.is_subscribed_to(topic):
                    codes = dict.fromkeys(partitions, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
                else:
                    codes = dict.fromkeys(partitions, ErrorCode.NONE)
                    records += self.offsets.delete_records(group_id, topic, partitions)
                out.append(OffsetDeleteResponse.OffsetDeleteResponseTopic(name=topic, partitions=[
                    OffsetDeleteResponse.OffsetDeleteResponsePartition(partition_index=p, error_code=int(c))
                    for p, c in codes.items()]))
            return Result(records, OffsetDeleteResponse(topics=out))

        response = self.runtime.apply(self.partition_for(group_id), op)
        assert response is not None
        return response

    # ---------------------------------------------------------------------------------- admin

    def list_groups(self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
                    ) -> list[ListGroupsResponse.ListedGroup]:
        """Every group; COORDINATOR_LOAD_IN_PROGRESS (a KafkaError) while a partition is loading, as Kafka."""
        if self.runtime.loads.loading:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "a __consumer_offsets partition is loading")
        states = {s.strip().lower() for s in states_filter}
        types = {t.strip().lower() for t in types_filter}
        return [g.listed_group() for g in self.groups.values()
                if (not states or g.is_in_states(states)) and (not types or g.group_type in types)]

    def describe_groups(self, group_ids: Iterable[str], api_version: int
                        ) -> list[DescribeGroupsResponse.DescribedGroup]:
        out = []
        for group_id in group_ids:
            try:
                self.runtime.check_owned(self.partition_for(group_id))
            except KafkaError as e:
                out.append(DescribeGroupsResponse.DescribedGroup(group_id=group_id, error_code=int(e.code)))
                continue
            group = self.groups.get(group_id)
            if isinstance(group, ClassicGroup):
                out.append(group.describe())
                continue
            described = DescribeGroupsResponse.DescribedGroup(group_id=group_id, group_state="Dead")
            if api_version >= 6:
                described.error_code = ErrorCode.GROUP_ID_NOT_FOUND
                described.error_message = (f"Group {group_id} not found." if group is None
                                           else f"Group {group_id} is not a classic group.")
            out.append(described)
        return out

    def delete_groups(self, group_ids: Iterable[str]) -> list[DeleteGroupsResponse.DeletableGroupResult]:
        """DeleteGroups: per group NONE, GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP; one write per partition."""
        self._check_active()
        by_partition: dict[int, list[str]] = {}
        for group_id in dict.fromkeys(group_ids):
            by_partition.setdefault(self.partition_for(group_id), []).append(group_id)
        results: dict[str, ErrorCode] = {}
        for partition, ids in by_partition.items():
            def op(ids: list[str] = ids) -> Result[dict[str, ErrorCode]]:
                records: list[CoordinatorRecord] = []
                codes: dict[str, ErrorCode] = {}
                for group_id in ids:
                    group = self.groups.get(group_id)
                    try:
                        if group is None:
                            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
                        group.validate_delete()
                    except KafkaError as e:
                        codes[group_id] = e.code
                        continue
                    records += self.offsets.delete_all_records(group_id)
                    records += group.tombstones()
                    codes[group_id] = ErrorCode.NONE
                return Result(records, codes)
            try:
                results.update(self.runtime.apply(partition, op) or {})
            except KafkaError as e:
                results.update(dict.fromkeys(ids, e.code))
        return [DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=int(c)) for g, c in results.items()]

    # --------------------------------------------------------------------------------- expiry

    def cleanup_group_metadata(self) -> int:
        """One expiry pass (:mod:`tidelog.coordinator.group.expiry`); returns the tombstones written."""
        return expiry.cleanup_group_metadata(self.groups, self.offsets, self.runtime, self.partition_for,
                                             self.clock.wall_ms(), self.config.offsets_retention_ms,
                                             self.topic_exists)

    def _expiration_tick(self) -> None:
        try:
            self.cleanup_group_metadata()
        finally:
            if self.active:
                self.runtime.timers.schedule(EXPIRATION_TIMER, self.config.offsets_retention_check_interval_ms,
                                             self._expiration_tick)


def _validate_partitions(validator: Callable[[str, int], None] | None, commits: list[PartitionCommit],
                         metadata_max_bytes: int) -> None:
    """Run a group's per-partition commit validator (streams groups' assignment epochs) over the committed
    partitions whose metadata is not too large, as Kafka does; the first refused one fails the request."""
    if validator is None:
        return
    for c in commits:
        if c.metadata is None or java_length(c.metadata) <= metadata_max_bytes:
            validator(c.topic, c.partition)


def _unstable(partition: int) -> FetchPartition:
    return FetchPartition(partition_index=partition, committed_offset=INVALID_OFFSET, committed_leader_epoch=-1,
                          metadata=NO_METADATA, error_code=int(ErrorCode.UNSTABLE_OFFSET_COMMIT))


__all__ = [
    "CLASSIC",
    "CONSUMER",
    "EXPIRATION_TIMER",
    "KNOWN_GROUP_TYPES",
    "OFFSETS_TOPIC",
    "GroupCoordinator",
]
