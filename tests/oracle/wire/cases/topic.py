"""Metadata, CreateTopics, DeleteTopics, CreatePartitions and DescribeTopicPartitions.

Topic names carry the case and the version (``diff-ct-ok-v5``) wherever a step creates or deletes
one, so each step starts from the same state on both brokers. ``__consumer_offsets`` is only ever
changed in validate-only requests: deleting it or adding partitions to it would move every group's
coordinator for the rest of the program.
"""

from __future__ import annotations

import time

from tests.oracle.wire.program import Program, Session
from tests.oracle.wire.setup import create_topics, wait_ready
from tests.oracle.wire.variation import UNKNOWN_TOPIC_ID
from tidelog.protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeTopicPartitionsRequest,
    MetadataRequest,
)

METADATA = MetadataRequest.API_KEY
CREATE = CreateTopicsRequest.API_KEY
DELETE = DeleteTopicsRequest.API_KEY
PARTITIONS = CreatePartitionsRequest.API_KEY
DESCRIBE = DescribeTopicPartitionsRequest.API_KEY

#: Topics the family reads: name -> (partitions, configs).
TOPICS = {"diff-meta-a": (3, {}), "diff-meta-b": (1, {"cleanup.policy": "compact"}), "diff-meta-c": (2, {})}

MTopic = MetadataRequest.MetadataRequestTopic
CTopic = CreateTopicsRequest.CreatableTopic
CConfig = CreateTopicsRequest.CreatableTopicConfig
CAssignment = CreateTopicsRequest.CreatableReplicaAssignment
PTopic = CreatePartitionsRequest.CreatePartitionsTopic
PAssignment = CreatePartitionsRequest.CreatePartitionsAssignment
State = DeleteTopicsRequest.DeleteTopicState


def add(program: Program) -> None:
    create_topics(program, "topics", TOPICS)
    _metadata(program)
    _create_topics(program)
    _delete_topics(program)
    _create_partitions(program)
    _describe_topic_partitions(program)


# ------------------------------------------------------------------------------------ Metadata


def _metadata(program: Program) -> None:
    def named(*names: str, auto: bool = False):
        return lambda v: MetadataRequest(topics=[MTopic(name=n) for n in names], allow_auto_topic_creation=auto)

    program.each_version(METADATA, "all-topics", lambda v: MetadataRequest(topics=[] if v == 0 else None))
    program.each_version(METADATA, "two-topics", named("diff-meta-a", "diff-meta-b"))
    for v in program.versions(METADATA):
        if v >= 1:
            program.request("no-topics", v, MetadataRequest(topics=[]))
        program.request("duplicate-topic", v, named("diff-meta-c", "diff-meta-c")(v))
        program.request("internal-topic", v, named("__consumer_offsets")(v))
        if v >= 4:
            program.request("unknown-topic-no-auto-create", v, named("diff-no-such-topic")(v))
        if v >= 8:
            program.request("authorized-operations", v, MetadataRequest(
                topics=[MTopic(name="diff-meta-a")], include_topic_authorized_operations=True,
                include_cluster_authorized_operations=v <= 10))
        if v >= 10:
            program.request("by-topic-id", v, lambda s: MetadataRequest(
                topics=[MTopic(name=None, topic_id=s.topic_id("diff-meta-a"))]), api=METADATA)
            program.request("by-unknown-topic-id", v, MetadataRequest(
                topics=[MTopic(name=None, topic_id=UNKNOWN_TOPIC_ID)]))
            program.request("name-and-id", v, lambda s: MetadataRequest(
                topics=[MTopic(name="diff-meta-b", topic_id=s.topic_id("diff-meta-b"))]), api=METADATA)
    program.vary(METADATA, "topic", named("diff-meta-a"), only=(
        "invalid-topic-name", "empty-topic-name", "dot-topic-name", "long-topic-name"))
    # Auto-creation: a new topic per version (the answer to the creating request, then the topic).
    for v in program.versions(METADATA):
        name = f"diff-auto-v{v}"
        program.request("auto-create", v, MetadataRequest(topics=[MTopic(name=name)], allow_auto_topic_creation=True))
        wait_ready(program, f"auto-v{v}", [name])
        program.request("auto-created", v, MetadataRequest(topics=[MTopic(name=name)],
                                                           allow_auto_topic_creation=False))
        program.request("auto-create-invalid-name", v, MetadataRequest(topics=[MTopic(name="bad topic!")],
                                                                       allow_auto_topic_creation=True))


# -------------------------------------------------------------------------------- CreateTopics


def _create(name: str, partitions: int = 2, replication: int = 1, configs: dict[str, str | None] | None = None,
            assignments: list[list[int]] | None = None) -> CTopic:
    return CTopic(name=name, num_partitions=partitions, replication_factor=replication,
                  configs=[CConfig(name=k, value=val) for k, val in (configs or {}).items()],
                  assignments=[CAssignment(partition_index=i, broker_ids=b) for i, b in enumerate(assignments or [])])


