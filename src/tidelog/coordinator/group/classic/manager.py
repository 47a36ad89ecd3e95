"""The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, with their timers.

The flow, as Kafka's group coordinator runs it:

* **Join.** A member without an id gets one (``client.id-uuid``, or ``group.instance.id-uuid`` for a
  static member); from JoinGroup v4 a dynamic member first gets MEMBER_ID_REQUIRED with its new id
  and must join again with it (it is "pending" until then, and expires after a session timeout).
  Joins are parked: the group moves to PreparingRebalance and answers every member once all known
  members have rejoined, or when the rebalance timeout (the largest of the members') runs out, at which
  point dynamic members that did not rejoin are removed. A new (Empty) group waits
  ``group.initial.rebalance.delay.ms`` first, extended by each new member, up to the rebalance timeout.
  Completing the join phase bumps the generation, selects the protocol and answers: the leader gets
  every member's metadata, the others an empty list.
* **Sync.** The leader's SyncGroup carries the assignment. It is written to ``__consumer_offsets``
  (a GroupMetadata record) before anyone hears about it; then every member's parked SyncGroup gets its
  own assignment and the group is Stable. Members that do not sync within the rebalance timeout are
  removed and the group rebalances.
* **Heartbeat.** A member's session times out ``session.timeout.ms`` after its last heartbeat (or
  join/sync answer, or offset commit while Stable or PreparingRebalance); it is then removed and the
  group rebalances. New members waiting for their first join answer time out after 5 minutes.
* **Leave.** Removes members (by member id, or by instance id alone for static members) and
  rebalances (:mod:`~tidelog.coordinator.group.classic.leave`).

Classic-group metadata records are written with ``replay=False``: the operation changes the in-memory
group itself (as Kafka does; rebalance bookkeeping is soft state) and the record persists the outcome.
Loading replays them into Stable or Empty groups (:meth:`ClassicGroupManager.replay`), whose members
then have one session timeout to show up.

Concurrency: loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from tidelog.clock import Clock
from tidelog.coordinator.group.classic.group import (
    ClassicGroup,
    ClassicGroupState,
    ClassicMember,
    JoinCallback,
    SyncCallback,
    heartbeat_key,
    join_error,
    join_key,
    sync_key,
)
from tidelog.coordinator.group.classic.leave import ClassicLeave
from tidelog.coordinator.group.config import GroupConfig
from tidelog.coordinator.group.group import UNKNOWN_MEMBER_ID, GroupRegistry, RequestInfo
from tidelog.coordinator.group.records import GroupMetadataKey, GroupMetadataValue, group_metadata_record
from tidelog.coordinator.runtime import CoordinatorRuntime, Result
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import (
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

log = logging.getLogger(__name__)

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
MEMBER_ID_REQUIRED_FROM_VERSION = 4
SKIP_ASSIGNMENT_FROM_VERSION = 9


class ClassicGroupManager(ClassicLeave):
    """Runs the classic protocol over the coordinator's group registry. Loop-only."""

    def __init__(self, groups: GroupRegistry, runtime: CoordinatorRuntime, config: GroupConfig, clock: Clock,
                 partition_for: Callable[[str], int]) -> None:
        """``groups`` is the coordinator's registry of every group (shared, changed in place);
        ``config`` its GroupConfig; ``partition_for(group_id)`` the group's __consumer_offsets partition."""
        self.groups = groups
        self.runtime = runtime
        self.config = config
        self.clock = clock
        self.partition_for = partition_for

    # -------------------------------------------------------------------------------- helpers

    def group(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    def _schedule(self, key: str, delay_ms: int, group_id: str, op: Callable[[], Result | None]) -> None:
        self.runtime.schedule(key, delay_ms, self.partition_for(group_id), op)

    def _submit(self, group: ClassicGroup, result: Result) -> None:
        """Write a result produced inside a callback (after an append), logging a failure."""
        try:
            self.runtime.write(self.partition_for(group.group_id), result)
        except KafkaError as e:
            log.warning("group %s: follow-up write failed: %s", group.group_id, e)

    def reschedule_heartbeat(self, group: ClassicGroup, member: ClassicMember, timeout_ms: int | None = None) -> None:
        gid, mid = group.group_id, member.member_id
        self._schedule(heartbeat_key(gid, mid), member.session_timeout_ms if timeout_ms is None else timeout_ms, gid,
                       lambda: self.expire_heartbeat(gid, mid))

    # ----------------------------------------------------------------------------------- join

    def join_group(self, info: RequestInfo, request: JoinGroupRequest, respond: JoinCallback) -> Result:
        """JoinGroup (validated by the coordinator: group id, session timeout). ``respond`` gets the
        answer now or when the join phase completes."""
        group_id, member_id = request.group_id, request.member_id
        records = []
        existing = self.groups.get(group_id)
        if existing is not None and not isinstance(existing, ClassicGroup):
            if not existing.is_empty():
                respond(join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
                return Result()
            records = existing.tombstones()  # an empty group of another type becomes a classic group
            del self.groups[group_id]
        group = self.group(group_id)
        if group is None:
            if member_id != UNKNOWN_MEMBER_ID:
                respond(join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                return Result(records)
            group = ClassicGroup(group_id, self.clock)
            self.groups[group_id] = group
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            respond(join_error(ErrorCode.GROUP_MAX_SIZE_REACHED))
            result = Result()
        elif member_id == UNKNOWN_MEMBER_ID:
            result = self._join_new_member(info, request, group, respond)
        else:
            result = self._join_existing_member(info, request, group, respond)
        if records:
            # The tombstones of the replaced group are not replayed: it is already gone from memory.
            result.records[:0] = records
            result.replay = False
        return result

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.group_max_size
        if group.is_in(ClassicGroupState.EMPTY, ClassicGroupState.DEAD):
            return True
        if group.state is ClassicGroupState.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (member is not None and member.is_awaiting_join) or group.num_awaiting_join < max_size
        return member_id in group.members or len(group.members) < max_size

    @staticmethod
    def _protocols(request: JoinGroupRequest) -> list[tuple[str, bytes]]:
        return [(p.name, bytes(p.metadata)) for p in request.protocols]

    def _join_new_member(self, info: RequestInfo, request: JoinGroupRequest, group: ClassicGroup,
                         respond: JoinCallback) -> Result:
        if group.state is ClassicGroupState.DEAD:
            respond(join_error(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return Result()
        if not group.supports_protocols(request.protocol_type, (p.name for p in request.protocols)):
            respond(join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return Result()
        instance_id = request.group_instance_id
        new_member_id = group.generate_member_id(info.client_id, instance_id)
        if instance_id is not None:
            existing = group.static_members.get(instance_id)
            if existing is not None:
                return self._update_static_member(info, request, group, existing, new_member_id, respond)
            return self._add_member(info, request, group, new_member_id, respond)
        if info.api_version >= MEMBER_ID_REQUIRED_FROM_VERSION:
            group.pending_join_members.add(new_member_id)
            self._schedule(heartbeat_key(group.group_id, new_member_id), request.session_timeout_ms, group.group_id,
                           lambda gid=group.group_id, mid=new_member_id: self.expire_heartbeat(gid, mid))
            respond(join_error(ErrorCode.MEMBER_ID_REQUIRED, new_member_id))
            return Result()
        return self._add_member(info, request, group, new_member_id, respond)

    def _join_existing_member(self, info: RequestInfo, request: JoinGroupRequest, group: ClassicGroup,
                              respond: JoinCallback) -> Result:
        member_id = request.member_id
        if group.state is ClassicGroupState.DEAD:
            respond(join_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return Result()
        if not group.supports_protocols(request.protocol_type, (p.name for p in request.protocols)):
            respond(join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return Result()
        if member_id in group.pending_join_members:
            return self._add_member(info, request, group, member_id, respond)
        try:
            group.validate_member(member_id, request.group_instance_id, "join-group")
        except KafkaError as e:
            respond(JoinGroupResponse(error_code=int(e.code), member_id=member_id, protocol_name=None))
            return Result()
        member = group.members[member_id]
        protocols = self._protocols(request)
        if group.state is ClassicGroupState.PREPARING_REBALANCE:
            return self._update_member(request, group, member, respond)
        if group.state is ClassicGroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # A retry of a join whose answer got lost: answer with the current generation again.
                respond(group.join_response(member_id, with_members=group.is_leader(member_id)))
                return Result()
            return self._update_member(request, group, member, respond)
        if group.state is ClassicGroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                return self._update_member(request, group, member, respond)
            respond(group.join_response(member_id, with_members=False))
            return Result()
        respond(join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id))  # Empty: the member must start over
        return Result()

    def _update_member(self, request: JoinGroupRequest, group: ClassicGroup, member: ClassicMember,
                       respond: JoinCallback) -> Result:
        group.update_member(member, self._protocols(request), request.rebalance_timeout_ms,
                            request.session_timeout_ms, respond)
        return self.maybe_prepare_rebalance_or_complete_join(group)

    def _add_member(self, info: RequestInfo, request: JoinGroupRequest, group: ClassicGroup, member_id: str,
                    respond: JoinCallback) -> Result:
        member = ClassicMember(member_id, request.group_instance_id, info.client_id, info.client_host,
                               request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type,
                               self._protocols(request), is_new=True)
        if group.state is ClassicGroupState.PREPARING_REBALANCE and group.previous_state is ClassicGroupState.EMPTY:
            group.new_member_added = True
        group.add(member, respond)
        # A new member cannot heartbeat before its first answer; time its parked join out instead.
        self.reschedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        return self.maybe_prepare_rebalance_or_complete_join(group)

    def _update_static_member(self, info: RequestInfo, request: JoinGroupRequest, group: ClassicGroup,
                              old_member_id: str, new_member_id: str, respond: JoinCallback) -> Result:
        """A known static member joins again without its member id: it takes over the instance."""
        instance_id = request.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        member = group.replace_static_member(instance_id, old_member_id, new_member_id)
        self.runtime.cancel(heartbeat_key(group.group_id, old_member_id))
        self.reschedule_heartbeat(group, member)
        old_protocols = list(member.protocols)
        old_rebalance, old_session = member.rebalance_timeout_ms, member.session_timeout_ms
        group.update_member(member, self._protocols(request), request.rebalance_timeout_ms,
                            request.session_timeout_ms, respond)
        if group.state is ClassicGroupState.STABLE:
            if (group.protocol_name or "") != group.select_protocol():
                return self.maybe_prepare_rebalance_or_complete_join(group)
            # Same protocol: no rebalance; persist the new member id and give back the current generation.

            def on_appended() -> None:
                is_leader = group.is_leader(new_member_id)
                if info.api_version >= SKIP_ASSIGNMENT_FROM_VERSION:
                    response = group.join_response(new_member_id, with_members=is_leader)
                    response.skip_assignment = is_leader
                else:
                    response = group.join_response(new_member_id, with_members=False)
                    response.leader = current_leader or ""
                group.complete_join(member, response)

            def on_failed(error: KafkaError) -> None:
                group.update_member(member, old_protocols, old_rebalance, old_session, None)
                old = group.replace_static_member(instance_id, new_member_id, old_member_id)
                self.runtime.cancel(heartbeat_key(group.group_id, new_member_id))
                self.reschedule_heartbeat(group, old)
                respond(JoinGroupResponse(error_code=int(error.code), member_id=UNKNOWN_MEMBER_ID,
                                          generation_id=group.generation_id, protocol_name=group.protocol_name,
                                          protocol_type=group.protocol_type, leader=current_leader or ""))

            record = group_metadata_record(group.group_id, group.to_record_value(group.group_assignment()))
            return Result([record], replay=False, on_appended=on_appended, on_failed=on_failed)
        if group.state is ClassicGroupState.COMPLETING_REBALANCE:
            # The leader may already hold an assignment for the old member id: rebalance again.
            return self.prepare_rebalance(group, f"static member {instance_id} rejoined with a new member id")
        return self.maybe_complete_join_phase(group)

    # ------------------------------------------------------------------------------ rebalance

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup) -> Result:
        if group.can_rebalance():
            return self.prepare_rebalance(group, "membership changed")
        return self.maybe_complete_join_phase(group)

    def prepare_rebalance(self, group: ClassicGroup, reason: str) -> Result:
        if group.state is ClassicGroupState.COMPLETING_REBALANCE:
            self._reset_and_propagate_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        initial = group.state is ClassicGroupState.EMPTY
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            gid = group.group_id
            self._schedule(join_key(gid), delay, gid, lambda: self._try_complete_initial_rebalance(gid, delay, remaining))
        group.transition_to(ClassicGroupState.PREPARING_REBALANCE)
        log.info("preparing to rebalance group %s with old generation %d (%s)", group.group_id, group.generation_id,
                 reason)
        return Result() if initial else self._maybe_complete_join_else_schedule(group)

    def _maybe_complete_join_else_schedule(self, group: ClassicGroup) -> Result:
        if group.has_all_members_joined():
            return self.complete_join(group)
        gid = group.group_id
        self._schedule(join_key(gid), group.rebalance_timeout_ms(), gid, lambda: self._complete_join_by_id(gid))
        return Result()

    def _try_complete_initial_rebalance(self, group_id: str, delay_ms: int, remaining_ms: int) -> Result | None:
        group = self.group(group_id)
        if group is None:
            return None
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self._schedule(join_key(group_id), new_delay, group_id,
                           lambda: self._try_complete_initial_rebalance(group_id, new_delay, new_remaining))
            return None
        return self.complete_join(group)

    def maybe_complete_join_phase(self, group: ClassicGroup) -> Result:
        if group.state is not ClassicGroupState.PREPARING_REBALANCE or group.previous_state is ClassicGroupState.EMPTY:
            return Result()  # not rebalancing, or the initial rebalance (its timer completes it)
        if not group.has_all_members_joined():
            return Result()
        return self.complete_join(group)

    def _complete_join_by_id(self, group_id: str) -> Result | None:
        group = self.group(group_id)
        return None if group is None else self.complete_join(group)

    def complete_join(self, group: ClassicGroup) -> Result:
        """End the join phase: drop dynamic members that did not rejoin, start the next generation."""
        gid = group.group_id
        self.runtime.cancel(join_key(gid))
        for member in group.not_yet_rejoined():
            if not member.is_static:
                group.remove(member.member_id)
                self.runtime.cancel(heartbeat_key(gid, member.member_id))
                log.info("group %s removed member %s, which did not rejoin in time", gid, member.member_id)
        if group.state is ClassicGroupState.DEAD:
            return Result()
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait again until session timeouts have removed the silent members.
            self._schedule(join_key(gid), group.rebalance_timeout_ms(), gid, lambda: self._complete_join_by_id(gid))
            return Result()
        group.init_next_generation()
        if group.state is ClassicGroupState.EMPTY:
            log.info("group %s with generation %d is now empty", gid, group.generation_id)
            return Result([group_metadata_record(gid, group.to_record_value({}))], replay=False)
        log.info("stabilizing group %s generation %d with %d members", gid, group.generation_id, len(group.members))
        for member in list(group.members.values()):
            group.complete_join(member, group.join_response(member.member_id,
                                                            with_members=group.is_leader(member.member_id)))
            self.reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        generation = group.generation_id
        self._schedule(sync_key(gid), group.rebalance_timeout_ms(), gid, lambda: self._expire_pending_sync(gid, generation))
        return Result()

    def _expire_pending_sync(self, group_id: str, generation: int) -> Result | None:
        group = self.group(group_id)
        if group is None or generation != group.generation_id or not group.is_in(ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.STABLE):
            return None
        if not group.pending_sync_members:
            return None
        for member_id in list(group.pending_sync_members):
            group.remove(member_id)
            self.runtime.cancel(heartbeat_key(group_id, member_id))
        log.info("group %s removed members that did not sync in time", group_id)
        return self.prepare_rebalance(group, "members did not send SyncGroup in time")

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.runtime.cancel(sync_key(group.group_id))

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.is_in(ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.STABLE) or not group.pending_sync_members:
            self.runtime.cancel(sync_key(group.group_id))

    def _reset_and_propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _set_and_propagate_assignment(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
        self._propagate_assignment(group, ErrorCode.NONE)

    def _propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        ok = error == ErrorCode.NONE
        for member in list(group.members.values()):
            response = SyncGroupResponse(error_code=int(error), protocol_type=group.protocol_type if ok else None,
                                         protocol_name=group.protocol_name if ok else None,
                                         assignment=member.assignment)
            if group.complete_sync(member, response):
                self.reschedule_heartbeat(group, member)

    # ----------------------------------------------------------------------------------- sync

    def sync_group(self, info: RequestInfo, request: SyncGroupRequest, respond: SyncCallback) -> Result:
        group = self.group(request.group_id)
        if group is None or group.is_empty():
            respond(SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
            return Result()
        error = self._validate_sync(group, request)
        if error is not None:
            respond(SyncGroupResponse(error_code=int(error)))
            return Result()
        member_id = request.member_id
        if group.state is ClassicGroupState.PREPARING_REBALANCE:
            respond(SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS))
            return Result()
        if group.state is ClassicGroupState.STABLE:
            self._remove_pending_sync_member(group, member_id)
            member = group.members[member_id]
            respond(SyncGroupResponse(error_code=0, protocol_type=group.protocol_type,
                                      protocol_name=group.protocol_name, assignment=member.assignment))
            return Result()
        # CompletingRebalance: park the answer; the leader's assignment completes everyone.
        member = group.members[member_id]
        if member.awaiting_sync is not None:  # a repeated sync replaces the parked one: answer that
            group.complete_sync(member, SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS))
        member.awaiting_sync = respond
        self._remove_pending_sync_member(group, member_id)
        if not group.is_leader(member_id):
            return Result()
        assignment = {a.member_id: bytes(a.assignment) for a in request.assignments}
        for mid in group.members:
            assignment.setdefault(mid, b"")
        generation = request.generation_id

        def still_current() -> bool:
            return group.state is ClassicGroupState.COMPLETING_REBALANCE and group.generation_id == generation

        def on_appended() -> None:
            if still_current():
                self._set_and_propagate_assignment(group, assignment)
                group.transition_to(ClassicGroupState.STABLE)

        def on_failed(error: KafkaError) -> None:
            if still_current():
                self._reset_and_propagate_assignment(group, error.code)
                self._submit(group, self.maybe_prepare_rebalance_or_complete_join(group))

        record = group_metadata_record(group.group_id, group.to_record_value(assignment))
        return Result([record], replay=False, on_appended=on_appended, on_failed=on_failed)

    @staticmethod
    def _validate_sync(group: ClassicGroup, request: SyncGroupRequest) -> ErrorCode | None:
        if group.state is ClassicGroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(request.member_id, request.group_instance_id, "sync-group")
        except KafkaError as e:
            return e.code
        if request.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if _inconsistent(request.protocol_type, group.protocol_type) or \
                _inconsistent(request.protocol_name, group.protocol_name):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    # ------------------------------------------------------------------------------ heartbeat

    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> Result:
        """Result whose response is a HeartbeatResponse (no records)."""
        group = self.group(group_id)
        if group is None:
            return Result(response=HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
        try:
            if group.state is ClassicGroupState.DEAD:
                raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"group {group_id} is dead")
            group.validate_member(member_id, group_instance_id, "heartbeat")
            if generation_id != group.generation_id:
                raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"generation {generation_id} is not {group.generation_id}")
        except KafkaError as e:
            return Result(response=HeartbeatResponse(error_code=int(e.code)))
        if group.state is ClassicGroupState.EMPTY:
            return Result(response=HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
        self.reschedule_heartbeat(group, group.members[member_id])
        code = ErrorCode.REBALANCE_IN_PROGRESS if group.state is ClassicGroupState.PREPARING_REBALANCE else ErrorCode.NONE
        return Result(response=HeartbeatResponse(error_code=int(code)))

    def expire_heartbeat(self, group_id: str, member_id: str) -> Result | None:
        group = self.group(group_id)
        if group is None or group.state is ClassicGroupState.DEAD:
            return None
        if member_id in group.pending_join_members:
            log.info("pending member %s of group %s expired", member_id, group_id)
            group.remove(member_id)
            if group.state is ClassicGroupState.PREPARING_REBALANCE and group.has_all_members_joined():
                return self.complete_join(group)
            return None
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return None
        log.info("member %s of group %s failed its session timeout; removing it", member_id, group_id)
        return self._remove_member_and_update_group(group, member)

    def _remove_member_and_update_group(self, group: ClassicGroup, member: ClassicMember) -> Result:
        group.complete_join(member, join_error(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.is_in(ClassicGroupState.STABLE, ClassicGroupState.COMPLETING_REBALANCE):
            return self.maybe_prepare_rebalance_or_complete_join(group)
        if group.state is ClassicGroupState.PREPARING_REBALANCE and group.has_all_members_joined():
            return self.complete_join(group)
        return Result()

    def on_offset_commit(self, group: ClassicGroup, member_id: str) -> None:
        """A commit keeps a member's session alive while the group is Stable or PreparingRebalance."""
        member = group.members.get(member_id)
        if member is not None and group.is_in(ClassicGroupState.STABLE, ClassicGroupState.PREPARING_REBALANCE):
            self.reschedule_heartbeat(group, member)

    # ------------------------------------------------------------------------ load and unload

    def replay(self, key: GroupMetadataKey, value: GroupMetadataValue | None) -> None:
        """Load path (and tombstones): a value (re)creates the group as Stable or Empty; a tombstone
        removes it."""
        existing = self.groups.get(key.group)
        if value is None:
            if isinstance(existing, ClassicGroup):
                self._cancel_group_timers(existing)
                existing.state = ClassicGroupState.DEAD
                del self.groups[key.group]
            return
        if existing is not None and not isinstance(existing, ClassicGroup):
            log.warning("group %s: a classic group record replaces a %s group", key.group, existing.group_type)
        self.groups[key.group] = ClassicGroup.from_record_value(key.group, value, self.clock)

    def on_loaded(self, group_ids: Iterable[str] | None = None) -> None:
        """Give every loaded member (of ``group_ids``; None: every group) one session timeout to show
        up; shrink groups over the size limit."""
        ids = list(self.groups) if group_ids is None else [g for g in group_ids if g in self.groups]
        for group in [self.groups[g] for g in ids]:
            if not isinstance(group, ClassicGroup):
                continue
            for member in group.members.values():
                self.reschedule_heartbeat(group, member)
            if len(group.members) > self.config.group_max_size and group.can_rebalance():
                self._submit(group, self.prepare_rebalance(group, "loaded over group.max.size"))

    def on_unloaded(self) -> None:
        """The coordinator stops: parked requests get NOT_COORDINATOR (their clients look it up again)."""
        for group in list(self.groups.values()):
            if not isinstance(group, ClassicGroup):
                continue
            for member in list(group.members.values()):
                group.complete_join(member, join_error(ErrorCode.NOT_COORDINATOR, member.member_id))
                group.complete_sync(member, SyncGroupResponse(error_code=ErrorCode.NOT_COORDINATOR))

    def _cancel_group_timers(self, group: ClassicGroup) -> None:
        self.runtime.cancel(join_key(group.group_id))
        self.runtime.cancel(sync_key(group.group_id))
        for member_id in list(group.members) + list(group.pending_join_members):
            self.runtime.cancel(heartbeat_key(group.group_id, member_id))


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


__all__ = [
    "MEMBER_ID_REQUIRED_FROM_VERSION",
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "ClassicGroupManager",
    "heartbeat_key",
    "join_error",
    "join_key",
    "sync_key",
]
