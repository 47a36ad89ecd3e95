"""The ``sticky`` task assignor of streams groups (after Kafka's ``StickyTaskAssignor``, KIP-1071). Rules:

1. **Processes.** Members are grouped by process id (one Kafka Streams instance, several stream threads);
   a process's capacity is its number of members, its load the tasks it holds over its capacity.
2. **Active tasks, sticky first.** A task stays with the member that had it as an active task (its
   previous target), unless that member already holds its share (the total over the members, rounded up).
3. **Then balanced.** Every other task goes to the least loaded process (ties: one that had the task as a
   standby, then the process id), and there to its least loaded member (ties: member id).
4. **Standby tasks** (``num.standby.replicas`` each): on processes other than those already holding the
   task, preferring a process that had it as a standby, then (with rack-aware assignment tags) one whose
   client tag values differ from those of the processes already holding the task in the most tag
   dimensions, then one whose members reported the most of the task's changelog (their task offsets),
   then the least loaded; never two copies of a task on one process. Fewer standbys are given when there are not enough processes.
5. **Warm-up tasks** are not computed: Kafka 4.4's refinement step after the sticky assignor returns the
   assignment as it is.

Deterministic for a given input. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from tidelog.coordinator.group.modern.streams.tasks import EMPTY_TASKS, TasksTuple, contains, from_pairs

STICKY_ASSIGNOR_NAME = "sticky"


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """A member as the assignor sees it: its process and its previous target assignment."""

    process_id: str
    previous: TasksTuple = EMPTY_TASKS
    #: (subtopology, partition) -> the changelog offset sum the member reported for the task
    task_offsets: Mapping[tuple[str, int], int] = field(default_factory=dict)
    client_tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Member:
    member_id: str
    process_id: str
    active: list[tuple[str, int]] = field(default_factory=list)
    standby: list[tuple[str, int]] = field(default_factory=list)

    def load(self) -> int:
        return len(self.active) + len(self.standby)


def sticky_assign(members: Mapping[str, MemberSpec], task_counts: Mapping[str, int],
                  num_standby_replicas: int = 0, rack_tags: tuple[str, ...] = ()) -> dict[str, TasksTuple]:
    """Every member's tasks (module rules); ``task_counts``: subtopology id -> number of tasks."""
    if not members:
        return {}
    state = {mid: _Member(mid, spec.process_id) for mid, spec in sorted(members.items())}
    processes: dict[str, list[_Member]] = {}
    for m in state.values():
        processes.setdefault(m.process_id, []).append(m)
    tasks = [(s, p) for s in sorted(task_counts) for p in range(task_counts[s])]
    quota = math.ceil(len(tasks) / len(state)) if tasks else 0

    def process_load(pid: str) -> float:
        ms = processes[pid]
        return sum(m.load() for m in ms) / len(ms)

    # 2. sticky active tasks
    unassigned: list[tuple[str, int]] = []
    for task in tasks:
        owner = next((state[mid] for mid, spec in sorted(members.items())
                      if contains(spec.previous.active, *task)), None)
        if owner is not None and len(owner.active) < quota:
            owner.active.append(task)
        else:
            unassigned.append(task)
    # 3. balanced
    for task in unassigned:
        def rank(pid: str, task: tuple[str, int] = task) -> tuple[float, int, str]:
            had_standby = any(contains(members[m.member_id].previous.standby, *task) for m in processes[pid])
            return (process_load(pid), 0 if had_standby else 1, pid)

        pid = min(processes, key=rank)
        member = min(processes[pid], key=lambda m: (len(m.active), m.load(), m.member_id))
        member.active.append(task)
    # 4. standby tasks
    if num_standby_replicas > 0:
        for task in tasks:
            holders = {m.process_id for m in state.values() if task in m.active or task in m.standby}
            for _ in range(num_standby_replicas):
                candidates = [pid for pid in processes if pid not in holders]
                if not candidates:
                    break

                def standby_rank(pid: str, task: tuple[str, int] = task, holders: set[str] = holders
                                 ) -> tuple[int, int, int, float, str]:
                    had = any(contains(members[m.member_id].previous.standby, *task) for m in processes[pid])
                    tags = members[processes[pid][0].member_id].client_tags
                    shared = sum(1 for key in rack_tags for h in holders
                                 if tags.get(key) is not None
                                 and tags.get(key) == members[processes[h][0].member_id].client_tags.get(key))
                    reported = max(members[m.member_id].task_offsets.get(task, -1) for m in processes[pid])
                    return (0 if had else 1, shared, -reported, process_load(pid), pid)

                pid = min(candidates, key=standby_rank)
                member = min(processes[pid], key=lambda m: (m.load(), m.member_id))
                member.standby.append(task)
                holders.add(pid)
    return {mid: TasksTuple(from_pairs(m.active), from_pairs(m.standby), {}) for mid, m in state.items()}


__all__ = ["STICKY_ASSIGNOR_NAME", "MemberSpec", "sticky_assign"]
