"""Topic and broker configuration: Kafka names, defaults, validation."""

from __future__ import annotations

import re

import pytest

from tidelog.config import (
    BROKER_SYNONYMS,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    TopicConfig,
    topic_defaults_from_broker,
)


def test_defaults_match_kafka() -> None:
    c = TopicConfig()
    assert c.segment_bytes == 1024**3
    assert c.retention_ms == 7 * 24 * 3600 * 1000
    assert c.retention_bytes == -1
    assert c.cleanup_policy == "delete"
    assert c.index_interval_bytes == 4096
    assert c.max_message_bytes == 1048588
    assert c.min_cleanable_dirty_ratio == 0.5
    assert c.delete_retention_ms == 86_400_000


def test_every_topic_config_has_an_attribute_and_a_broker_synonym() -> None:
    c = TopicConfig()
    for name, d in TOPIC_CONFIGS.items():
        assert getattr(c, name.replace(".", "_")) == d.default, name
        # Confluent Server's schema validation configs are topic-only, as there; as in Kafka, the share
        # groups' DLQ flag (KIP-1191) has no broker default
        assert (d.broker_synonym is None) == (name.startswith("confluent.")
                                              or name == "errors.deadletterqueue.group.enable"), name
    assert BROKER_SYNONYMS["log.segment.bytes"] == "segment.bytes"


def test_overrides_are_parsed_and_validated() -> None:
    c = TopicConfig.from_dict({"retention.ms": "1000", "cleanup.policy": "delete,compact"})
    assert c.retention_ms == 1000 and c.cleanup_policy == "compact,delete" and c.compact and c.delete
    with pytest.raises(ConfigError, match="retention.ms"):
        TopicConfig.from_dict({"retention.ms": "soon"})
    with pytest.raises(ConfigError, match="cleanup.policy"):
        TopicConfig.from_dict({"cleanup.policy": "archive"})
    with pytest.raises(ConfigError, match="min.cleanable.dirty.ratio"):
        TopicConfig.from_dict({"min.cleanable.dirty.ratio": "1.5"})
    with pytest.raises(ConfigError, match="Unknown topic config"):
        TopicConfig.from_dict({"retention.minutes": "1"})
    with pytest.raises(ConfigError, match="message.timestamp.type"):
        TopicConfig.from_dict({"message.timestamp.type": "Now"})


def test_broker_properties_supply_topic_defaults() -> None:
    c = topic_defaults_from_broker({"log.retention.hours": "1", "log.segment.bytes": "2048", "num.partitions": "3"})
    assert c.retention_ms == 3_600_000 and c.segment_bytes == 2048
    c = topic_defaults_from_broker({"log.retention.hours": "1", "log.retention.ms": "5"})
    assert c.retention_ms == 5  # ms wins over hours, as in Kafka
    c = topic_defaults_from_broker({"log.retention.minutes": "2"})
    assert c.retention_ms == 120_000


# --------------------------------------------------------------- operator-facing parsing (issue 10)


def test_listeners_parse_as_kafka_parses_them() -> None:
    from tidelog.listener import Listener

    c = BrokerConfig.from_props({
        "listeners": "PLAINTEXT://:9092, internal://[::1]:9093,EXT://host-1.example:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,EXT:SSL",
        "advertised.listeners": "PLAINTEXT://broker.example:19092",
    })
    assert c["listeners"] == (Listener("PLAINTEXT", "", 9092), Listener("INTERNAL", "::1", 9093),
                              Listener("EXT", "host-1.example", 0))
    assert c["advertised.listeners"] == (Listener("PLAINTEXT", "broker.example", 19092),)
    assert str(c["listeners"][1]) == "INTERNAL://[::1]:9093"


@pytest.mark.parametrize("props, message", [
    ({"listeners": "localhost:9092"}, "configuration listeners: expected NAME://HOST:PORT"),
    ({"listeners": "PLAINTEXT://h:70000"}, "port 70000 is not between 0 and 65535"),
    ({"listeners": "PLAINTEXT://a:1,PLAINTEXT://b:2"}, "each listener must have a different name"),
    ({"listeners": "A://a:1,B://b:1", "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT"},
     "each listener must have a different port"),
    ({"listeners": "OTHER://:1"}, "listener OTHER has no security protocol"),
    ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "nonroutable meta-address 0.0.0.0"),
    ({"advertised.listeners": "NOPE://h:1"}, "NOPE is not one of the listeners"),
    ({"node.id": "seven"}, "Invalid value 'seven' for configuration node.id"),
    ({"log.retention.hours": "a week"}, "configuration log.retention.hours"),
    ({"log.segment.bytes": "-3"}, "configuration log.segment.bytes"),
    ({"group.consumer.migration.policy": "sideways"},
     "Invalid value 'sideways' for configuration group.consumer.migration.policy"),
])
def test_bad_values_are_reported_under_the_key_the_user_wrote(props, message) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        BrokerConfig.from_props(props)