def _create_topics(program: Program) -> None:
    cases: dict[str, object] = {
        "ok": lambda v: [_create(f"diff-ct-ok-v{v}")],
        "with-configs": lambda v: [_create(f"diff-ct-conf-v{v}", configs={
            "retention.ms": "3600000", "cleanup.policy": "compact,delete", "max.message.bytes": "2000"})],
        "default-partitions-and-replicas": lambda v: [_create(f"diff-ct-def-v{v}", -1, -1)],
        "zero-partitions": lambda v: [_create(f"diff-ct-zero-v{v}", 0)],
        "negative-partitions": lambda v: [_create(f"diff-ct-neg-v{v}", -2)],
        "replication-3": lambda v: [_create(f"diff-ct-rf3-v{v}", 1, 3)],
        "replication-0": lambda v: [_create(f"diff-ct-rf0-v{v}", 1, 0)],
        "assignment": lambda v: [_create(f"diff-ct-asg-v{v}", -1, -1, assignments=[[0], [0]])],
        "assignment-unknown-broker": lambda v: [_create(f"diff-ct-asgx-v{v}", -1, -1, assignments=[[0], [7]])],
        "assignment-and-count": lambda v: [_create(f"diff-ct-asgc-v{v}", 2, 1, assignments=[[0], [0]])],
        "assignment-gap": lambda v: [CTopic(name=f"diff-ct-asgg-v{v}", num_partitions=-1, replication_factor=-1,
                                            assignments=[CAssignment(partition_index=1, broker_ids=[0])])],
        "assignment-duplicate-broker": lambda v: [_create(f"diff-ct-asgd-v{v}", -1, -1, assignments=[[0, 0]])],
        "invalid-config-value": lambda v: [_create(f"diff-ct-badval-v{v}", configs={"retention.ms": "soon"})],
        "unknown-config": lambda v: [_create(f"diff-ct-unk-v{v}", configs={"no.such.config": "1"})],
        "null-config-value": lambda v: [_create(f"diff-ct-null-v{v}", configs={"retention.ms": None})],
        "duplicate-config": lambda v: [CTopic(name=f"diff-ct-dupc-v{v}", num_partitions=1, replication_factor=1,
                                              configs=[CConfig(name="retention.ms", value="1000"),
                                                       CConfig(name="retention.ms", value="2000")])],
        "invalid-cleanup-policy": lambda v: [_create(f"diff-ct-pol-v{v}", configs={"cleanup.policy": "shred"})],
        "min-insync-above-replicas": lambda v: [_create(f"diff-ct-isr-v{v}", configs={"min.insync.replicas": "2"})],
        "existing": lambda v: [_create("diff-meta-a")],
        "internal-existing": lambda v: [_create("__consumer_offsets")],
        "duplicate-in-request": lambda v: [_create(f"diff-ct-dup-v{v}"), _create(f"diff-ct-dup-v{v}")],
        "two-topics-one-bad": lambda v: [_create(f"diff-ct-two-v{v}"), _create(f"diff-ct-two-bad-v{v}", 0)],
        "collides-with-existing": lambda v: [_create("diff_meta.a")],
        "too-many-partitions": lambda v: [_create(f"diff-ct-many-v{v}", 10_001)],
        "too-many-partitions-in-request": lambda v: [_create(f"diff-ct-many-a-v{v}", 6_000),
                                                     _create(f"diff-ct-many-b-v{v}", 5_000)],
        "too-many-records-in-request": lambda v: [_create(f"diff-ct-rec-a-v{v}", 5_000),
                                                  _create(f"diff-ct-rec-b-v{v}", 5_000)],
        "max-length-name": lambda v: [_create(f"diff-ct-{v}-" + "x" * (249 - len(f'diff-ct-{v}-')))],
    }
    for case, topics in cases.items():
        for v in program.versions(CREATE):
            program.request(case, v, CreateTopicsRequest(topics=topics(v), timeout_ms=30000))
    for v in program.versions(CREATE):
        if v >= 1:
            program.request("validate-only", v, CreateTopicsRequest(
                topics=[_create(f"diff-ct-val-v{v}")], validate_only=True, timeout_ms=30000))
            program.request("validate-only-bad", v, CreateTopicsRequest(
                topics=[_create(f"diff-ct-valbad-v{v}", configs={"retention.ms": "x"})], validate_only=True))
        # The validated topic must not exist afterwards.
        program.request(f"after-validate-only-v{v}", program.top(METADATA), MetadataRequest(
            topics=[MTopic(name=f"diff-ct-val-v{v}")], allow_auto_topic_creation=False))
    program.vary(CREATE, "create", lambda v: CreateTopicsRequest(topics=[_create("diff-ct-x")], timeout_ms=30000),
                 only=("invalid-topic-name", "empty-topic-name", "dot-topic-name", "long-topic-name"))
    ok = [f"diff-ct-ok-v{v}" for v in program.versions(CREATE)]
    wait_ready(program, "created", ok)
    program.request("created-topics", program.top(METADATA), MetadataRequest(
        topics=[MTopic(name=n) for n in ok], allow_auto_topic_creation=False))


