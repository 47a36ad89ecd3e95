"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs: every path through them.

Resources: a topic with overrides (sources TOPIC_CONFIG vs DEFAULT_CONFIG, synonyms, documentation),
the broker itself (``"0"``) and the cluster-wide broker default (``""``), another broker id, the
broker's loggers, consumer groups (KIP-848 group configs), client-metrics subscriptions and an
unknown resource type; client-metrics subscriptions through their validation and removal, and
ListConfigResources. Alterations run on their own topics, one per version, and are read back
with DescribeConfigs; broker-level changes are undone at the end of the family.
"""

from __future__ import annotations

import time

from tests.oracle.wire.program import Program, Session
from tests.oracle.wire.setup import create_topics
from tidelog.protocol.messages import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    ListConfigResourcesRequest,
)

DESCRIBE = DescribeConfigsRequest.API_KEY
ALTER = AlterConfigsRequest.API_KEY
INCREMENTAL = IncrementalAlterConfigsRequest.API_KEY
LIST_RESOURCES = ListConfigResourcesRequest.API_KEY

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP, UNKNOWN_TYPE = 2, 4, 8, 16, 32, 99
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OVERRIDES = {"retention.ms": "3600000", "cleanup.policy": "compact", "max.message.bytes": "2000",
             "min.cleanable.dirty.ratio": "0.25"}


def add(program: Program) -> None:
    topics = {"diff-cfg": (1, OVERRIDES)}
    topics |= {f"diff-cfg-alter-v{v}": (1, {}) for v in program.versions(ALTER)}
    topics |= {f"diff-cfg-inc-v{v}": (1, {"cleanup.policy": "delete"}) for v in program.versions(INCREMENTAL)}
    create_topics(program, "configs", topics)
    _describe(program)
    _alter(program)
    _incremental(program)
    _client_metrics(program)


def describe(resource_type: int, name: str, keys: list[str] | None = None, *, synonyms: bool = True,
             documentation: bool = False) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(
        resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=resource_type, resource_name=name, configuration_keys=keys)],
        include_synonyms=synonyms, include_documentation=documentation)


def _describe(program: Program) -> None:
    cases = {
        "topic-all": lambda v: describe(TOPIC, "diff-cfg"),
        "topic-all-no-synonyms": lambda v: describe(TOPIC, "diff-cfg", synonyms=False),
        "topic-all-documentation": lambda v: describe(TOPIC, "diff-cfg", documentation=True),
        "topic-keys": lambda v: describe(TOPIC, "diff-cfg", ["retention.ms", "segment.bytes", "cleanup.policy",
                                                             "min.insync.replicas", "message.timestamp.type"]),
        "topic-unknown-key": lambda v: describe(TOPIC, "diff-cfg", ["no.such.config"]),
        "topic-no-keys": lambda v: describe(TOPIC, "diff-cfg", []),
        "topic-unknown": lambda v: describe(TOPIC, "diff-no-such-topic"),
        "topic-invalid-name": lambda v: describe(TOPIC, "bad topic!"),
        "topic-empty-name": lambda v: describe(TOPIC, ""),
        "internal-topic": lambda v: describe(TOPIC, "__consumer_offsets", ["cleanup.policy", "segment.bytes",
                                                                           "compression.type"]),
        "broker-all": lambda v: describe(BROKER, "0"),
        "broker-keys": lambda v: describe(BROKER, "0", ["log.retention.ms", "log.retention.hours", "num.partitions",
                                                        "message.max.bytes", "log.segment.bytes", "broker.id",
                                                        "log.cleaner.threads", "auto.create.topics.enable"]),
        "broker-unknown-key": lambda v: describe(BROKER, "0", ["no.such.config"]),
        "broker-default": lambda v: describe(BROKER, "", ["log.retention.ms", "num.partitions"]),
        "other-broker": lambda v: describe(BROKER, "1", ["num.partitions"]),
        "broker-not-a-number": lambda v: describe(BROKER, "zero", ["num.partitions"]),
        "broker-logger-root": lambda v: describe(BROKER_LOGGER, "0", ["root"]),
        "broker-logger-other-broker": lambda v: describe(BROKER_LOGGER, "1", ["root"]),
        "group": lambda v: describe(GROUP, "diff-cfg-group"),
        "group-keys": lambda v: describe(GROUP, "diff-cfg-group", ["consumer.session.timeout.ms"]),
        "group-empty-name": lambda v: describe(GROUP, ""),
        "client-metrics": lambda v: describe(CLIENT_METRICS, "diff-metrics"),
        "unknown-resource-type": lambda v: describe(UNKNOWN_TYPE, "x"),
        "topic-and-broker": lambda v: DescribeConfigsRequest(resources=[
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=TOPIC, resource_name="diff-cfg",
                                                           configuration_keys=["retention.ms"]),
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=BROKER, resource_name="0",
                                                           configuration_keys=["num.partitions"])]),
        "same-topic-twice": lambda v: DescribeConfigsRequest(resources=[
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=TOPIC, resource_name="diff-cfg",
                                                           configuration_keys=["retention.ms"])] * 2),
    }
    for case, build in cases.items():
        program.each_version(DESCRIBE, case, build)


def _read_back(program: Program, case: str, resource_type: int, name: str, keys: list[str] | None) -> None:
    version = program.top(DESCRIBE)
    request = describe(resource_type, name, keys)

    def settle(session: Session, interval: float = 0.05, tries: int = 40) -> None:
        # Kafka's broker applies a config change when its controller's record reaches it, a moment
        # after AlterConfigs is answered: read until two answers in a row agree (not behaviour under test).
        last = session.call(request, version)
        for _ in range(tries):
            time.sleep(interval)
            answer = session.call(request, version)
            if answer == last:
                return
            last = answer

    program.action(f"settle-{case}", settle)
    program.request(case, version, request)


def alter(resource_type: int, name: str, configs: dict[str, str | None], validate_only: bool = False,
          pairs: list[tuple[str, str | None]] | None = None) -> AlterConfigsRequest:
    entries = pairs if pairs is not None else list(configs.items())
    return AlterConfigsRequest(validate_only=validate_only, resources=[AlterConfigsRequest.AlterConfigsResource(
        resource_type=resource_type, resource_name=name,
        configs=[AlterConfigsRequest.AlterableConfig(name=k, value=val) for k, val in entries])])


def _alter(program: Program) -> None:
    keys = ["retention.ms", "cleanup.policy", "segment.ms", "max.message.bytes"]
    for v in program.versions(ALTER):
        topic = f"diff-cfg-alter-v{v}"
        steps = {
            "topic-set": alter(TOPIC, topic, {"retention.ms": "7200000", "cleanup.policy": "compact,delete"}),
            "topic-validate-only": alter(TOPIC, topic, {"segment.ms": "100000"}, validate_only=True),
            "topic-replace": alter(TOPIC, topic, {"max.message.bytes": "5000"}),
            "topic-invalid-value": alter(TOPIC, topic, {"retention.ms": "forever"}),
            "topic-out-of-range": alter(TOPIC, topic, {"min.cleanable.dirty.ratio": "1.5"}),
            "topic-unknown-key": alter(TOPIC, topic, {"no.such.config": "1"}),
            "topic-null-value": alter(TOPIC, topic, {"retention.ms": None}),
            "topic-duplicate-key": alter(TOPIC, topic, {}, pairs=[("retention.ms", "1"), ("retention.ms", "2")]),
            "topic-unknown": alter(TOPIC, "diff-no-such-topic", {"retention.ms": "1000"}),
            "topic-invalid-name": alter(TOPIC, "bad topic!", {"retention.ms": "1000"}),
            "topic-nothing": alter(TOPIC, topic, {}),
            "broker-read-only": alter(BROKER, "0", {"log.dirs": "/tmp/elsewhere"}),
            "broker-unknown-key": alter(BROKER, "0", {"no.such.broker.config": "1"}),
            "broker-other-id": alter(BROKER, "1", {"log.retention.ms": "1000"}),
            "broker-invalid-value": alter(BROKER, "0", {"log.retention.ms": "soon"}),
            "broker-logger": alter(BROKER_LOGGER, "0", {"root": "INFO"}),
            "group": alter(GROUP, "diff-cfg-group", {"consumer.session.timeout.ms": "50000"}),
            "unknown-resource-type": alter(UNKNOWN_TYPE, "x", {"a": "b"}),
        }
        for case, request in steps.items():
            program.request(case, v, request)
            if case.startswith("topic-"):
                _read_back(program, f"after-alter-{case}-v{v}", TOPIC, topic, keys)
    top = program.top(ALTER)
    program.request("broker-dynamic", top, alter(BROKER, "0", {"log.cleaner.io.buffer.load.factor": "0.8"}))
    _read_back(program, "after-alter-broker-dynamic", BROKER, "0", ["log.cleaner.io.buffer.load.factor"])
    program.request("broker-default-dynamic", top, alter(BROKER, "", {"log.retention.ms": "86400000"}))
    _read_back(program, "after-alter-broker-default", BROKER, "", ["log.retention.ms"])
    _read_back(program, "after-alter-broker-default-on-0", BROKER, "0", ["log.retention.ms"])
    _read_back(program, "after-alter-broker-default-on-topic", TOPIC, "diff-cfg", ["retention.ms"])
    program.request("broker-default-clear", top, alter(BROKER, "", {}))
    program.request("broker-clear", top, alter(BROKER, "0", {}))
    _read_back(program, "after-alter-broker-clear", BROKER, "0", ["log.retention.ms",
                                                                  "log.cleaner.io.buffer.load.factor"])


def incremental(resource_type: int, name: str, ops: list[tuple[str, int, str | None]],
                validate_only: bool = False) -> IncrementalAlterConfigsRequest:
    return IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
        IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=resource_type, resource_name=name,
            configs=[IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=op, value=val)
                     for k, op, val in ops])])


def _incremental(program: Program) -> None:
    keys = ["retention.ms", "cleanup.policy", "segment.ms", "flush.messages",
            "leader.replication.throttled.replicas"]
    for v in program.versions(INCREMENTAL):
        topic = f"diff-cfg-inc-v{v}"
        steps = {
            "topic-set": [("retention.ms", SET, "7200000")],
            "topic-set-two": [("segment.ms", SET, "100000"), ("flush.messages", SET, "10")],
            "topic-delete": [("retention.ms", DELETE, None)],
            "topic-delete-unset": [("retention.ms", DELETE, None)],
            "topic-delete-unknown-key": [("no.such.config", DELETE, None)],
            "topic-append-list": [("cleanup.policy", APPEND, "compact")],
            "topic-append-present": [("cleanup.policy", APPEND, "compact")],
            "topic-subtract-list": [("cleanup.policy", SUBTRACT, "delete")],
            "topic-subtract-absent": [("cleanup.policy", SUBTRACT, "delete")],
            "topic-subtract-last": [("cleanup.policy", SUBTRACT, "compact")],
            "topic-append-non-list": [("retention.ms", APPEND, "5")],
            "topic-subtract-non-list": [("retention.ms", SUBTRACT, "5")],
            "topic-append-throttled-replicas": [("leader.replication.throttled.replicas", APPEND, "0:0")],
            "topic-invalid-operation": [("retention.ms", 7, "1")],
            "topic-set-null": [("retention.ms", SET, None)],
            "topic-invalid-value": [("retention.ms", SET, "soon")],
            "topic-unknown-key": [("no.such.config", SET, "1")],
            "topic-duplicate-key": [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)],
            "topic-nothing": [],
        }
        for case, ops in steps.items():
            program.request(case, v, incremental(TOPIC, topic, ops))
            _read_back(program, f"after-incremental-{case}-v{v}", TOPIC, topic, keys)
        program.request("topic-validate-only", v, incremental(TOPIC, topic, [("segment.ms", SET, "5000")], True))
        _read_back(program, f"after-incremental-validate-only-v{v}", TOPIC, topic, keys)
        others = {
            "topic-unknown": incremental(TOPIC, "diff-no-such-topic", [("retention.ms", SET, "1")]),
            "topic-invalid-name": incremental(TOPIC, "bad topic!", [("retention.ms", SET, "1")]),
            "broker-read-only": incremental(BROKER, "0", [("log.dirs", SET, "/tmp/x")]),
            "broker-unknown-key": incremental(BROKER, "0", [("no.such.broker.config", SET, "1")]),
            "broker-invalid-value": incremental(BROKER, "0", [("log.retention.ms", SET, "soon")]),
            "broker-append-non-list": incremental(BROKER, "0", [("log.retention.ms", APPEND, "1")]),
            "broker-other-id": incremental(BROKER, "1", [("log.retention.ms", SET, "1000")]),
            "broker-logger": incremental(BROKER_LOGGER, "0", [("root", SET, "INFO")]),
            "broker-logger-unknown-level": incremental(BROKER_LOGGER, "0", [("root", SET, "LOUD")]),
            "group-set": incremental(GROUP, "diff-cfg-group", [("consumer.session.timeout.ms", SET, "50000")]),
            "group-unknown-key": incremental(GROUP, "diff-cfg-group", [("no.such.group.config", SET, "1")]),
            "group-out-of-range": incremental(GROUP, "diff-cfg-group", [("consumer.session.timeout.ms", SET, "1")]),
            "group-empty-name": incremental(GROUP, "", [("consumer.session.timeout.ms", SET, "50000")]),
            "client-metrics": incremental(CLIENT_METRICS, "diff-metrics", [("interval.ms", SET, "10000")]),
            "unknown-resource-type": incremental(UNKNOWN_TYPE, "x", [("a", SET, "b")]),
        }
        for case, request in others.items():
            program.request(case, v, request)
    top = program.top(INCREMENTAL)
    for case, name, ops in (
            ("broker-set", "0", [("log.cleaner.io.buffer.load.factor", SET, "0.7")]),
            ("broker-default-set", "", [("log.retention.ms", SET, "90000000")]),
            ("broker-default-delete", "", [("log.retention.ms", DELETE, None)]),
            ("broker-delete", "0", [("log.cleaner.io.buffer.load.factor", DELETE, None)])):
        program.request(case, top, incremental(BROKER, name, ops))
        _read_back(program, f"after-incremental-{case}", BROKER, name, ["log.retention.ms",
                                                                        "log.cleaner.io.buffer.load.factor"])
    _read_back(program, "after-incremental-group", GROUP, "diff-cfg-group", ["consumer.session.timeout.ms"])


def _client_metrics(program: Program) -> None:
    """Client-metrics subscriptions (KIP-714): validation, incremental changes, removal, and
    ListConfigResources of them (v0) and of the types asked for (v1)."""
    top = program.top(INCREMENTAL)
    name = "diff-metrics-sub"
    steps = {
        "set-all": [("metrics", SET, "org.apache.kafka.producer.,org.apache.kafka.consumer."),
                    ("interval.ms", SET, "30000"), ("match", SET, "client_id=diff-.*,client_software_name=java")],
        "append-metrics": [("metrics", APPEND, "org.apache.kafka.admin.")],
        "subtract-metrics": [("metrics", SUBTRACT, "org.apache.kafka.consumer.")],
        "append-interval": [("interval.ms", APPEND, "1")],
        "interval-too-low": [("interval.ms", SET, "99")],
        "interval-too-high": [("interval.ms", SET, "3600001")],
        "interval-not-a-number": [("interval.ms", SET, "soon")],
        "unknown-key": [("colour", SET, "red")],
        "match-unknown-attribute": [("match", SET, "colour=red")],
        "match-no-equals": [("match", SET, "client_id")],
        "match-bad-regex": [("match", SET, "client_id=(")],
        "delete-match": [("match", DELETE, None)],
    }
    for case, ops in steps.items():
        program.request(f"client-metrics-{case}", top, incremental(CLIENT_METRICS, name, ops))
        _read_back(program, f"after-client-metrics-{case}", CLIENT_METRICS, name, None)
    program.request("client-metrics-empty-name", top, incremental(CLIENT_METRICS, "", [("interval.ms", SET, "1000")]))
    program.request("client-metrics-validate-only", top,
                    incremental(CLIENT_METRICS, "diff-metrics-never", [("interval.ms", SET, "1000")], True))
    program.each_version(DESCRIBE, "client-metrics-empty-name", lambda v: describe(CLIENT_METRICS, ""))
    program.each_version(DESCRIBE, "client-metrics-unknown", lambda v: describe(CLIENT_METRICS, "diff-metrics-none"))
    program.each_version(DESCRIBE, "client-metrics-documentation",
                         lambda v: describe(CLIENT_METRICS, name, documentation=True))
    program.request("client-metrics-legacy", program.top(ALTER),
                    alter(CLIENT_METRICS, "diff-metrics-legacy", {"interval.ms": "45000"}))
    _read_back(program, "after-client-metrics-legacy", CLIENT_METRICS, "diff-metrics-legacy", None)
    for v in program.versions(LIST_RESOURCES):
        program.request("client-metrics", v, ListConfigResourcesRequest(resource_types=[CLIENT_METRICS] if v else []))
    # v0 without types lists the client-metrics resources; v1 without types lists every type, topics too,
    # whose order carries no meaning and is not keyed (a broker id is both a BROKER and a BROKER_LOGGER name)
    program.request("default-types", 0, ListConfigResourcesRequest())
    if 1 in program.versions(LIST_RESOURCES):
        for case, types in {"groups": [GROUP], "brokers": [BROKER], "loggers": [BROKER_LOGGER],
                            "unknown-type": [CLIENT_METRICS, UNKNOWN_TYPE]}.items():
            program.request(case, 1, ListConfigResourcesRequest(resource_types=types))
    for sub in (name, "diff-metrics-legacy", "diff-metrics"):
        program.request(f"client-metrics-remove-{sub}", top, incremental(
            CLIENT_METRICS, sub, [("metrics", DELETE, None), ("interval.ms", DELETE, None), ("match", DELETE, None)]))
    _read_back(program, "after-client-metrics-removed", CLIENT_METRICS, name, None)
    for v in program.versions(LIST_RESOURCES):
        program.request("client-metrics-after-removal", v,
                        ListConfigResourcesRequest(resource_types=[CLIENT_METRICS] if v else []))


__all__ = ["add", "alter", "describe", "incremental"]
