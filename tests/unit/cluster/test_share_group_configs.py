"""The share group configs of Kafka 4.4's GroupConfig (ConfigResource GROUP): names, defaults from the
broker's group.share.* where Kafka takes them, and Kafka's validation."""

from __future__ import annotations

import pytest

from tidelog.cluster.group_config import GROUP_CONFIGS, group_config_defaults, validate_group_configs
from tidelog.config import BrokerConfig
from tidelog.errors import ConfigError


def broker(**props: str) -> BrokerConfig:
    return BrokerConfig.from_props({"log.dirs": "/tmp/unused", **props})


def test_kafka_44_share_group_config_names_and_defaults() -> None:
    assert {"share.session.timeout.ms", "share.heartbeat.interval.ms", "share.record.lock.duration.ms",
            "share.delivery.count.limit", "share.partition.max.record.locks", "share.auto.offset.reset",
            "share.isolation.level", "share.renew.acknowledge.enable", "share.assignment.interval.ms"} <= GROUP_CONFIGS.keys()
    assert "share.assignor.offload.enable" not in GROUP_CONFIGS  # Kafka 4.4 does not describe it
    defaults = group_config_defaults(broker(**{"group.share.session.timeout.ms": "50000"}))
    assert defaults["share.session.timeout.ms"] == 50_000  # the broker's group.share.session.timeout.ms
    assert (defaults["share.auto.offset.reset"], defaults["share.isolation.level"], defaults["share.delivery.count.limit"],
            defaults["share.partition.max.record.locks"], defaults["share.renew.acknowledge.enable"]) == (
        "latest", "read_uncommitted", 5, 2000, True)  # renew: Kafka 4.4 describes a group's as true


@pytest.mark.parametrize("configs", [
    {"share.auto.offset.reset": "earliest"},
    {"share.auto.offset.reset": "by_duration:P1DT2H"},
    {"share.isolation.level": "read_committed"},
    {"share.delivery.count.limit": "2"},
    {"share.partition.max.record.locks": "4000"},
    {"share.session.timeout.ms": "60000", "share.heartbeat.interval.ms": "15000"},
])
def test_valid_values_are_accepted(configs: dict[str, str]) -> None:
    values = validate_group_configs(configs, broker())
    for name, raw in configs.items():
        assert str(values[name]).lower() == raw.lower()


@pytest.mark.parametrize(("configs", "message"), [
    ({"share.auto.offset.reset": "none"}, "share.auto.offset.reset"),
    ({"share.auto.offset.reset": "by_duration:-PT1H"}, "share.auto.offset.reset"),
    ({"share.isolation.level": "committed"}, "share.isolation.level"),
    ({"share.delivery.count.limit": "1"}, "group.share.min.delivery.count.limit"),
    ({"share.delivery.count.limit": "11"}, "group.share.max.delivery.count.limit"),
    ({"share.partition.max.record.locks": "99"}, "group.share.min.partition.max.record.locks"),
    ({"share.session.timeout.ms": "44999"}, "group.share.min.session.timeout.ms"),
    ({"share.heartbeat.interval.ms": "15001"}, "group.share.max.heartbeat.interval.ms"),
    ({"share.acquire.mode": "record_limit"}, "Unknown group config name"),  # KIP-1206's is a client config
])
def test_invalid_values_are_refused_as_kafka_does(configs: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate_group_configs(configs, broker())
