"""Classic consumer groups: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, ListGroups,
DeleteGroups, each at every version both brokers serve, through their success and error paths.

Every flow has its own group (``diff-join-v4`` ...). Members join with a 60 s session timeout, so
no member expires while the program runs, whatever each broker's speed; flows that need a member
in a group build it with uncompared steps at the highest versions (:func:`join_and_sync`). The one
flow with two members (a rebalance seen through Heartbeat) sends the second member's JoinGroup on a
second connection and reads it once the first member has rejoined.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.oracle.wire.program import Program, Session
from tidelog.coordinator.group.classic.consumer_protocol import encode_assignment, encode_subscription
from tidelog.protocol.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)

JOIN = JoinGroupRequest.API_KEY
SYNC = SyncGroupRequest.API_KEY
HEARTBEAT = HeartbeatRequest.API_KEY
LEAVE = LeaveGroupRequest.API_KEY
DESCRIBE = DescribeGroupsRequest.API_KEY
LIST = ListGroupsRequest.API_KEY
DELETE = DeleteGroupsRequest.API_KEY
COMMIT = OffsetCommitRequest.API_KEY

SESSION_MS = 60_000
TOPIC = "diff-meta-a"  # 3 partitions, created by the topic family
SUBSCRIPTION = encode_subscription([TOPIC])
ASSIGNMENT = encode_assignment({TOPIC: [0, 1, 2]})


def join(group: str, member: str | Callable = "", *, protocol_type: str = "consumer", session_ms: int = SESSION_MS,
         protocols: list[tuple[str, bytes]] | None = None, instance: str | None = None):
    """A JoinGroup request, or a function of the session when the member id is a variable's name."""
    def make(member_id: str) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=SESSION_MS, member_id=member_id,
            group_instance_id=instance, protocol_type=protocol_type, reason="diff",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=m)
                       for n, m in (protocols if protocols is not None else [("range", SUBSCRIPTION)])])
    return make(member) if isinstance(member, str) else lambda s: make(member(s))


def var(name: str):
    return lambda s: s.vars[name]


def remember(**names: str):
    """An ``after`` hook storing response fields in session variables: ``remember(m1="member_id")``."""
    def after(session: Session, response) -> None:
        for variable, attribute in names.items():
            session.vars[variable] = getattr(response, attribute)
    return after


def join_and_sync(program: Program, group: str, prefix: str, *, compare: bool = False,
                  instance: str | None = None) -> None:
    """A one-member group in state Stable: ``{prefix}-member`` / ``{prefix}-generation`` hold its ids."""
    v = program.top(JOIN)
    member, generation = f"{prefix}-member", f"{prefix}-generation"
    program.request(f"setup-{prefix}-join", v, join(group, instance=instance), compare=compare,
                    after=remember(**{member: "member_id"}))
    program.request(f"setup-{prefix}-rejoin", v, join(group, var(member), instance=instance), api=JOIN,
                    compare=compare, after=remember(**{member: "member_id", generation: "generation_id"}))
    program.request(f"setup-{prefix}-sync", program.top(SYNC), lambda s: SyncGroupRequest(
        group_id=group, generation_id=s.vars[generation], member_id=s.vars[member], group_instance_id=instance,
        protocol_type="consumer", protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=s.vars[member], assignment=ASSIGNMENT)]),
        api=SYNC, compare=compare)


def leave(program: Program, group: str, prefix: str) -> None:
    program.request(f"teardown-{prefix}", program.top(LEAVE), lambda s: LeaveGroupRequest(
        group_id=group, member_id=s.vars[f"{prefix}-member"],
        members=[LeaveGroupRequest.MemberIdentity(member_id=s.vars[f"{prefix}-member"])]), api=LEAVE, compare=False)


def add(program: Program) -> None:
    _join_group(program)
    _sync_group(program)
    _heartbeat(program)
    _rebalance(program)
    _leave_group(program)
    _describe_groups(program)
    _list_groups(program)
    _delete_groups(program)


def _join_group(program: Program) -> None:
    for v in program.versions(JOIN):
        group = f"diff-join-v{v}"
        member = f"join-v{v}"
        program.request("new-member", v, join(group), after=remember(**{member: "member_id"}))
        if v >= 4:
            program.request("with-assigned-member-id", v, join(group, var(member)), api=JOIN,
                            after=remember(**{member: "member_id"}))
        program.request("rejoin-stable", v, join(group, var(member)), api=JOIN)
        program.request("other-protocol-type", v, join(group, protocol_type="connect"))
        program.request("no-common-protocol", v, join(group, protocols=[("roundrobin", SUBSCRIPTION)]))
        program.request("unknown-member-id", v, join(group, "diff-unknown-member"))
        program.request("unknown-member-id-new-group", v, join(f"diff-join-new-v{v}", "diff-unknown-member"))
        program.request("session-timeout-too-small", v, join(f"diff-join-small-v{v}", session_ms=1))
        program.request("session-timeout-too-large", v, join(f"diff-join-large-v{v}", session_ms=10**9))
        program.request("empty-protocol-type", v, join(f"diff-join-ept-v{v}", protocol_type=""))
        program.request("no-protocols", v, join(f"diff-join-np-v{v}", protocols=[]))
        program.request("empty-group-id", v, join(""))
        if v >= 5:
            program.request("static-member", v, join(f"diff-join-static-v{v}", instance="diff-static"),
                            after=remember(**{f"static-{v}": "member_id"}))
            if v >= 4:
                program.request("static-member-known", v, join(f"diff-join-static-v{v}", var(f"static-{v}"),
                                                               instance="diff-static"), api=JOIN)
        program.request(f"teardown-join-v{v}", program.top(LEAVE), lambda s, group=group, member=member: LeaveGroupRequest(
            group_id=group, member_id=s.vars[member],
            members=[LeaveGroupRequest.MemberIdentity(member_id=s.vars[member])]), api=LEAVE, compare=False)


