"""Entries a request names more than once: Kafka refuses each such entry with INVALID_REQUEST
(CreateTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def duplicated(keys: Iterable[K]) -> dict[K, None]:
    """The keys that appear more than once, in order of first appearance (a dict: ordered, and
    ``in`` is cheap)."""
    return {k: None for k, n in Counter(keys).items() if n > 1}


__all__ = ["duplicated"]