# -------------------------------------------------------------------------------- DeleteTopics


def _delete_topics(program: Program) -> None:
    versions = program.versions(DELETE)
    victims = {}
    for v in versions:
        victims[f"diff-dt-name-v{v}"] = (1, {})
        victims[f"diff-dt-id-v{v}"] = (1, {})
    create_topics(program, "delete", victims)

    def by_names(*names: str):
        def build(v: int) -> DeleteTopicsRequest:
            if v >= 6:
                return DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in names],
                                           timeout_ms=30000)
            return DeleteTopicsRequest(topic_names=list(names), timeout_ms=30000)
        return build

    for v in versions:
        program.request("existing", v, by_names(f"diff-dt-name-v{v}")(v))
        program.request("just-deleted", v, by_names(f"diff-dt-name-v{v}")(v))
        program.request("unknown", v, by_names("diff-no-such-topic")(v))
        program.request("duplicate-in-request", v, by_names("diff-meta-c", "diff-meta-c")(v))
        program.request("none", v, by_names()(v))
        if v >= 6:
            program.request("by-id", v, lambda s, v=v: DeleteTopicsRequest(
                topics=[State(name=None, topic_id=s.topic_id(f"diff-dt-id-v{v}"))], timeout_ms=30000), api=DELETE)
            program.request("by-unknown-id", v, DeleteTopicsRequest(
                topics=[State(name=None, topic_id=UNKNOWN_TOPIC_ID)], timeout_ms=30000))
            program.request("name-and-id", v, lambda s: DeleteTopicsRequest(
                topics=[State(name="diff-meta-a", topic_id=s.topic_id("diff-meta-a"))], timeout_ms=30000),
                api=DELETE)
            program.request("neither-name-nor-id", v, DeleteTopicsRequest(topics=[State(name=None)]))
    program.vary(DELETE, "delete", by_names("diff-no-such-topic"), only=(
        "invalid-topic-name", "empty-topic-name", "long-topic-name"))
    program.action("wait-deletes", _wait_gone(program, [f"diff-dt-name-v{v}" for v in versions]
                                                   + [f"diff-dt-id-v{v}" for v in versions if v >= 6]))
    program.request("after-deletes", program.top(METADATA), MetadataRequest(
        topics=[MTopic(name=n) for n in victims], allow_auto_topic_creation=False))


def _wait_gone(program: Program, names: list[str], timeout: float = 30.0):
    """Until Metadata no longer lists ``names``: Kafka's broker learns a deletion from its controller a
    moment after DeleteTopics is answered (not behaviour under test; Tidelog's is visible at once)."""
    version = program.top(METADATA)

    def run(session: Session) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            answer = session.call(MetadataRequest(topics=[MTopic(name=n) for n in names],
                                                  allow_auto_topic_creation=False), version)
            if all(t.error_code for t in answer.topics):
                return
            time.sleep(0.05)
        raise AssertionError(f"{names} still listed on {session.bootstrap} after {timeout} s")

    return run


# ---------------------------------------------------------------------------- CreatePartitions


def _create_partitions(program: Program) -> None:
    versions = program.versions(PARTITIONS)
    create_topics(program, "partitions", {f"diff-cp-v{v}": (1, {}) for v in versions})

    def request(name: str, count: int, assignments: list[list[int]] | None = None, validate_only: bool = False):
        return CreatePartitionsRequest(timeout_ms=30000, validate_only=validate_only, topics=[PTopic(
            name=name, count=count,
            assignments=None if assignments is None else [PAssignment(broker_ids=b) for b in assignments])])

    for v in versions:
        name = f"diff-cp-v{v}"
        program.request("validate-only", v, request(name, 3, validate_only=True))
        program.request("increase", v, request(name, 3))
        program.request("same-count", v, request(name, 3))
        program.request("decrease", v, request(name, 2))
        program.request("with-assignment", v, request(name, 5, [[0], [0]]))
        program.request("assignment-count-mismatch", v, request(name, 8, [[0]]))
        program.request("assignment-unknown-broker", v, request(name, 6, [[4]]))
        program.request("assignment-replication-mismatch", v, request(name, 6, [[0, 0]]))
        program.request("too-many", v, request(name, 10_010))
        program.request("internal-validate-only", v, request("__consumer_offsets", 60, validate_only=True))
        program.request("duplicate-in-request", v, CreatePartitionsRequest(timeout_ms=30000, topics=[
            PTopic(name=name, count=9, assignments=None), PTopic(name=name, count=10, assignments=None)]))
        program.request("unknown", v, request("diff-no-such-topic", 3))
    program.vary(PARTITIONS, "increase", lambda v: request("diff-no-such-topic", 3), only=(
        "invalid-topic-name", "empty-topic-name"))
    names = [f"diff-cp-v{v}" for v in versions]
    wait_ready(program, "partitions-grown", names)
    program.request("after-create-partitions", program.top(METADATA), MetadataRequest(
        topics=[MTopic(name=n) for n in names], allow_auto_topic_creation=False))


