"""Admin operations (ListGroups, DescribeGroups, DeleteGroups) and the hooks other group types use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tidelog.coordinator.group import GroupCoordinator
from tidelog.coordinator.group.group import Group, RequestInfo
from tidelog.coordinator.group.group_type import GroupContext
from tidelog.coordinator.group.offsets import PartitionCommit
from tidelog.coordinator.group.records import CoordinatorRecord, RecordType
from tidelog.coordinator.runtime import Result
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.primitives import INT16, read_string, write_string

from .conftest import Harness

INFO = RequestInfo("c", "/h", 9)


def test_list_groups_with_state_and_type_filters(harness: Harness) -> None:
    harness.stable_group("stable")
    harness.coordinator.commit_offsets(INFO, "simple", "", None, -1, [PartitionCommit("t", 0, 1)])
    listed = {g.group_id: (g.group_state, g.protocol_type, g.group_type) for g in harness.coordinator.list_groups()}
    assert listed == {"stable": ("Stable", "consumer", "classic"), "simple": ("Empty", "", "classic")}
    assert [g.group_id for g in harness.coordinator.list_groups(["STABLE "])] == ["stable"]
    assert [g.group_id for g in harness.coordinator.list_groups(["empty"], ["Classic"])] == ["simple"]
    assert harness.coordinator.list_groups(types_filter=["consumer"]) == []
    assert harness.coordinator.list_groups(types_filter=["bogus"]) == []


def test_describe_groups(harness: Harness) -> None:
    leader, follower = harness.stable_group("g")
    described, unknown = harness.coordinator.describe_groups(["g", "nope"], 5)
    assert (described.group_state, described.protocol_type, described.protocol_data) == ("Stable", "consumer", "range")
    members = {m.member_id: m for m in described.members}
    assert set(members) == {leader, follower}
    assert members[leader].client_id == "c0" and members[leader].client_host == "/127.0.0.1"
    assert members[follower].member_assignment == follower.encode() and members[follower].member_metadata
    assert (unknown.group_state, unknown.error_code) == ("Dead", 0)
    (v6,) = harness.coordinator.describe_groups(["nope"], 6)
    assert (v6.error_code, v6.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")
    harness.join("g", leader)
    (rebalancing,) = harness.coordinator.describe_groups(["g"], 5)
    assert rebalancing.group_state == "PreparingRebalance" and rebalancing.protocol_data == ""
    assert all(m.member_metadata == b"" for m in rebalancing.members)


def test_delete_groups(harness: Harness) -> None:
    harness.stable_group("busy")
    harness.coordinator.commit_offsets(INFO, "idle", "", None, -1, [PartitionCommit("t", 0, 1)])
    results = {r.group_id: r.error_code for r in harness.coordinator.delete_groups(["busy", "idle", "nope", "idle"])}
    assert results == {"busy": ErrorCode.NON_EMPTY_GROUP, "idle": 0, "nope": ErrorCode.GROUP_ID_NOT_FOUND}
    assert "idle" not in harness.coordinator.groups and not harness.coordinator.offsets.has_offsets("idle")
    fresh = harness.fresh()
    assert set(fresh.groups) == {"busy"} and not fresh.offsets.has_offsets("idle")


# ------------------------------------------------------------------------ another group type


@dataclass(frozen=True)
class ToyKey:
    group: str


def _read_key(buf, pos, version):
    group, pos = read_string(buf, pos)
    return ToyKey(group), pos


def _write_key(key: ToyKey) -> bytes:
    b = bytearray(INT16.pack(1000))
    write_string(b, key.group)
    return bytes(b)


def _read_value(buf, pos, version):
    members, pos = read_string(buf, pos)
    return members, pos


def _write_value(value: str) -> bytes:
    b = bytearray(INT16.pack(0))
    write_string(b, value)
    return bytes(b)


TOY_RECORD = RecordType(1000, ToyKey, _read_key, _write_key, _read_value, _write_value)


class ToyGroup(Group):
    group_type = "consumer"

    def __init__(self, group_id: str, members: str) -> None:
        self.group_id = group_id
        self.members = members

    def state_name(self) -> str:
        return "Stable" if self.members else "Empty"

    def is_empty(self) -> bool:
        return not self.members

    def validate_offset_commit(self, member_id, group_instance_id, generation_or_epoch, api_version) -> None:
        if api_version < 9:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "v9 or above")
        if member_id not in self.members.split(","):
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, "who")

    def tombstones(self) -> list[CoordinatorRecord]:
        return [*super().tombstones(), CoordinatorRecord(ToyKey(self.group_id))]


class ToyManager:
    group_type = "consumer"
    record_types = (TOY_RECORD,)
    classic_protocol = None

    def __init__(self, context: GroupContext) -> None:
        self.context = context
        self.loaded = False
        self.replayers = {ToyKey: self.replay}

    def replay(self, partition: int, offset: int, record: CoordinatorRecord) -> None:
        if record.value is None:
            self.context.groups.pop(record.key.group, None)
        else:
            self.context.groups[record.key.group] = ToyGroup(record.key.group, record.value)

    def create(self, group_id: str, members: str) -> None:
        self.context.runtime.apply(self.context.partition_for(group_id),
                                   lambda: Result([CoordinatorRecord(ToyKey(group_id), members)]))

    def on_loaded(self, group_ids=None) -> None:
        self.loaded = True

    def on_unloaded(self) -> None:
        pass


@pytest.fixture
def toy(tmp_path: Path):
    h = Harness(tmp_path)
    h.coordinator = GroupCoordinator(h.config, h.clock, h.writer, num_partitions=4, group_types=[ToyManager])
    h.coordinator.load(range(4))
    return h, h.coordinator.types["consumer"]


def test_another_group_type_plugs_in(toy) -> None:
    h, manager = toy
    assert manager.loaded
    manager.create("kip848", "m1,m2")
    c = h.coordinator
    assert [(g.group_id, g.group_type, g.group_state) for g in c.list_groups(types_filter=["consumer"])] == \
        [("kip848", "consumer", "Stable")]
    (described,) = c.describe_groups(["kip848"], 6)
    assert (described.error_code, described.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                              "Group kip848 is not a classic group.")
    assert c.commit_offsets(INFO, "kip848", "m1", None, 5, [PartitionCommit("t", 0, 9)]) == {("t", 0): 0}
    with pytest.raises(KafkaError) as e:
        c.commit_offsets(RequestInfo("c", "/h", 8), "kip848", "m1", None, 5, [PartitionCommit("t", 0, 9)])
    assert e.value.code == ErrorCode.UNSUPPORTED_VERSION
    assert h.join("kip848").value.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.heartbeat("kip848", "m1", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert {r.group_id: r.error_code for r in c.delete_groups(["kip848"])} == {"kip848": 0}  # contract default
    assert "kip848" not in c.groups


def test_an_empty_group_of_another_type_becomes_classic_on_join(toy) -> None:
    h, manager = toy
    manager.create("old", "")
    box = h.join("old", version=3)
    h.settle()
    assert box.value.error_code == 0 and h.coordinator.groups["old"].group_type == "classic"
    fresh = GroupCoordinator(h.config, h.clock, h.writer, num_partitions=4, group_types=[ToyManager])
    fresh.load(range(4))
    assert "old" not in fresh.groups  # the toy group's tombstones were written; the classic one has no record yet