def _sync_group(program: Program) -> None:
    for v in program.versions(SYNC):
        group = f"diff-sync-v{v}"
        prefix = f"sync-v{v}"
        member, generation = f"{prefix}-member", f"{prefix}-generation"
        top = program.top(JOIN)
        program.request(f"setup-{prefix}-join", top, join(group), compare=False, after=remember(**{member: "member_id"}))
        program.request(f"setup-{prefix}-rejoin", top, join(group, var(member)), api=JOIN, compare=False,
                        after=remember(**{member: "member_id", generation: "generation_id"}))

        def sync(generation_delta: int = 0, member_id=None, group_id: str = group, protocol_type: str | None = "consumer",
                 protocol_name: str | None = "range", assign: bool = True, member: str = member,
                 generation: str = generation):
            def make(s: Session) -> SyncGroupRequest:
                mid = s.vars[member] if member_id is None else member_id
                return SyncGroupRequest(
                    group_id=group_id, generation_id=s.vars[generation] + generation_delta, member_id=mid,
                    protocol_type=protocol_type, protocol_name=protocol_name,
                    assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=mid, assignment=ASSIGNMENT)]
                    if assign else [])
            return make

        cases = {
            "wrong-generation": sync(5), "unknown-member": sync(member_id="diff-unknown-member"),
            "unknown-group": sync(group_id="diff-no-such-group"), "empty-group-id": sync(group_id=""),
            "leader": sync(), "again-after-stable": sync(), "follower-style-no-assignments": sync(assign=False),
        }
        if v >= 5:
            cases |= {"protocol-type-mismatch": sync(protocol_type="connect"),
                      "protocol-name-mismatch": sync(protocol_name="roundrobin"),
                      "no-protocol-type": sync(protocol_type=None, protocol_name=None)}
        for case, build in cases.items():
            program.request(case, v, build, api=SYNC)
        leave(program, group, prefix)


def _heartbeat(program: Program) -> None:
    for v in program.versions(HEARTBEAT):
        group = f"diff-hb-v{v}"
        prefix = f"hb-v{v}"
        join_and_sync(program, group, prefix)

        def beat(generation_delta: int = 0, member_id=None, group_id: str = group, prefix: str = prefix):
            return lambda s: HeartbeatRequest(
                group_id=group_id, generation_id=s.vars[f"{prefix}-generation"] + generation_delta,
                member_id=s.vars[f"{prefix}-member"] if member_id is None else member_id)

        for case, build in {"ok": beat(), "wrong-generation": beat(1), "older-generation": beat(-1),
                            "unknown-member": beat(member_id="diff-unknown-member"),
                            "unknown-group": beat(group_id="diff-no-such-group"),
                            "empty-group-id": beat(group_id="")}.items():
            program.request(case, v, build, api=HEARTBEAT)
        leave(program, group, prefix)
        program.request("after-leave", v, beat(), api=HEARTBEAT)


def _rebalance(program: Program) -> None:
    """A second member joins a stable group: the first sees REBALANCE_IN_PROGRESS on its heartbeat,
    rejoins, and both get the new generation."""
    group, prefix = "diff-rebalance", "rb"
    join_and_sync(program, group, prefix)
    top = program.top(JOIN)
    program.request("second-member", top, join(group), connection="b", after=remember(rb2="member_id"))
    second = program.request("second-member-with-id", top, join(group, var("rb2")), api=JOIN, connection="b",
                             pending=True)
    program.action("wait-rebalance", _wait_for_state(program, group, "PreparingRebalance"))
    for v in program.versions(HEARTBEAT):
        program.request("during-rebalance", v, lambda s: HeartbeatRequest(
            group_id=group, generation_id=s.vars["rb-generation"], member_id=s.vars["rb-member"]), api=HEARTBEAT)
    first = program.request("first-member-rejoins", top, join(group, var("rb-member")), api=JOIN, pending=True)
    program.receive(first, after=remember(**{"rb-generation": "generation_id"}))
    program.receive(second)
    program.request("leader-syncs", program.top(SYNC), lambda s: SyncGroupRequest(
        group_id=group, generation_id=s.vars["rb-generation"], member_id=s.vars["rb-member"],
        protocol_type="consumer", protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=s.vars["rb-member"], assignment=ASSIGNMENT),
                     SyncGroupRequest.SyncGroupRequestAssignment(member_id=s.vars["rb2"], assignment=b"")]), api=SYNC)
    program.request("follower-syncs", program.top(SYNC), lambda s: SyncGroupRequest(
        group_id=group, generation_id=s.vars["rb-generation"], member_id=s.vars["rb2"],
        protocol_type="consumer", protocol_name="range"), api=SYNC, connection="b")
    program.request("describe-two-members", program.top(DESCRIBE), DescribeGroupsRequest(groups=[group]))


