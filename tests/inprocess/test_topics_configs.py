"""CreateTopics, DeleteTopics, DescribeConfigs, AlterConfigs and IncrementalAlterConfigs through the
broker's request dispatcher, in process: what a topic is created with, what is refused with which of
Kafka's error codes, and how a config change shows in DescribeConfigs and in the data path."""

from __future__ import annotations

from pathlib import Path

from tests.inprocess.harness import InProcessBroker, batch, run
from tests.inprocess.wire import fetch, fetched, produce, produced
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AlterConfigsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
)

TOPIC, BROKER = 2, 4  # resource types
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5  # config sources
SET, DELETE = 0, 1  # IncrementalAlterConfigs operations


def creatable(name: str, partitions: int = 1, replication_factor: int = 1, **configs: str):
    return CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication_factor,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k.replace("_", "."), value=v)
                 for k, v in configs.items()])


async def create(b: InProcessBroker, *topics, validate_only: bool = False) -> dict[str, tuple[int, int]]:
    """{name: (error_code, num_partitions)} of a CreateTopics v7 answer."""
    r = await b.request(CreateTopicsRequest(topics=list(topics), timeout_ms=10_000, validate_only=validate_only), 7)
    return {t.name: (t.error_code, t.num_partitions) for t in r.topics}


async def metadata_partitions(b: InProcessBroker, name: str) -> tuple[int, int]:
    """(error_code, partition count) of ``name`` in a Metadata answer (no auto-creation)."""
    r = await b.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                                        allow_auto_topic_creation=False), 12)
    (t,) = r.topics
    return t.error_code, len(t.partitions)


async def describe(b: InProcessBroker, rtype: int, name: str, *keys: str) -> tuple[int, dict[str, tuple]]:
    """(error_code, {name: (value, config_source)}) of a DescribeConfigs v4 answer."""
    resource = DescribeConfigsRequest.DescribeConfigsResource(resource_type=rtype, resource_name=name,
                                                              configuration_keys=list(keys) or None)
    (result,) = (await b.request(DescribeConfigsRequest(resources=[resource]), 4)).results
    return result.error_code, {c.name: (c.value, c.config_source) for c in result.configs}


async def alter(b: InProcessBroker, name: str, configs: dict[str, str], validate_only: bool = False) -> int:
    resource = AlterConfigsRequest.AlterConfigsResource(resource_type=TOPIC, resource_name=name, configs=[
        AlterConfigsRequest.AlterableConfig(name=k, value=v) for k, v in configs.items()])
    (r,) = (await b.request(AlterConfigsRequest(resources=[resource], validate_only=validate_only), 2)).responses
    return r.error_code


async def incremental(b: InProcessBroker, name: str, *ops: tuple[str, int, str | None]) -> int:
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=TOPIC, resource_name=name, configs=[
        IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])
    (r,) = (await b.request(IncrementalAlterConfigsRequest(resources=[resource]), 1)).responses
    return r.error_code


def test_create_topics_creates_and_refuses_as_kafka_does(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        assert await create(b, creatable("a", 3), creatable("b", 1, retention_ms="60000")) == {"a": (0, 3), "b": (0, 1)}
        assert await metadata_partitions(b, "a") == (0, 3)
        assert await create(b, creatable("a", 3)) == {"a": (ErrorCode.TOPIC_ALREADY_EXISTS, -1)}
        assert (await create(b, creatable("zero", 0)))["zero"][0] == ErrorCode.INVALID_PARTITIONS
        assert (await create(b, creatable("rf", 1, 3)))["rf"][0] == ErrorCode.INVALID_REPLICATION_FACTOR
        assert (await create(b, creatable("bad name!")))["bad name!"][0] == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert (await create(b, creatable("cfg", 1, retention_ms="soon")))["cfg"][0] == ErrorCode.INVALID_CONFIG
        assert (await create(b, creatable("cfg", 1, no_such_config="1")))["cfg"][0] == ErrorCode.INVALID_CONFIG
        # validate_only: answered as if created, nothing is created
        assert await create(b, creatable("dry", 2), validate_only=True) == {"dry": (0, 2)}
        assert (await metadata_partitions(b, "dry"))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    run(tmp_path, scenario)


def test_delete_topics_deletes_and_refuses_unknown_topics(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("gone", 2)
        assert produced(await b.request(produce("gone", batch(b"a")), 9)) == (0, 0)
        r = await b.request(DeleteTopicsRequest(topic_names=["gone", "never"], timeout_ms=10_000), 4)
        assert {t.name: t.error_code for t in r.responses} == {"gone": 0, "never": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert (await metadata_partitions(b, "gone"))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert fetched(await b.request(fetch("gone", 0), 12)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        await b.create_topic("gone", 1)  # the name is free again, and the new topic is empty
        assert produced(await b.request(produce("gone", batch(b"b")), 9)) == (0, 0)

    run(tmp_path, scenario)


def test_describe_configs_tells_defaults_from_topic_settings(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1, {"retention.ms": "60000"})
        code, configs = await describe(b, TOPIC, "t")
        assert code == 0
        assert configs["retention.ms"] == ("60000", DYNAMIC_TOPIC_CONFIG)
        assert configs["cleanup.policy"] == ("delete", DEFAULT_CONFIG)
        code, only = await describe(b, TOPIC, "t", "retention.ms")
        assert (code, list(only)) == (0, ["retention.ms"])
        assert (await describe(b, TOPIC, "nowhere"))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        code, broker = await describe(b, BROKER, "0", "num.partitions")
        assert (code, broker["num.partitions"][0]) == (0, "1")

    run(tmp_path, scenario)


def test_alter_configs_replaces_and_incremental_alter_configs_edits(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1, {"retention.ms": "60000"})
        assert await alter(b, "t", {"max.message.bytes": "2000"}, validate_only=True) == 0
        assert (await describe(b, TOPIC, "t", "max.message.bytes"))[1]["max.message.bytes"][1] == DEFAULT_CONFIG  # not applied
        # AlterConfigs replaces the whole set: retention.ms goes back to its default
        assert await alter(b, "t", {"max.message.bytes": "2000"}) == 0
        configs = (await describe(b, TOPIC, "t"))[1]
        assert configs["max.message.bytes"] == ("2000", DYNAMIC_TOPIC_CONFIG)
        assert configs["retention.ms"] == ("604800000", DEFAULT_CONFIG)
        # ... and the data path follows it at once
        too_big = produced(await b.request(produce("t", batch(b"x" * 3000)), 9))
        assert too_big[0] == ErrorCode.MESSAGE_TOO_LARGE
        assert await alter(b, "t", {"retention.ms": "never"}) == ErrorCode.INVALID_CONFIG
        assert await alter(b, "nowhere", {"retention.ms": "1"}) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

        assert await incremental(b, "t", ("retention.ms", SET, "120000")) == 0
        configs = (await describe(b, TOPIC, "t"))[1]
        assert configs["retention.ms"] == ("120000", DYNAMIC_TOPIC_CONFIG)
        assert configs["max.message.bytes"][0] == "2000"  # kept: an incremental change touches what it names
        assert await incremental(b, "t", ("max.message.bytes", DELETE, None)) == 0
        assert (await describe(b, TOPIC, "t"))[1]["max.message.bytes"][1] == DEFAULT_CONFIG
        assert produced(await b.request(produce("t", batch(b"x" * 3000)), 9)) == (0, 0)

    run(tmp_path, scenario)
