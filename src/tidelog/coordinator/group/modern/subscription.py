"""What consumer group members subscribe to: topic names and regular expressions resolved against the
metadata image, and the metadata hash that tells when the subscribed topics changed (rules 1 and 8 of
:mod:`tidelog.coordinator.group.modern.consumer.manager`). Pure functions."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.modern.member import ModernGroupMember
from tidelog.errors import ErrorCode, KafkaError


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    topics: frozenset[str]
    version: int  # the metadata image version it was resolved against
    timestamp: int


def regex_subscribers(members: Iterable[ModernGroupMember]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in members:
        if m.regex is not None:
            counts[m.regex] = counts.get(m.regex, 0) + 1
    return counts


def subscribed_names(member: ModernGroupMember, regexes: Mapping[str, ResolvedRegex]) -> set[str]:
    names = set(member.subscribed_topic_names)
    if member.regex is not None and member.regex in regexes:
        names |= regexes[member.regex].topics
    return names


def metadata_hash(topic_names: Iterable[str], image: MetadataImage) -> int:
    """A stable int64 over (name, topic id, partition count) of the subscribed topics that exist."""
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(set(topic_names)):
        topic = image.topics.get(name)
        if topic is not None:
            h.update(f"{name}\0{topic.topic_id}\0{len(topic.partitions)}\n".encode())
    return int.from_bytes(h.digest(), "big", signed=True)



def compile_regex(regex: str) -> re.Pattern[str]:
    try:
        return re.compile(regex)
    except re.error as e:
        raise KafkaError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}.") from None


def resolve_regex(regex: str, image: MetadataImage) -> frozenset[str]:
    """The topic names the regex matches as a whole (RE2/J ``matches()``)."""
    pattern = compile_regex(regex)
    return frozenset(name for name in image.topics if pattern.fullmatch(name))



def topic_ids(names: Iterable[str], image: MetadataImage) -> frozenset[uuid.UUID]:
    return frozenset(image.topics[n].topic_id for n in names if n in image.topics)



__all__ = ["compile_regex", "metadata_hash", "regex_subscribers", "resolve_regex", "subscribed_names", "topic_ids"]
