"""Client-metrics subscriptions: the CLIENT_METRICS config resources (KIP-714).

A resource (a subscription name) holds three configs, as Kafka's ``ClientMetricsConfigs``: ``metrics``
(metric-name prefixes, ``*`` = all), ``interval.ms`` (push interval, 100..3600000, default 5 minutes) and
``match`` (``attribute=regex`` selectors over the client's ``client_instance_id``, ``client_id``,
``client_software_name``, ``client_software_version``, ``client_source_address``,
``client_source_port``; none = every client). Pure: validation and matching only; the configs live in
the metadata image (``MetadataImage.client_metrics_configs``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tidelog.errors import ErrorCode, KafkaError

METRICS = "metrics"
INTERVAL_MS = "interval.ms"
MATCH = "match"
CONFIG_NAMES = (METRICS, INTERVAL_MS, MATCH)
ALL_METRICS = "*"
DEFAULT_INTERVAL_MS = 5 * 60 * 1000
MIN_INTERVAL_MS = 100
MAX_INTERVAL_MS = 3_600_000
MATCH_ATTRIBUTES = frozenset({
    "client_instance_id", "client_id", "client_software_name", "client_software_version",
    "client_source_address", "client_source_port",
})
#: The configs' defaults and documentation, as DescribeConfigs shows them.
DEFAULTS: dict[str, str] = {METRICS: "", INTERVAL_MS: str(DEFAULT_INTERVAL_MS), MATCH: ""}
DOCS: dict[str, str] = {
    METRICS: "Telemetry metric name prefix list",
    INTERVAL_MS: "Metrics push interval in milliseconds",
    MATCH: "Client match criteria",
}


def split_list(value: str | None) -> list[str]:
    """Kafka's LIST type: comma-separated, each item trimmed, empty items dropped."""
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def parse_match(patterns: list[str]) -> dict[str, re.Pattern[str]]:
    """``attribute=regex`` selectors -> compiled patterns (INVALID_CONFIG for an illegal one, as Kafka)."""
    parsed: dict[str, re.Pattern[str]] = {}
    for pattern in patterns:
        parts = pattern.split("=")
        if len(parts) != 2 or parts[0].strip() not in MATCH_ATTRIBUTES:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")
        try:
            parsed[parts[0].strip()] = re.compile(parts[1].strip())
        except re.error:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}") from None
    return parsed


def validate(name: str, configs: Mapping[str, str]) -> None:
    """Kafka's ``ClientMetricsConfigs.validate``: INVALID_REQUEST for an empty name, an unknown config
    or an interval out of range; INVALID_CONFIG for a value of the wrong type or an illegal pattern."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in configs:
        if key not in CONFIG_NAMES:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    if INTERVAL_MS in configs:
        raw = configs[INTERVAL_MS]
        try:
            interval = int(str(raw).strip())
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_CONFIG,
                             f"Invalid value {raw} for configuration {INTERVAL_MS}: Not a number of type INT") from None
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Invalid value {interval} for {INTERVAL_MS}, interval must be between 100 and "
                             "3600000 (1 hour)")
    if MATCH in configs:
        parse_match(split_list(configs[MATCH]))


@dataclass(frozen=True, slots=True)
class Subscription:
    """One CLIENT_METRICS resource, parsed."""

    name: str
    metrics: frozenset[str]
    interval_ms: int
    match: dict[str, re.Pattern[str]]

    @classmethod
    def of(cls, name: str, configs: Mapping[str, str]) -> Subscription:
        return cls(name, frozenset(split_list(configs.get(METRICS))),
                   int(configs.get(INTERVAL_MS, DEFAULT_INTERVAL_MS)), parse_match(split_list(configs.get(MATCH))))

    def matches(self, attributes: Mapping[str, str | None]) -> bool:
        """Every selector's attribute is known and matches whole (Java's ``Matcher.matches``)."""
        for key, pattern in self.match.items():
            value = attributes.get(key)
            if value is None or pattern.fullmatch(value) is None:
                return False
        return True


def subscriptions_of(configs: Mapping[str, Mapping[str, str]]) -> list[Subscription]:
    """The image's CLIENT_METRICS resources as subscriptions (a stored one that no longer parses is skipped)."""
    out = []
    for name, values in sorted(configs.items()):
        try:
            out.append(Subscription.of(name, values))
        except (KafkaError, ValueError):
            continue
    return out


__all__ = [
    "ALL_METRICS", "CONFIG_NAMES", "DEFAULTS", "DEFAULT_INTERVAL_MS", "DOCS", "INTERVAL_MS", "MATCH", "METRICS",
    "Subscription", "parse_match", "split_list", "subscriptions_of", "validate",
]
