"""franz-go's admin client (github.com/twmb/franz-go/pkg/kadm): topics, configs, partitions,
offsets, record deletion and groups, each checked against the records and error codes Kafka gives."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.go.driver import GO_BROKER_OVERRIDES, Admin, GoClients, wait_for
from tests.go.sample import BASE_TIMESTAMP_MS, sample_records

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("go")]

BROKER_OVERRIDES = GO_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)


@pytest.fixture
def admin(go: GoClients) -> Iterator[Admin]:
    with go.admin() as a:
        yield a


def test_topic_lifecycle(admin: Admin) -> None:
    created = admin.call("create_topics", topics=["adm-a", "adm-b"], partitions=3,
                         configs={"retention.ms": "3600000", "cleanup.policy": "compact"})["topics"]
    assert {t: (c["error"], c["partitions"], c["replication_factor"]) for t, c in created.items()} == {
        "adm-a": ("", 3, 1), "adm-b": ("", 3, 1)}
    assert created["adm-a"]["topic_id"] != created["adm-b"]["topic_id"]

    again = admin.call("create_topics", topics=["adm-a"], partitions=3)["topics"]["adm-a"]
    assert again["error"] == "TOPIC_ALREADY_EXISTS"
    for bad, error in [({"partitions": 0}, "INVALID_PARTITIONS"),
                       ({"partitions": 1, "replication_factor": 3}, "INVALID_REPLICATION_FACTOR"),
                       ({"partitions": 1, "configs": {"no.such.config": "1"}}, "INVALID_CONFIG"),
                       ({"partitions": 1, "configs": {"retention.ms": "soon"}}, "INVALID_CONFIG")]:
        answer = admin.call("create_topics", topics=["adm-bad"], **bad)["topics"]["adm-bad"]
        assert answer["error"] == error, bad
    bad_name = admin.call("create_topics", topics=["bad/name"], partitions=1)["topics"]["bad/name"]
    assert bad_name["error"] == "INVALID_TOPIC_EXCEPTION"

    listed = admin.call("list_topics")["topics"]
    assert {"adm-a", "adm-b"} <= set(listed)
    assert "adm-bad" not in listed
    a = listed["adm-a"]
    assert (a["error"], a["internal"], a["topic_id"]) == ("", False, created["adm-a"]["topic_id"])
    assert [(p["partition"], p["leader"], p["replicas"], p["isr"], p["error"]) for p in a["partitions"]] == [
        (p, 0, [0], [0], "") for p in range(3)]

    configs = admin.call("describe_configs", topics=["adm-a"])["topics"]["adm-a"]
    assert configs["error"] == ""
    assert configs["configs"]["retention.ms"] == {"value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG",
                                                  "sensitive": False}
    assert configs["configs"]["cleanup.policy"]["value"] == "compact"
    assert configs["configs"]["segment.bytes"]["source"] == "DEFAULT_CONFIG"

    deleted = admin.call("delete_topics", topics=["adm-a", "adm-b", "adm-missing"])["topics"]
    assert {t: d["error"] for t, d in deleted.items()} == {
        "adm-a": "", "adm-b": "", "adm-missing": "UNKNOWN_TOPIC_OR_PARTITION"}
    wait_for(lambda: not {"adm-a", "adm-b"} & set(admin.call("list_topics")["topics"]), 10, "deletion")
    missing = admin.call("describe_configs", topics=["adm-a"])["topics"]["adm-a"]
    assert missing["error"] == "UNKNOWN_TOPIC_OR_PARTITION"


def test_alter_configs(admin: Admin) -> None:
    topic = "adm-configs"
    admin.call("create_topics", topics=[topic], partitions=1, configs={"retention.ms": "100000"})

    def dynamic() -> dict[str, str]:
        configs = admin.call("describe_configs", topics=[topic])["topics"][topic]["configs"]
        return {k: c["value"] for k, c in configs.items() if c["source"] == "DYNAMIC_TOPIC_CONFIG"}

    # IncrementalAlterConfigs: set one key and revert another, the rest stays.
    answer = admin.call("alter_configs", topics=[topic], set={"max.message.bytes": "65536",
                                                              "cleanup.policy": "compact"})
    assert answer["topics"][topic]["error"] == ""
    assert dynamic() == {"retention.ms": "100000", "max.message.bytes": "65536", "cleanup.policy": "compact"}
    answer = admin.call("alter_configs", topics=[topic], delete=["retention.ms"])
    assert answer["topics"][topic]["error"] == ""
    assert dynamic() == {"max.message.bytes": "65536", "cleanup.policy": "compact"}

    for bad in [{"set": {"no.such.config": "1"}}, {"set": {"max.message.bytes": "big"}}]:
        answer = admin.call("alter_configs", topics=[topic], **bad)["topics"][topic]
        assert answer["error"] == "INVALID_CONFIG", bad
    assert dynamic() == {"max.message.bytes": "65536", "cleanup.policy": "compact"}  # nothing half-applied
    missing = admin.call("alter_configs", topics=["adm-no-such-topic"], set={"retention.ms": "1"})
    assert missing["topics"]["adm-no-such-topic"]["error"] == "UNKNOWN_TOPIC_OR_PARTITION"

    # APPEND and SUBTRACT edit list configs (cleanup.policy) and refuse the others.
    assert admin.call("alter_configs", topics=[topic], append={"cleanup.policy": "delete"})["topics"][topic][
        "error"] == ""
    assert dynamic()["cleanup.policy"] == "compact,delete"
    assert admin.call("alter_configs", topics=[topic], subtract={"cleanup.policy": "compact"})["topics"][topic][
        "error"] == ""
    assert dynamic()["cleanup.policy"] == "delete"
    answer = admin.call("alter_configs", topics=[topic], append={"max.message.bytes": "1"})["topics"][topic]
    assert answer["error"] == "INVALID_CONFIG"

    # The legacy AlterConfigs replaces the whole set of dynamic configs.
    answer = admin.call("alter_configs_state", topics=[topic], set={"segment.ms": "600000"})
    assert answer["topics"][topic]["error"] == ""
    assert dynamic() == {"segment.ms": "600000"}


def test_create_partitions(go: GoClients, admin: Admin) -> None:
    topic = "adm-partitions"
    admin.call("create_topics", topics=[topic], partitions=2)
    assert admin.call("create_partitions", topics=[topic], count=2)["topics"][topic]["error"] == ""
    listed = admin.call("list_topics", topics=[topic])["topics"][topic]
    assert [p["partition"] for p in listed["partitions"]] == [0, 1, 2, 3]
    assert admin.call("create_partitions", topics=[topic], count=6, to="set")["topics"][topic]["error"] == ""
    assert len(admin.call("list_topics", topics=[topic])["topics"][topic]["partitions"]) == 6
    for count in (6, 3):  # the same count, or fewer
        answer = admin.call("create_partitions", topics=[topic], count=count, to="set")["topics"][topic]
        assert answer["error"] == "INVALID_PARTITIONS", count
    missing = admin.call("create_partitions", topics=["adm-nope"], count=1)["topics"]["adm-nope"]
    assert missing["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    # The new partitions take records.
    records = [{"partition": 5, "key": "k", "value": "in the new partition", "headers": []}]
    assert go.produce("franz", topic, records) == [{"partition": 5, "offset": 0}]


def offsets(admin: Admin, topic: str, kind: str, **args: object) -> list[tuple[int, int, int, str]]:
    answer = admin.call("list_offsets", topics=[topic], kind=kind, **args)
    return [(o["partition"], o["offset"], o["timestamp"], o["error"]) for o in answer["offsets"]]


def test_list_offsets_and_delete_records(go: GoClients, admin: Admin) -> None:
    topic = "adm-offsets"
    admin.call("create_topics", topics=[topic], partitions=2)
    records = sample_records(40, 2)  # partition i % 2, timestamps BASE + i s
    go.produce("franz", topic, records)
    assert offsets(admin, topic, "start") == [(0, 0, -1, ""), (1, 0, -1, "")]
    assert offsets(admin, topic, "end") == [(0, 20, -1, ""), (1, 20, -1, "")]
    # The first record at or after a timestamp: record 11 (partition 1, offset 5) and record 12
    # (partition 0, offset 6) for BASE + 10.5 s.
    at = BASE_TIMESTAMP_MS + 10_500
    assert offsets(admin, topic, "after_milli", milli=at) == [
        (0, 6, BASE_TIMESTAMP_MS + 12_000, ""), (1, 5, BASE_TIMESTAMP_MS + 11_000, "")]
    # After every record: kadm turns Kafka's -1 into the end offset.
    assert [o[:2] for o in offsets(admin, topic, "after_milli", milli=BASE_TIMESTAMP_MS + 10**7)] == [(0, 20), (1, 20)]
    # KIP-734: the offset of the record with the largest timestamp.
    assert offsets(admin, topic, "max_timestamp") == [
        (0, 19, BASE_TIMESTAMP_MS + 38_000, ""), (1, 19, BASE_TIMESTAMP_MS + 39_000, "")]

    deleted = admin.call("delete_records", offsets=[{"topic": topic, "partition": 0, "offset": 7}])
    assert deleted["partitions"] == [{"topic": topic, "partition": 0, "low_watermark": 7, "error": ""}]
    assert offsets(admin, topic, "start") == [(0, 7, -1, ""), (1, 0, -1, "")]
    consumed, _ = go.run("franz-consume", topic=topic, partitions="0", offset="start", count=13)
    assert [r["offset"] for r in consumed] == list(range(7, 20))
    assert consumed[0]["value"] == records[14]["value"]
    beyond = admin.call("delete_records", offsets=[{"topic": topic, "partition": 1, "offset": 21}])
    assert beyond["partitions"][0]["error"] == "OFFSET_OUT_OF_RANGE"
    # Offset -1 means "up to the high watermark".
    everything = admin.call("delete_records", offsets=[{"topic": topic, "partition": 1, "offset": -1}])
    assert everything["partitions"] == [{"topic": topic, "partition": 1, "low_watermark": 20, "error": ""}]
    assert offsets(admin, topic, "start") == [(0, 7, -1, ""), (1, 20, -1, "")]


def committed(admin: Admin, group: str) -> list[tuple[str, int, int, str, str]]:
    return [(o["topic"], o["partition"], o["offset"], o["metadata"], o["error"])
            for o in admin.call("fetch_offsets", group=group)["offsets"]]


def test_groups_and_committed_offsets(go: GoClients, admin: Admin) -> None:
    topic, group = "adm-groups", "adm-group"
    admin.call("create_topics", topics=[topic], partitions=2)
    go.produce("franz", topic, sample_records(30, 2))
    member = go.member("franz", group, [topic], "solo", balancer="range")
    try:
        wait_for(lambda: len(member.records) == 30, 30, "the member to read everything")
        listed = admin.call("list_groups")["groups"]
        assert listed[group] == {"protocol_type": "consumer", "state": "Stable"}
        assert admin.call("list_groups", states=["Empty"])["groups"].get(group) is None
        described = admin.call("describe_groups", groups=[group])["groups"][group]
        assert (described["state"], described["protocol_type"], described["protocol"]) == ("Stable", "consumer",
                                                                                         "range")
        assert [sorted(map(tuple, m["assigned"])) for m in described["members"]] == [[(topic, 0), (topic, 1)]]
        wait_for(lambda: [c[2] for c in committed(admin, group)] == [15, 15], 10, "the member's commits")
        member_metadata = committed(admin, group)[1][3]  # franz-go puts its member id there
        # An admin commit (no member id, generation -1) into a group with members is refused.
        busy = admin.call("commit_offsets", group=group, offsets=[{"topic": topic, "partition": 0, "offset": 1}])
        assert busy["offsets"][0]["error"] == "UNKNOWN_MEMBER_ID"
        # OffsetDelete refuses the offsets of a topic the group's members are subscribed to.
        subscribed = admin.call("delete_offsets", group=group, offsets=[{"topic": topic, "partition": 1}])
        assert subscribed["partitions"] == [{"topic": topic, "partition": 1, "error": "GROUP_SUBSCRIBED_TO_TOPIC"}]
    finally:
        member.close()
    assert admin.call("describe_groups", groups=[group])["groups"][group]["state"] == "Empty"
    assert [(t, p, o, e) for (t, p, o, _, e) in committed(admin, group)] == [(topic, 0, 15, ""), (topic, 1, 15, "")]

    answer = admin.call("commit_offsets", group=group, offsets=[
        {"topic": topic, "partition": 0, "offset": 4, "metadata": "rewind"}])
    assert [(o["partition"], o["error"]) for o in answer["offsets"]] == [(0, "")]
    assert [c[1:4] for c in committed(admin, group)] == [(0, 4, "rewind"), (1, 15, member_metadata)]
    # Once the group is empty OffsetDelete removes them.
    deleted = admin.call("delete_offsets", group=group, offsets=[{"topic": topic, "partition": 1}])
    assert deleted["partitions"] == [{"topic": topic, "partition": 1, "error": ""}]
    assert [c[1:3] for c in committed(admin, group)] == [(0, 4)]
    assert admin.call("delete_offsets", group="adm-never", offsets=[{"topic": topic, "partition": 0}]) == {
        "request_error": "GROUP_ID_NOT_FOUND"}
    reset = admin.call("reset_offsets", group=group, topics=[topic], to="start")
    assert [(o["partition"], o["offset"], o["error"]) for o in reset["offsets"]] == [(0, 0, ""), (1, 0, "")]
    assert committed(admin, group) == [(topic, 0, 0, "", ""), (topic, 1, 0, "", "")]

    # A new member starts from the reset offsets and reads everything again.
    again = go.member("franz", group, [topic], "again")
    try:
        wait_for(lambda: len(again.records) == 30, 30, "everything again after the reset")
    finally:
        again.close()
    assert sorted((p, o) for (_, p, o, _) in again.records) == [(p, o) for p in range(2) for o in range(15)]

    unknown = admin.call("describe_groups", groups=["adm-never"])["groups"]["adm-never"]
    assert (unknown["error"], unknown["state"]) == ("GROUP_ID_NOT_FOUND", "Dead")  # DescribeGroups v6
    assert admin.call("delete_groups", groups=[group, "adm-never"])["groups"] == {
        group: {"error": ""}, "adm-never": {"error": "GROUP_ID_NOT_FOUND"}}
    assert group not in admin.call("list_groups")["groups"]
    assert committed(admin, group) == []
