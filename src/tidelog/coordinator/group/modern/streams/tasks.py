"""Tasks of a streams group (Kafka's TaskId and TasksTuple): a task is (subtopology id, partition); a
member holds active, standby and warm-up tasks. Pure, immutable."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: subtopology id -> partitions
Tasks = Mapping[str, frozenset[int]]


def tasks_of(items: Iterable[Any] | None) -> dict[str, frozenset[int]]:
    """Tasks from a list of ``TaskIds`` (any generated class with subtopology_id and partitions)."""
    out: dict[str, frozenset[int]] = {}
    for item in items or ():
        out[item.subtopology_id] = out.get(item.subtopology_id, frozenset()) | frozenset(item.partitions)
    return {s: ps for s, ps in out.items() if ps}


def task_ids(cls: type, tasks: Tasks) -> list[Any]:
    """``tasks`` as a sorted list of ``cls(subtopology_id, partitions)``."""
    return [cls(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]


def minus(a: Tasks, b: Tasks) -> dict[str, frozenset[int]]:
    out = {s: ps - b.get(s, frozenset()) for s, ps in a.items()}
    return {s: ps for s, ps in out.items() if ps}


def intersect(a: Tasks, b: Tasks) -> dict[str, frozenset[int]]:
    out = {s: ps & b.get(s, frozenset()) for s, ps in a.items()}
    return {s: ps for s, ps in out.items() if ps}


def union(a: Tasks, b: Tasks) -> dict[str, frozenset[int]]:
    out = dict(a)
    for s, ps in b.items():
        out[s] = out.get(s, frozenset()) | ps
    return {s: ps for s, ps in out.items() if ps}


def contains(tasks: Tasks, subtopology: str, partition: int) -> bool:
    return partition in tasks.get(subtopology, frozenset())


def pairs(tasks: Tasks) -> list[tuple[str, int]]:
    return [(s, p) for s in sorted(tasks) for p in sorted(tasks[s])]


def from_pairs(items: Iterable[tuple[str, int]]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for s, p in items:
        out.setdefault(s, set()).add(p)
    return {s: frozenset(ps) for s, ps in out.items()}


def normalized(tasks: Tasks) -> dict[str, frozenset[int]]:
    return {s: frozenset(ps) for s, ps in tasks.items() if ps}


@dataclass(frozen=True, slots=True)
class TasksTuple:
    """Active, standby and warm-up tasks (Kafka's TasksTuple)."""

    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TasksTuple) and normalized(self.active) == normalized(other.active)
                and normalized(self.standby) == normalized(other.standby)
                and normalized(self.warmup) == normalized(other.warmup))

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, tuple(sorted(v))) for k, v in normalized(self.active).items())))

    def minus(self, other: TasksTuple) -> TasksTuple:
        return TasksTuple(minus(self.active, other.active), minus(self.standby, other.standby),
                          minus(self.warmup, other.warmup))

    def intersect(self, other: TasksTuple) -> TasksTuple:
        return TasksTuple(intersect(self.active, other.active), intersect(self.standby, other.standby),
                          intersect(self.warmup, other.warmup))

    def union(self, other: TasksTuple) -> TasksTuple:
        return TasksTuple(union(self.active, other.active), union(self.standby, other.standby),
                          union(self.warmup, other.warmup))

    def holds(self, subtopology: str, partition: int) -> bool:
        return any(contains(t, subtopology, partition) for t in (self.active, self.standby, self.warmup))

    @classmethod
    def of(cls, value: Any) -> TasksTuple:
        """From any generated value with active_tasks, standby_tasks and warmup_tasks."""
        return cls(tasks_of(value.active_tasks), tasks_of(value.standby_tasks), tasks_of(value.warmup_tasks))


EMPTY_TASKS = TasksTuple()


__all__ = ["EMPTY_TASKS", "Tasks", "TasksTuple", "contains", "from_pairs", "intersect", "minus", "normalized",
           "pairs", "task_ids", "tasks_of", "union"]