@pytest.mark.parametrize("key, value", [
    ("log.retention.hours", "-1"), ("log.retention.minutes", "-1"), ("log.retention.ms", "-1"),
    ("log.retention.hours", "-5"),
])
def test_negative_retention_means_unlimited(key, value) -> None:
    assert BrokerConfig.from_props({key: value}).topic_defaults.retention_ms == -1


def test_an_unknown_key_close_to_a_known_one_gets_did_you_mean() -> None:
    c = BrokerConfig.from_props({"log.retension.hours": "1", "totally.custom.key": "x"})
    assert c.unknown == ("log.retension.hours", "totally.custom.key")
    assert c.describe_unknown("log.retension.hours").endswith("did you mean 'log.retention.hours'?")
    assert "did you mean" not in c.describe_unknown("totally.custom.key")


def test_the_migration_policy_is_kafkas_case_insensitive_string() -> None:
    assert BrokerConfig.from_props({})["group.consumer.migration.policy"] == "bidirectional"  # Kafka 4.x default
    assert BrokerConfig.from_props({"group.consumer.migration.policy": " Upgrade "})[
        "group.consumer.migration.policy"] == "upgrade"


# ------------------------------------------------------------------------------------------ TubeMQ listeners


def test_tubemq_listeners_are_off_unless_both_are_set() -> None:
    config = BrokerConfig.from_props({})
    assert config["tubemq.master.listener"] is None and config["tubemq.broker.listener"] is None
    config = BrokerConfig.from_props({"tubemq.master.listener": "localhost:8715", "tubemq.broker.listener": ":8123",
                                      "tubemq.broker.advertised.listener": "[::1]:18123"})
    assert config["tubemq.master.listener"] == ("localhost", 8715)
    assert config["tubemq.broker.listener"] == ("", 8123)  # every interface
    assert config["tubemq.broker.advertised.listener"] == ("::1", 18123)
    assert BrokerConfig.from_props({"tubemq.master.listener": " ", "tubemq.broker.listener": ""}).unknown == ()


