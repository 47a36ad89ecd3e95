"""LeaveGroup for classic groups: removes members by member id, or by instance id alone for static
members (admin removal: ``kafka-consumer-groups --delete-members``), then rebalances what is left.
Part of :class:`~tidelog.coordinator.group.classic.manager.ClassicGroupManager` (a mixin: it uses the
manager's ``group``, ``runtime`` and rebalance steps).

Loop-only, not thread-safe.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tidelog.coordinator.group.classic.group import ClassicGroup, ClassicGroupState, heartbeat_key, join_error
from tidelog.coordinator.group.group import UNKNOWN_MEMBER_ID
from tidelog.coordinator.runtime import Result
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.messages import LeaveGroupResponse

if TYPE_CHECKING:
    from tidelog.coordinator.runtime import CoordinatorRuntime

log = logging.getLogger(__name__)


class ClassicLeave:
    runtime: CoordinatorRuntime

    def group(self, group_id: str) -> ClassicGroup | None:  # the manager's
        raise NotImplementedError

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup) -> Result:  # the manager's
        raise NotImplementedError

    def maybe_complete_join_phase(self, group: ClassicGroup) -> Result:  # the manager's
        raise NotImplementedError

    def leave_group(self, group_id: str, members: list[tuple[str, str | None, str | None]]) -> Result:
        """``members``: (member id, group instance id, reason). Result's response is a LeaveGroupResponse
        with one entry per member (the v0-v2 single-member form is made by the handler)."""
        group = self.group(group_id)
        Member = LeaveGroupResponse.MemberResponse
        if group is None:
            return Result(response=LeaveGroupResponse(members=[
                Member(member_id=m, group_instance_id=i, error_code=ErrorCode.UNKNOWN_MEMBER_ID) for m, i, _ in members]))
        if group.state is ClassicGroupState.DEAD:
            return Result(response=LeaveGroupResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE))
        responses = []
        left = 0
        for member_id, instance_id, reason in members:
            code = ErrorCode.NONE
            if member_id == UNKNOWN_MEMBER_ID:
                if instance_id is not None and instance_id in group.static_members:
                    self._remove_current_member(group, group.static_members[instance_id], reason)
                else:
                    code = ErrorCode.UNKNOWN_MEMBER_ID
            elif member_id in group.pending_join_members:
                group.remove(member_id)
                self.runtime.cancel(heartbeat_key(group_id, member_id))
            else:
                try:
                    group.validate_member(member_id, instance_id, "leave-group")
                    self._remove_current_member(group, member_id, reason)
                except KafkaError as e:
                    code = e.code
            left += code == ErrorCode.NONE
            responses.append(Member(member_id=member_id, group_instance_id=instance_id, error_code=int(code)))
        result = Result()
        if left:
            if group.is_in(ClassicGroupState.STABLE, ClassicGroupState.COMPLETING_REBALANCE):
                result = self.maybe_prepare_rebalance_or_complete_join(group)
            elif group.state is ClassicGroupState.PREPARING_REBALANCE:
                result = self.maybe_complete_join_phase(group)
        result.response = LeaveGroupResponse(members=responses)
        return result

    def _remove_current_member(self, group: ClassicGroup, member_id: str, reason: str | None) -> None:
        member = group.members[member_id]
        self.runtime.cancel(heartbeat_key(group.group_id, member_id))
        log.info("member %s left group %s (reason: %s)", member_id, group.group_id, reason or "not provided")
        group.complete_join(member, join_error(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member_id)


__all__ = ["ClassicLeave"]
