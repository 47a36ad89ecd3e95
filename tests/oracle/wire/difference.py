"""Field-by-field differences between two normalised responses (:mod:`.normalisation` trees).

A difference names the step (``API:case@vN``), the path of the field (``topics[orders].partitions[0]
.error_code``: ``.field`` for a struct's field, ``[key]`` for an entity keyed by its identity or a
list position) and the two values, rendered as compact JSON; ``<absent>`` where one side has no
such field or entity. Pure functions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ABSENT = "<absent>"


@dataclass(frozen=True, order=True)
class Difference:
    step: str
    path: str
    kafka: str
    tidelog: str

    def __str__(self) -> str:
        return f"{self.step}  {self.path}: Kafka {self.kafka}, Tidelog {self.tidelog}"


def render(value: Any) -> str:
    if value is ABSENT:
        return ABSENT
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def differences(step: str, kafka: Any, tidelog: Any, path: str = "") -> list[Difference]:
    """Every leaf (or whole subtree present on one side only) where the two trees differ."""
    if isinstance(kafka, dict) and isinstance(tidelog, dict):
        out: list[Difference] = []
        keys = list(kafka) + [k for k in tidelog if k not in kafka]
        keyed = _is_keyed(kafka) or _is_keyed(tidelog)
        for key in keys:
            sub = f"{path}[{key}]" if keyed else (f"{path}.{key}" if path else key)
            out += differences(step, kafka.get(key, ABSENT), tidelog.get(key, ABSENT), sub)
        return out
    if isinstance(kafka, list) and isinstance(tidelog, list) and len(kafka) == len(tidelog):
        out = []
        for i, (a, b) in enumerate(zip(kafka, tidelog, strict=True)):
            out += differences(step, a, b, f"{path}[{i}]")
        return out
    if kafka == tidelog and type(kafka) is type(tidelog):
        return []
    return [Difference(step, path, render(kafka), render(tidelog))]


class Keyed(dict):
    """A dict made from a list of entities (keys are identities, not field names)."""


def _is_keyed(value: dict) -> bool:
    return isinstance(value, Keyed)


__all__ = ["ABSENT", "Difference", "Keyed", "differences", "render"]