@pytest.mark.parametrize(("props", "message"), [
    ({"tubemq.master.listener": "localhost:8715"}, "set both listeners"),
    ({"tubemq.broker.listener": "localhost:8123"}, "set both listeners"),
    ({"tubemq.master.listener": "localhost", "tubemq.broker.listener": ":8123"}, "expected HOST:PORT"),
    ({"tubemq.master.listener": "h:99999", "tubemq.broker.listener": ":8123"}, "not between 0 and 65535"),
    ({"tubemq.master.listener": ":8123", "tubemq.broker.listener": "h:8123"}, "port 8123 is tubemq.master.listener's"),
])
def test_bad_tubemq_listeners_are_config_errors(props: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_props(props)


def test_cluster_mode_keys_have_kafkas_defaults() -> None:
    config = BrokerConfig.from_props({})
    assert config["zookeeper.connect"] is None
    assert config["zookeeper.session.timeout.ms"] == 18_000
    assert config["zookeeper.connection.timeout.ms"] is None
    assert config["broker.rack"] is None
    assert config["replica.lag.time.max.ms"] == 30_000
    assert config["default.replication.factor"] == 1
    assert config.topic_defaults.min_insync_replicas == 1
    assert config.topic_defaults.unclean_leader_election_enable is False
    assert "zookeeper.connect" not in config.unknown


def test_zookeeper_connect_with_several_hosts_and_a_chroot() -> None:
    config = BrokerConfig.from_props({"zookeeper.connect": "zk1:2181, zk2:2182,zk3/kafka/prod", "broker.id": "3",
                                      "broker.rack": "r1", "min.insync.replicas": "2",
                                      "unclean.leader.election.enable": "true"})
    zk = config["zookeeper.connect"]
    assert zk.hosts == (("zk1", 2181), ("zk2", 2182), ("zk3", 2181))
    assert zk.chroot == "/kafka/prod"
    assert str(zk) == "zk1:2181,zk2:2182,zk3:2181/kafka/prod"
    assert config["broker.rack"] == "r1"
    assert config.topic_defaults.min_insync_replicas == 2
    assert config.topic_defaults.unclean_leader_election_enable is True


@pytest.mark.parametrize("props, message", [
    ({"zookeeper.connect": "zk:2181"}, "broker.id (or node.id) must be set"),
    ({"zookeeper.connect": "zk:abc", "broker.id": "1"}, "port 'abc' is not a number"),
    ({"zookeeper.connect": ":2181", "broker.id": "1"}, "missing host"),
    ({"zookeeper.connect": "zk:2181/a/", "broker.id": "1"}, "malformed chroot"),
    ({"zookeeper.connect": "zk:70000", "broker.id": "1"}, "not between 1 and 65535"),
    ({"zookeeper.session.timeout.ms": "0"}, "zookeeper.session.timeout.ms"),
    ({"replica.lag.time.max.ms": "x"}, "replica.lag.time.max.ms"),
])
def test_bad_cluster_settings_are_config_errors(props: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        BrokerConfig.from_props(props)


def test_node_id_counts_as_the_broker_id_of_a_cluster() -> None:
    assert BrokerConfig.from_props({"zookeeper.connect": "zk", "node.id": "4"})["broker.id"] == 4


@pytest.mark.parametrize("value, message", [
    # the dev-cluster's "(data in DIR, console URL)" pasted: formerly a directory named "console http:"
    ("/tmp/tidelog-dev-cluster-x/broker-1, console http://127.0.0.1:9644/)", "a URL, not a directory path"),
    ("file:///var/lib/tidelog", "a URL"),
    ("/data/a /data/b", "separate log dirs with commas"),
    ("data in /tmp/x", "separate log dirs with commas"),
    ("/data/a\tb", "control character"),
])
def test_log_dirs_that_are_not_paths_are_refused(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        BrokerConfig.from_props({"log.dirs": value})
    assert "log.dirs" in str(e.value) and "\n" not in str(e.value)


def test_log_dirs_are_paths_separated_by_commas() -> None:
    config = BrokerConfig.from_props({"log.dir": "/data/a, ./b,/Volumes/My Disk/tidelog,C:\\kafka"})
    assert config["log.dirs"] == ("/data/a", "./b", "/Volumes/My Disk/tidelog", "C:\\kafka")


def test_a_first_listener_on_port_0_frees_the_http_port_unless_it_is_set() -> None:
    # --port 0 means "any free port" for every listener: a second broker must not collide on 9644
    assert BrokerConfig.from_props({"listeners": "PLAINTEXT://127.0.0.1:0"})["metrics.listener"] == ("127.0.0.1", 0)
    assert BrokerConfig.from_props({})["metrics.listener"] == ("127.0.0.1", 9644)
    assert BrokerConfig.from_props({"listeners": "PLAINTEXT://:9092"})["metrics.listener"] == ("127.0.0.1", 9644)
    named = {"listeners": "PLAINTEXT://:0", "metrics.listener": "http://127.0.0.1:9700"}
    assert BrokerConfig.from_props(named)["metrics.listener"] == ("127.0.0.1", 9700)
    assert BrokerConfig.from_props({"listeners": "PLAINTEXT://:0", "metrics.listener": ""})["metrics.listener"] is None


def test_the_schema_registry_is_on_in_a_single_node_and_in_a_cluster() -> None:
    """schema.registry.enable (docs/schema-registry.md): on by default, on a single node and (every
    broker serving it, the leader of _schemas writing) with zookeeper.connect; false turns it off."""
    assert BrokerConfig.from_props({})["schema.registry.enable"] is True
    assert BrokerConfig.from_props({})["schema.registry.path"] == "/"
    assert BrokerConfig.from_props({"schema.registry.path": "/schema-registry/"})["schema.registry.path"] == (
        "/schema-registry")
    cluster = {"zookeeper.connect": "127.0.0.1:2181", "broker.id": "1"}
    assert BrokerConfig.from_props(cluster)["schema.registry.enable"] is True
    assert BrokerConfig.from_props({**cluster, "schema.registry.enable": "true"})["schema.registry.enable"] is True
    assert BrokerConfig.from_props({**cluster, "schema.registry.enable": "false"})["schema.registry.enable"] is False
    with pytest.raises(ConfigError, match="schema.registry.path"):
        BrokerConfig.from_props({"schema.registry.path": "no-slash"})
