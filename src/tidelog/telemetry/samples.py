"""What a client pushed, flattened: one value of one series (no protobuf here, so that a broker loads
opentelemetry-proto and protobuf only when a push is decoded: tidelog.telemetry.otlp)."""

from __future__ import annotations

import re
from dataclasses import dataclass

GAUGE, COUNTER = "gauge", "counter"
_INVALID = re.compile(r"[^a-zA-Z0-9_:]")


@dataclass(frozen=True, slots=True)
class Sample:
    """One value of one series: ``name`` as the client sent it (OTLP's dotted name)."""

    name: str
    kind: str  # GAUGE or COUNTER
    labels: tuple[tuple[str, str], ...]
    value: float
    delta: bool  # a counter's increase since the previous push, to be added up
    description: str = ""


def prometheus_name(name: str) -> str:
    """OpenTelemetry's Prometheus naming: characters outside ``[a-zA-Z0-9_:]`` become ``_``."""
    out = _INVALID.sub("_", name)
    return "_" + out if out[:1].isdigit() else out


__all__ = ["COUNTER", "GAUGE", "Sample", "prometheus_name"]
