"""StreamsGroupDescribe of a streams group (Kafka's StreamsGroup.asDescribedGroup). Pure."""

from __future__ import annotations

from typing import Any

from tidelog.cluster.metadata import MetadataImage
from tidelog.coordinator.group.modern.streams.assignor import STICKY_ASSIGNOR_NAME
from tidelog.coordinator.group.modern.streams.group import StreamsGroup, StreamsGroupMember
from tidelog.coordinator.group.modern.streams.tasks import EMPTY_TASKS, TasksTuple, task_ids
from tidelog.coordinator.group.modern.streams.topology import configure
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import StreamsGroupDescribeResponse

D = StreamsGroupDescribeResponse

#: TopologyDescriptionStatus (v1): as Kafka 4.4 without a topology description plugin (none stored).
NOT_REQUESTED, NOT_STORED = 0, 1


def _assignment(tasks: TasksTuple) -> Any:
    return D.Assignment(active_tasks=task_ids(D.TaskIds, tasks.active), standby_tasks=task_ids(D.TaskIds, tasks.standby),
                        warmup_tasks=task_ids(D.TaskIds, tasks.warmup))


def _member(group: StreamsGroup, m: StreamsGroupMember) -> Any:
    return D.Member(
        member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id, rack_id=m.rack_id,
        client_id=m.client_id, client_host=m.client_host, topology_epoch=m.topology_epoch, process_id=m.process_id,
        user_endpoint=D.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1]) if m.user_endpoint else None,
        client_tags=[D.KeyValue(key=k, value=v) for k, v in m.client_tags],
        task_offsets=[D.TaskOffset(subtopology_id=s, partition=p, offset=o) for s, p, o in m.task_offsets],
        task_end_offsets=[D.TaskOffset(subtopology_id=s, partition=p, offset=o) for s, p, o in m.task_end_offsets],
        assignment=_assignment(m.assigned),
        target_assignment=_assignment(group.target_assignment.get(m.member_id, EMPTY_TASKS)), is_classic=False)


def _topology(group: StreamsGroup, image: MetadataImage) -> Any:
    topology = group.topology
    if topology is None:
        return None
    configured = configure(topology, image)
    group.configured = configured
    if not configured.ready:
        return D.Topology(epoch=topology.epoch, subtopologies=None)
    subs = []
    for s in topology.subtopologies:
        def infos(items: Any) -> list:
            return [D.TopicInfo(name=t.name, partitions=configured.internal_partitions.get(t.name, t.partitions),
                                replication_factor=t.replication_factor,
                                topic_configs=[D.KeyValue(key=c.key, value=c.value) for c in t.topic_configs])
                    for t in items]

        repartition = {t.name for t in s.repartition_source_topics}
        subs.append(D.Subtopology(
            subtopology_id=s.subtopology_id,
            source_topics=[n for n in configured.topics_of(s.subtopology_id) if n not in repartition],
            repartition_sink_topics=list(s.repartition_sink_topics),
            state_changelog_topics=infos(s.state_changelog_topics),
            repartition_source_topics=infos(s.repartition_source_topics)))
    return D.Topology(epoch=topology.epoch, subtopologies=subs)


def describe_group(group: StreamsGroup, image: MetadataImage, include_description: bool = False) -> Any:
    out = D.DescribedGroup(group_id=group.group_id, group_state="",
                           group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                           topology=_topology(group, image),
                           members=[_member(group, m) for _, m in sorted(group.members.items())],
                           assignor_name=STICKY_ASSIGNOR_NAME)
    out.group_state = group.state_name()  # after _topology: the state reads the configured topology
    if include_description:
        out.topology_description_status = NOT_STORED
    return out


def not_found(group_id: str, other_type: bool) -> Any:
    message = f"Group {group_id} is not a streams group." if other_type else f"Group {group_id} not found."
    return D.DescribedGroup(group_id=group_id, error_code=int(ErrorCode.GROUP_ID_NOT_FOUND), error_message=message)


__all__ = ["describe_group", "not_found"]
