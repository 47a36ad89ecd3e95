"""A streams group's topology as the coordinator configures it against the cluster's metadata (Kafka's
``InternalTopicManager.configureTopics``, ``RepartitionTopics``, ``ChangelogTopics``,
``CopartitionedTopicsEnforcer``). Rules:

1. **Source topics.** Every source topic must exist; a source regex must match at least one topic. Otherwise
   the status is MISSING_SOURCE_TOPICS and the group gets no tasks.
2. **Repartition topics.** A repartition topic with a partition count in the topology keeps it; otherwise it
   gets the largest partition count of the source topics (and repartition sources, resolved first) of the
   subtopologies writing to it.
3. **Copartitioning.** The user topics of a copartition group must have the same partition count (else
   INCORRECTLY_PARTITIONED_TOPICS); its repartition topics without a fixed count take that count (or, with
   no user topic in the group, the largest of the group's repartition topics).
4. **Tasks.** A subtopology has as many tasks as its source topics (user and repartition) have partitions
   at most; its changelog topics have that many partitions.
5. **Internal topics** (repartition and changelog topics) that do not exist are to be created by the
   coordinator (status MISSING_INTERNAL_TOPICS meanwhile); one that exists with another partition count is
   INCORRECTLY_PARTITIONED_TOPICS.

The group is *ready* (tasks can be assigned) once there is no status. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tidelog.cluster.metadata import MetadataImage

#: Status codes of StreamsGroupHeartbeatResponse.
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5
MISSING_CLIENT_TAGS = 6  # StreamsGroupHeartbeat v1+


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """An internal topic to create: name, partitions, replication factor (0: the broker default), configs."""

    name: str
    partitions: int
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """The outcome: tasks per subtopology (empty unless ready), statuses, topics to create, and for describe
    the resolved source topics and partition counts of each subtopology."""

    task_counts: dict[str, int] = field(default_factory=dict)
    statuses: tuple[tuple[int, str], ...] = ()
    to_create: tuple[InternalTopic, ...] = ()
    source_topics: dict[str, tuple[str, ...]] = field(default_factory=dict)
    internal_partitions: dict[str, int] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return not self.statuses

    def topics_of(self, subtopology: str) -> tuple[str, ...]:
        return self.source_topics.get(subtopology, ())


def _partitions(image: MetadataImage, name: str) -> int | None:
    topic = image.topics.get(name)
    return len(topic.partitions) if topic is not None else None


def _regex_topics(patterns: list[str], image: MetadataImage) -> list[str]:
    out: list[str] = []
    for pattern in patterns:
        try:
            rx = re.compile(pattern)
        except re.error:
            continue
        out += [t for t in sorted(image.topics) if rx.fullmatch(t) and not t.startswith("__")]
    return out


def configure(topology: Any, image: MetadataImage) -> ConfiguredTopology:
    """Configure ``topology`` (a StreamsGroupTopologyValue) against ``image`` (module rules)."""
    subs = list(topology.subtopologies)
    repartition: dict[str, Any] = {t.name: t for s in subs for t in s.repartition_source_topics}
    changelogs: dict[str, Any] = {t.name: t for s in subs for t in s.state_changelog_topics}
    # 1. source topics
    missing: list[str] = []
    user_sources: dict[str, list[str]] = {}
    for s in subs:
        names = list(s.source_topics)
        for name in names:
            if name not in repartition and name not in image.topics:
                missing.append(name)
        if s.source_topic_regex:
            matched = _regex_topics(list(s.source_topic_regex), image)
            if not matched:
                missing.append(f"regex {','.join(s.source_topic_regex)}")
            names += matched
        user_sources[s.subtopology_id] = [n for n in names if n not in repartition]
    if missing:
        return ConfiguredTopology(statuses=((MISSING_SOURCE_TOPICS,
                                             f"Source topics {', '.join(sorted(set(missing)))} are missing."),))
    # 2. repartition topics' partition counts
    counts: dict[str, int] = {name: t.partitions for name, t in repartition.items() if t.partitions > 0}
    for _ in range(len(repartition) + 1):
        changed = False
        for name in repartition:
            if name in counts and repartition[name].partitions > 0:
                continue
            best = 0
            for s in subs:
                if name not in s.repartition_sink_topics:
                    continue
                for src in user_sources[s.subtopology_id]:
                    best = max(best, _partitions(image, src) or 0)
                for rs in s.repartition_source_topics:
                    best = max(best, counts.get(rs.name, 0))
            if best and counts.get(name) != best:
                counts[name] = best
                changed = True
        if not changed:
            break
    unresolved = sorted(n for n in repartition if n not in counts)
    if unresolved:
        return ConfiguredTopology(statuses=((MISSING_SOURCE_TOPICS, "Failed to compute the number of partitions "
                                             f"of repartition topics {', '.join(unresolved)}."),))
    # 3. copartitioning
    for s in subs:
        for group in s.copartition_groups:
            users = [s.source_topics[i] for i in group.source_topics if 0 <= i < len(s.source_topics)]
            users = [n for n in users if n not in repartition]
            reps = [s.repartition_source_topics[i].name for i in group.repartition_source_topics
                    if 0 <= i < len(s.repartition_source_topics)]
            user_counts = {n: _partitions(image, n) or 0 for n in users}
            if len(set(user_counts.values())) > 1:
                detail = ", ".join(f"{n}={c}" for n, c in sorted(user_counts.items()))
                return ConfiguredTopology(statuses=((INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have "
                                                     f"the same number of partitions: [{detail}]"),))
            target = next(iter(user_counts.values())) if user_counts else max((counts[r] for r in reps), default=0)
            for r in reps:
                if repartition[r].partitions > 0 and repartition[r].partitions != target:
                    return ConfiguredTopology(statuses=((INCORRECTLY_PARTITIONED_TOPICS,
                                                         f"Number of partitions of repartition topic {r} does not "
                                                         "match the copartitioned topics."),))
                counts[r] = target
    # 4. tasks and changelog partitions
    task_counts: dict[str, int] = {}
    sources: dict[str, tuple[str, ...]] = {}
    internal = dict(counts)
    for s in subs:
        names = user_sources[s.subtopology_id] + [t.name for t in s.repartition_source_topics]
        sources[s.subtopology_id] = tuple(names)
        n = max([_partitions(image, u) or 0 for u in user_sources[s.subtopology_id]]
                + [counts[t.name] for t in s.repartition_source_topics] + [0])
        task_counts[s.subtopology_id] = n
        for c in s.state_changelog_topics:
            internal[c.name] = n
    # 5. internal topics
    to_create: list[InternalTopic] = []
    wrong: list[str] = []
    for name, n in sorted(internal.items()):
        have = _partitions(image, name)
        info = repartition.get(name) or changelogs.get(name)
        if have is None:
            configs = tuple((c.key, c.value) for c in info.topic_configs) if info is not None else ()
            to_create.append(InternalTopic(name, n, info.replication_factor if info is not None else 0, configs))
        elif have != n:
            wrong.append(f"{name} (expected {n}, has {have})")
    statuses: list[tuple[int, str]] = []
    if wrong:
        statuses.append((INCORRECTLY_PARTITIONED_TOPICS, f"Internal topics are incorrectly partitioned: "
                         f"{', '.join(wrong)}"))
    if to_create:
        statuses.append((MISSING_INTERNAL_TOPICS, "Internal topics are missing: "
                         f"[{', '.join(t.name for t in to_create)}]"))
    return ConfiguredTopology(task_counts if not statuses else {}, tuple(statuses), tuple(to_create), sources,
                              internal)


__all__ = [
    "ASSIGNMENT_DELAYED",
    "INCORRECTLY_PARTITIONED_TOPICS",
    "MISSING_CLIENT_TAGS",
    "MISSING_INTERNAL_TOPICS",
    "MISSING_SOURCE_TOPICS",
    "SHUTDOWN_APPLICATION",
    "STALE_TOPOLOGY",
    "ConfiguredTopology",
    "InternalTopic",
    "configure",
]
