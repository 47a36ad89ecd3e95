"""How a streams group member moves towards its target tasks (Kafka's streams ``CurrentAssignmentBuilder``).

1. A member at the target's epoch in STABLE stays as it is.
2. Tasks it holds that are not in its target (of any kind) must be revoked first: the member keeps what it
   holds of its target, the rest is *pending revocation*, its epoch does not move (UNREVOKED_TASKS) until a
   heartbeat reports (ActiveTasks/StandbyTasks/WarmupTasks) that it no longer holds any of them.
   Once it has revoked them, it moves on as from the next epoch (its epoch + 1, as Kafka): if there is
   again something to revoke, it waits at that epoch.
3. Then it takes its target at the target's epoch, except active tasks another member still holds (assigned
   or pending revocation) and standby or warm-up tasks another member of its own process still holds as
   active: those wait (UNRELEASED_TASKS) and are given at a later heartbeat, once released.
4. Each active task keeps the epoch it was assigned at while the member holds it (also while it is pending
   revocation); a task newly given is assigned at the target's epoch (Kafka's TasksTupleWithEpochs: what
   an OffsetCommit at an older member epoch is checked against).

Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tidelog.coordinator.group.modern.streams.group import StreamsGroupMember, StreamsMemberState, TaskEpochs
from tidelog.coordinator.group.modern.streams.tasks import EMPTY_TASKS, TasksTuple, from_pairs, pairs

#: (subtopology, partition, member id) -> whether another member still holds the task as active
ActiveElsewhere = Callable[[str, int, str], bool]
#: (subtopology, partition, member) -> whether another member of the member's process holds it as active
ActiveInProcess = Callable[[str, int, StreamsGroupMember], bool]


def reconcile(member: StreamsGroupMember, target_epoch: int, target: TasksTuple, owned: TasksTuple | None,
              active_elsewhere: ActiveElsewhere, active_in_process: ActiveInProcess) -> StreamsGroupMember:
    """The member's next state (module rules); ``owned``: the tasks its heartbeat reports (None: unchanged)."""
    revoking_epoch = member.member_epoch
    if member.state == StreamsMemberState.UNREVOKED_TASKS:
        if owned is None or not owned.intersect(member.pending_revocation).is_empty():
            return member  # still revoking
        revoking_epoch = member.member_epoch + 1
    elif member.member_epoch == target_epoch and member.state == StreamsMemberState.STABLE:
        return member
    epochs = member.epochs()
    # 2. revocation first
    revoke = member.assigned.minus(target)
    if not revoke.is_empty():
        kept = member.assigned.intersect(target)
        moves = revoking_epoch != member.member_epoch
        return replace(member, state=StreamsMemberState.UNREVOKED_TASKS, assigned=kept, pending_revocation=revoke,
                       active_epochs=_epochs_of(epochs, kept.union(revoke), revoking_epoch),
                       member_epoch=revoking_epoch,
                       previous_member_epoch=member.member_epoch if moves else member.previous_member_epoch)
    # 3. take the target, except tasks not yet released
    mid = member.member_id
    active = [t for t in pairs(target.active) if not active_elsewhere(t[0], t[1], mid)]
    standby = [t for t in pairs(target.standby) if not active_in_process(t[0], t[1], member)]
    warmup = [t for t in pairs(target.warmup) if not active_in_process(t[0], t[1], member)]
    new = TasksTuple(from_pairs(active), from_pairs(standby), from_pairs(warmup))
    state = StreamsMemberState.STABLE if new == target else StreamsMemberState.UNRELEASED_TASKS
    epoch_moves = member.member_epoch != target_epoch
    return replace(member, state=state, assigned=new, pending_revocation=EMPTY_TASKS,
                   active_epochs=_epochs_of(epochs, new, target_epoch), member_epoch=target_epoch,
                   previous_member_epoch=member.member_epoch if epoch_moves else member.previous_member_epoch)


def _epochs_of(epochs: dict[tuple[str, int], int], tasks: TasksTuple, new_epoch: int) -> TaskEpochs:
    """Rule 4: the epochs of ``tasks``' active tasks, ``new_epoch`` for those the member did not hold."""
    return tuple((s, p, epochs.get((s, p), new_epoch)) for s, p in pairs(tasks.active))


__all__ = ["reconcile"]