def _wait_for_state(program: Program, group: str, state: str, timeout: float = 30.0):
    """Until DescribeGroups shows ``group`` in ``state``: a JoinGroup sent on another connection
    reaches the coordinator in its own time (not behaviour under test)."""
    version = program.top(DESCRIBE)

    def run(session: Session) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            answer = session.call(DescribeGroupsRequest(groups=[group]), version)
            if answer.groups and answer.groups[0].group_state == state:
                return
            time.sleep(0.02)
        raise AssertionError(f"group {group} never {state} on {session.bootstrap}")

    return run


def _leave_group(program: Program) -> None:
    for v in program.versions(LEAVE):
        group = f"diff-leave-v{v}"
        prefix = f"leave-v{v}"
        join_and_sync(program, group, prefix)

        def leave_request(member_id=None, group_id: str = group, extra: tuple[str, ...] = (), prefix: str = prefix):
            def make(s: Session) -> LeaveGroupRequest:
                mid = s.vars[f"{prefix}-member"] if member_id is None else member_id
                return LeaveGroupRequest(group_id=group_id, member_id=mid, members=[
                    LeaveGroupRequest.MemberIdentity(member_id=m, reason="diff") for m in (mid, *extra)])
            return make

        program.request("unknown-group", v, leave_request(group_id="diff-no-such-group"), api=LEAVE)
        program.request("empty-group-id", v, leave_request(group_id=""), api=LEAVE)
        if v >= 3:
            program.request("known-and-unknown-member", v, leave_request(extra=("diff-unknown-member",)), api=LEAVE)
        else:
            program.request("member", v, leave_request(), api=LEAVE)
        program.request("again", v, leave_request(), api=LEAVE)
        program.request("unknown-member", v, leave_request(member_id="diff-unknown-member"), api=LEAVE)
        if v >= 3:
            program.request("no-members", v, LeaveGroupRequest(group_id=group, members=[]))
            program.request("unknown-static-member", v, LeaveGroupRequest(group_id=group, members=[
                LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id="diff-nobody")]))


def _describe_groups(program: Program) -> None:
    join_and_sync(program, "diff-describe", "desc")
    program.request("setup-empty-group", program.top(COMMIT), OffsetCommitRequest(
        group_id="diff-describe-empty", generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])]),
        compare=False)
    cases = {
        "stable": ["diff-describe"], "empty": ["diff-describe-empty"], "unknown": ["diff-no-such-group"],
        "empty-group-id": [""], "several": ["diff-describe", "diff-no-such-group", "diff-describe-empty"],
        "none": [], "twice": ["diff-describe", "diff-describe"],
    }
    for v in program.versions(DESCRIBE):
        for case, groups in cases.items():
            program.request(case, v, DescribeGroupsRequest(groups=groups))
        if v >= 3:
            program.request("authorized-operations", v, DescribeGroupsRequest(
                groups=["diff-describe", "diff-no-such-group"], include_authorized_operations=True))


def _list_groups(program: Program) -> None:
    for v in program.versions(LIST):
        program.request("all", v, ListGroupsRequest())
        if v >= 4:
            for case, states in {"stable": ["Stable"], "empty": ["Empty"], "two-states": ["stable", "EMPTY"],
                                 "unknown-state": ["Sleeping"]}.items():
                program.request(f"states-{case}", v, ListGroupsRequest(states_filter=states))
        if v >= 5:
            for case, types in {"classic": ["classic"], "consumer": ["consumer"], "upper-case": ["Classic"],
                                "unknown-type": ["bowling"]}.items():
                program.request(f"types-{case}", v, ListGroupsRequest(types_filter=types))


def _delete_groups(program: Program) -> None:
    versions = program.versions(DELETE)
    for v in versions:
        program.request(f"setup-delete-v{v}", program.top(COMMIT), OffsetCommitRequest(
            group_id=f"diff-delete-v{v}", generation_id_or_member_epoch=-1, member_id="", topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                    OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]),
            compare=False)
    for v in versions:
        cases = {"empty-group": [f"diff-delete-v{v}"], "again": [f"diff-delete-v{v}"],
                 "non-empty-group": ["diff-describe"], "unknown": ["diff-no-such-group"], "empty-group-id": [""],
                 "twice-in-request": ["diff-no-such-group", "diff-no-such-group"], "none": []}
        for case, groups in cases.items():
            program.request(case, v, DeleteGroupsRequest(groups_names=groups))
    leave(program, "diff-describe", "desc")


__all__ = ["ASSIGNMENT", "SUBSCRIPTION", "add", "join", "join_and_sync", "leave", "remember", "var"]
