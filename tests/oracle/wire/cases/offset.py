"""OffsetCommit, OffsetFetch and OffsetDelete: simple commits (no member), commits by members of a
classic group, their error paths, and reading offsets back at every version.

The KIP-848 side of offsets (commits fenced by member epochs) is in :mod:`.consumer_group`.
"""

from __future__ import annotations

from tests.oracle.wire.cases.group import join_and_sync, leave
from tests.oracle.wire.program import Program
from tidelog.protocol.messages import OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest

COMMIT = OffsetCommitRequest.API_KEY
FETCH = OffsetFetchRequest.API_KEY
DELETE = OffsetDeleteRequest.API_KEY
TOPIC = "diff-meta-a"  # 3 partitions

CTopic = OffsetCommitRequest.OffsetCommitRequestTopic
CPartition = OffsetCommitRequest.OffsetCommitRequestPartition


def commit(group: str, partitions: dict[int, int], *, topic: str = TOPIC, generation: int = -1, member: str = "",
           metadata: str | None = "m", epoch: int = -1, retention_ms: int = -1) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member, retention_time_ms=retention_ms,
        topics=[CTopic(name=topic, partitions=[
            CPartition(partition_index=p, committed_offset=o, committed_leader_epoch=epoch, committed_metadata=metadata)
            for p, o in partitions.items()])])


def fetch(group: str, topics: dict[str, list[int]] | None, *, version: int, require_stable: bool = False,
          member_id: str | None = None, member_epoch: int = -1) -> OffsetFetchRequest:
    """One group's OffsetFetch in the layout of ``version`` (the group list from v8)."""
    if version >= 8:
        return OffsetFetchRequest(require_stable=require_stable, groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id=group, member_id=member_id, member_epoch=member_epoch,
            topics=None if topics is None else [OffsetFetchRequest.OffsetFetchRequestTopics(name=t, partition_indexes=p)
                                                for t, p in topics.items()])])
    return OffsetFetchRequest(group_id=group, require_stable=require_stable, topics=None if topics is None else [
        OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in topics.items()])


def add(program: Program) -> None:
    _offset_commit(program)
    _offset_fetch(program)
    _offset_delete(program)


def _offset_commit(program: Program) -> None:
    join_and_sync(program, "diff-oc-member", "ocm")
    for v in program.versions(COMMIT):
        group = f"diff-oc-v{v}"
        cases = {
            "simple": commit(group, {0: 5, 1: 7}),
            "no-metadata": commit(group, {2: 1}, metadata=None),
            "leader-epoch": commit(group, {0: 6}, epoch=0),
            "retention-time": commit(group, {0: 6}, retention_ms=3_600_000),
            "negative-offset": commit(group, {1: -3}),
            "metadata-too-large": commit(group, {0: 9}, metadata="x" * 5000),
            "unknown-topic": commit(group, {0: 1}, topic="diff-no-such-topic"),
            "unknown-partition": commit(group, {97: 1}),
            "invalid-topic-name": commit(group, {0: 1}, topic="bad topic!"),
            "empty-group-id": commit("", {0: 1}),
            "generation-without-member": commit(f"diff-oc-gen-v{v}", {0: 1}, generation=3),
            "member-of-unknown-group": commit(f"diff-oc-new-v{v}", {0: 1}, generation=1, member="diff-somebody"),
            "nothing": OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[]),
        }
        for case, request in cases.items():
            program.request(case, v, request)

        def member_commit(generation_delta: int = 0, member: str | None = None, partitions=None):
            return lambda s: commit("diff-oc-member", partitions or {0: 11}, generation=(
                s.vars["ocm-generation"] + generation_delta), member=s.vars["ocm-member"] if member is None else member)

        program.request("member", v, member_commit(), api=COMMIT)
        program.request("member-wrong-generation", v, member_commit(1), api=COMMIT)
        program.request("member-unknown", v, member_commit(member="diff-unknown-member"), api=COMMIT)
        program.request("member-simple-commit-to-active-group", v, commit("diff-oc-member", {1: 2}))
        program.request(f"read-back-v{v}", program.top(FETCH), fetch(group, None, version=program.top(FETCH)))
    program.request("read-back-member-group", program.top(FETCH), fetch("diff-oc-member", None,
                                                                         version=program.top(FETCH)))
    leave(program, "diff-oc-member", "ocm")