# --------------------------------------------------------------------- DescribeTopicPartitions


def _describe_topic_partitions(program: Program) -> None:
    if not program.versions(DESCRIBE):
        return
    create_topics(program, "paging", {"diff-page-a": (3, {}), "diff-page-b": (2, {}), "diff-page-c": (4, {})})
    DTopic = DescribeTopicPartitionsRequest.TopicRequest
    Cursor = DescribeTopicPartitionsRequest.Cursor
    paged = [DTopic(name=n) for n in ("diff-page-c", "diff-page-a", "diff-page-b")]
    v = 0
    cases = {
        "three-topics": DescribeTopicPartitionsRequest(topics=paged),
        "limit-4": DescribeTopicPartitionsRequest(topics=paged, response_partition_limit=4),
        "cursor-mid-topic": DescribeTopicPartitionsRequest(topics=paged, response_partition_limit=4,
                                                           cursor=Cursor(topic_name="diff-page-a", partition_index=3)),
        "cursor-second-topic": DescribeTopicPartitionsRequest(
            topics=paged, response_partition_limit=2, cursor=Cursor(topic_name="diff-page-b", partition_index=1)),
        "cursor-past-last-partition": DescribeTopicPartitionsRequest(
            topics=paged, cursor=Cursor(topic_name="diff-page-a", partition_index=5)),
        "cursor-unknown-topic": DescribeTopicPartitionsRequest(
            topics=paged, cursor=Cursor(topic_name="diff-page-bb", partition_index=0)),
        "cursor-not-requested": DescribeTopicPartitionsRequest(
            topics=[DTopic(name="diff-page-a")], cursor=Cursor(topic_name="diff-page-c", partition_index=0)),
        "cursor-negative-partition": DescribeTopicPartitionsRequest(
            topics=paged, cursor=Cursor(topic_name="diff-page-a", partition_index=-1)),
        "limit-exactly-one-topic": DescribeTopicPartitionsRequest(topics=paged, response_partition_limit=3),
        "limit-1": DescribeTopicPartitionsRequest(topics=paged, response_partition_limit=1),
        "limit-0": DescribeTopicPartitionsRequest(topics=paged, response_partition_limit=0),
        "limit-negative": DescribeTopicPartitionsRequest(topics=paged, response_partition_limit=-5),
        "limit-above-max": DescribeTopicPartitionsRequest(topics=paged, response_partition_limit=100_000),
        "unknown-topic": DescribeTopicPartitionsRequest(topics=[DTopic(name="diff-no-such-topic"), *paged]),
        "invalid-name": DescribeTopicPartitionsRequest(topics=[DTopic(name="bad topic!")]),
        "duplicate-topic": DescribeTopicPartitionsRequest(topics=[DTopic(name="diff-page-b"),
                                                                  DTopic(name="diff-page-b")]),
        "internal-topic": DescribeTopicPartitionsRequest(topics=[DTopic(name="__consumer_offsets")],
                                                         response_partition_limit=3),
    }
    for case, request in cases.items():
        program.request(case, v, request)
    # Every topic (an empty list), paged two partitions at a time from the first page to the last.
    program.request("all-topics-first-page", v, DescribeTopicPartitionsRequest(
        topics=[], response_partition_limit=2, cursor=Cursor(topic_name="diff-page-", partition_index=0)))
    page = {"cursor": Cursor(topic_name="diff-page-a", partition_index=0)}

    def follow(session: Session, response) -> None:
        session.vars["page"] = response.next_cursor

    for i in range(6):
        program.request(f"page-{i}", v, lambda s, i=i: DescribeTopicPartitionsRequest(
            topics=paged, response_partition_limit=2,
            cursor=page["cursor"] if i == 0 else _copy_cursor(s.vars.get("page"))), api=DESCRIBE, after=follow)


def _copy_cursor(cursor):
    if cursor is None:
        return None
    return DescribeTopicPartitionsRequest.Cursor(topic_name=cursor.topic_name, partition_index=cursor.partition_index)


__all__ = ["TOPICS", "add"]
