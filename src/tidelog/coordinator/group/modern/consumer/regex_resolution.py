"""Regular-expression subscriptions of consumer groups, resolved off the heartbeat (rule 8 of
:mod:`tidelog.coordinator.group.modern.consumer.manager`, as Kafka's coordinator resolves them in the background): a
heartbeat only checks a new regex's syntax and, when a regex in use is unresolved or was resolved
against an older metadata image, schedules a refresh; the refresh (a zero-delay timer on the group's
partition) resolves every regex of the group against the latest image, writes a
ConsumerGroupRegularExpression record for each one whose topics changed and, if any did, a new group
epoch. Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.modern.consumer.group import ConsumerGroup, ConsumerGroupMember
from tidelog.coordinator.group.modern.consumer.records import (
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
)
from tidelog.coordinator.group.modern.member_timers import ConsumerGroupTimers
from tidelog.coordinator.group.modern.subscription import (
    ResolvedRegex,
    compile_regex,
    metadata_hash,
    regex_subscribers,
    resolve_regex,
    subscribed_names,
)
from tidelog.coordinator.group.records import CoordinatorRecord
from tidelog.coordinator.runtime import Result
from tidelog.errors import KafkaError


class RegexResolution:
    """The regexes of every consumer group: ``group(id)`` finds a consumer group, ``image()`` the
    latest metadata image; ``timers`` run the refreshes (none: never refreshed)."""

    def __init__(self, clock: Clock, timers: ConsumerGroupTimers | None,
                 group: Callable[[str], ConsumerGroup | None], image: Callable[[], MetadataImage | None]) -> None:
        self.clock = clock
        self.timers = timers
        self._group = group
        self._image = image
        self._regex_checked: dict[tuple[str, str], int] = {}  # (group, regex) -> image version last resolved at
        self._refresh_pending: set[str] = set()

    def update(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                        members_after: Mapping[str, ConsumerGroupMember], image: MetadataImage,
                        records: list[CoordinatorRecord]) -> tuple[dict[str, ResolvedRegex], bool]:
        """Rule 8, the heartbeat's part: records for regexes that go; the regexes as they are now; and
        whether the subscriptions change because of them (a new group epoch). A regex that is new, or
        was resolved against an older metadata image, is resolved later, off the heartbeat
        (:meth:`refresh`), as Kafka's coordinator does; only its syntax is checked now."""
        gid = group.group_id
        regexes = dict(group.resolved_regexes)
        bump = False
        in_use = regex_subscribers(members_after.values())
        old, new = member.regex, updated.regex
        if old != new:
            if old is not None and old not in in_use and old in regexes:
                records.append(CoordinatorRecord(ConsumerGroupRegularExpressionKey(gid, old)))
                del regexes[old]
                bump = True
            if new is not None:
                if new in regexes:
                    bump = True  # a new subscriber of a regex already resolved
                else:
                    compile_regex(new)  # INVALID_REGULAR_EXPRESSION before anything is written
        if any(r not in regexes or (self._regex_checked.get((gid, r)) != image.version
               and regexes[r].version != image.version) for r in in_use):
            self._schedule_refresh(gid)
        return regexes, bump

    def _schedule_refresh(self, group_id: str) -> None:
        if self.timers is not None and group_id not in self._refresh_pending:
            self._refresh_pending.add(group_id)
            self.timers.schedule(f"regex-refresh-{group_id}", 0, group_id, lambda: self.refresh(group_id))

    def refresh(self, group_id: str) -> Result[None] | None:
        """Resolve the group's regexes against the latest metadata image: records for those whose
        topics changed and, if any did, a new group epoch (members get the topics on their next
        heartbeat)."""
        self._refresh_pending.discard(group_id)
        group = self._group(group_id)
        image = self._image()
        if group is None or image is None:
            return None
        regexes = dict(group.resolved_regexes)
        records: list[CoordinatorRecord] = []
        for regex in sorted(regex_subscribers(group.members.values())):
            known = regexes.get(regex)
            if known is not None and known.version == image.version:
                continue
            try:
                topics = resolve_regex(regex, image)
            except KafkaError:
                continue  # refused at subscription; a record written by an older version: leave it
            self._regex_checked[(group_id, regex)] = image.version
            if known is None or known.topics != topics:
                regexes[regex] = ResolvedRegex(topics, image.version, self.clock.wall_ms())
                records.append(CoordinatorRecord(ConsumerGroupRegularExpressionKey(group_id, regex),
                                                 ConsumerGroupRegularExpressionValue(
                                                     tuple(sorted(topics)), image.version, regexes[regex].timestamp)))
        if not records:
            return None
        names = set().union(*(subscribed_names(m, regexes) for m in group.members.values()))
        records.append(CoordinatorRecord(ConsumerGroupMetadataKey(group_id),
                                         ConsumerGroupMetadataValue(group.group_epoch + 1, metadata_hash(names, image))))
        return Result(records)


__all__ = ["RegexResolution"]