def _offset_fetch(program: Program) -> None:
    group = "diff-of"
    program.request("setup-offsets", program.top(COMMIT), commit(group, {0: 3, 2: 8}), compare=False)
    program.request("setup-offsets-other-topic", program.top(COMMIT), commit(group, {0: 1}, topic="diff-meta-c"),
                    compare=False)
    for v in program.versions(FETCH):
        cases = {
            "partitions": fetch(group, {TOPIC: [0, 1, 2]}, version=v),
            "two-topics": fetch(group, {TOPIC: [2], "diff-meta-c": [0, 1]}, version=v),
            "unknown-partition": fetch(group, {TOPIC: [97]}, version=v),
            "unknown-topic": fetch(group, {"diff-no-such-topic": [0]}, version=v),
            "unknown-group": fetch("diff-no-such-group", {TOPIC: [0]}, version=v),
            "empty-group-id": fetch("", {TOPIC: [0]}, version=v),
            "no-topics": fetch(group, {}, version=v),
        }
        if v >= 2:
            cases |= {"all-topics": fetch(group, None, version=v),
                      "all-topics-unknown-group": fetch("diff-no-such-group", None, version=v),
                      "all-topics-empty-group-id": fetch("", None, version=v)}
        if v >= 7:
            cases["require-stable"] = fetch(group, {TOPIC: [0]}, version=v, require_stable=True)
        if v >= 8:
            cases["several-groups"] = OffsetFetchRequest(groups=[
                OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=t) for g, t in (
                    (group, [OffsetFetchRequest.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])]),
                    ("diff-no-such-group", None), ("", None))])
            cases["no-groups"] = OffsetFetchRequest(groups=[])
            cases["same-group-twice"] = OffsetFetchRequest(groups=[
                OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)] * 2)
        if v >= 9:
            cases["member-of-classic-group"] = fetch(group, {TOPIC: [0]}, version=v, member_id="diff-somebody",
                                                     member_epoch=3)
        for case, request in cases.items():
            program.request(case, v, request)


def _offset_delete(program: Program) -> None:
    Topic = OffsetDeleteRequest.OffsetDeleteRequestTopic
    Partition = OffsetDeleteRequest.OffsetDeleteRequestPartition

    def delete(group: str, topic: str = TOPIC, partitions: tuple[int, ...] = (0,)) -> OffsetDeleteRequest:
        return OffsetDeleteRequest(group_id=group, topics=[Topic(name=topic, partitions=[
            Partition(partition_index=p) for p in partitions])])

    program.request("setup-od", program.top(COMMIT), commit("diff-od", {0: 4, 1: 5, 2: 6}), compare=False)
    join_and_sync(program, "diff-od-active", "oda")
    program.request("setup-od-active", program.top(COMMIT), lambda s: commit(
        "diff-od-active", {0: 1}, generation=s.vars["oda-generation"], member=s.vars["oda-member"]),
        api=COMMIT, compare=False)
    for v in program.versions(DELETE):
        cases = {
            "empty-group": delete("diff-od", partitions=(0, 1)),
            "already-deleted": delete("diff-od", partitions=(0,)),
            "unknown-partition": delete("diff-od", partitions=(97,)),
            "unknown-topic": delete("diff-od", topic="diff-no-such-topic"),
            "subscribed-topic": delete("diff-od-active"),
            "unsubscribed-topic": delete("diff-od-active", topic="diff-meta-c"),
            "unknown-group": delete("diff-no-such-group"),
            "empty-group-id": delete(""),
            "nothing": OffsetDeleteRequest(group_id="diff-od", topics=[]),
        }
        for case, request in cases.items():
            program.request(case, v, request)
        program.request("read-back", program.top(FETCH), fetch("diff-od", None, version=program.top(FETCH)))
    leave(program, "diff-od-active", "oda")


__all__ = ["add", "commit", "fetch"]
