"""The share-group admin requests of ``tidelog share-groups`` (KIP-932), which confluent-kafka's admin API
lacks: ListGroups with the ``share`` type, ShareGroupDescribe, Describe/Alter/DeleteShareGroupOffsets and
DeleteGroups, sent over :class:`~tidelog.cli.broker_connection.BrokerConnection` the way Kafka's Admin
client does (``listGroups``, ``describeShareGroups``, ``listShareGroupOffsets``, ``alterShareGroupOffsets``,
``deleteShareGroupOffsets``, ``deleteShareGroups``).

Where the requests go comes from the cluster's metadata (confluent-kafka): every broker for ListGroups,
the group's coordinator (FindCoordinator, key type GROUP) for the others. A refused request is a
:class:`ShareGroupError` carrying Kafka's error code; other failures are
:class:`~tidelog.cli.client.CliError`. Not thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka.admin import ClusterMetadata

from tidelog.cli.broker_connection import BrokerConnection, wire_error
from tidelog.cli.client import CliError
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AlterShareGroupOffsetsRequest,
    DeleteGroupsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    ShareGroupDescribeRequest,
)

GROUP_KEY_TYPE = 0
#: ListGroups v5 is the first with a type filter (KIP-848); before it a broker cannot list share groups.
LIST_GROUPS_TYPES_VERSION = 5


class ShareGroupError(CliError):
    """The broker refused a request about a group: ``code`` is Kafka's error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    client_id: str
    host: str
    member_epoch: int
    rack_id: str | None
    assignment: list[tuple[str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class ShareGroup:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    coordinator: tuple[int, str, int]  # (node id, host, port)
    members: list[ShareMember] = field(default_factory=list)


class ShareGroupAdmin:
    """``metadata``: the cluster's brokers and topics (confluent-kafka's ``list_topics``)."""

    def __init__(self, metadata: ClusterMetadata, properties: dict | None = None) -> None:
        self.metadata = metadata
        self.properties = dict(properties or {})  # --command-config: TLS and SASL
        self._connections: dict[int, BrokerConnection] = {}
        self._coordinators: dict[str, int] = {}

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    def __enter__(self) -> ShareGroupAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connection(self, broker_id: int) -> BrokerConnection:
        if broker_id not in self._connections:
            broker = self.metadata.brokers.get(broker_id)
            if broker is None:
                raise CliError(f"broker {broker_id} is not in the cluster")
            self._connections[broker_id] = BrokerConnection.open(f"{broker.host}:{broker.port}", self.properties)
        return self._connections[broker_id]

    def coordinator(self, group: str) -> int:
        if group in self._coordinators:
            return self._coordinators[group]
        conn = self.connection(sorted(self.metadata.brokers)[0])
        version = conn.version_for(FindCoordinatorRequest.API_KEY)
        if version >= 4:
            r = conn.request(FindCoordinatorRequest(key_type=GROUP_KEY_TYPE, coordinator_keys=[group]), version)
            (found,) = r.coordinators
            code, message, node = found.error_code, found.error_message, found.node_id
        else:
            r = conn.request(FindCoordinatorRequest(key=group, key_type=GROUP_KEY_TYPE), version)
            code, message, node = r.error_code, r.error_message, r.node_id
        if code:
            raise ShareGroupError(code, f"cannot find the coordinator of group {group!r}: {wire_error(code, message)}")
        self._coordinators[group] = node
        return node

    # ---------------------------------------------------------------------------------- requests

    def list_groups(self, states: list[str] = ()) -> list[tuple[str, str]]:
        """(group id, state) of every share group, from every broker, sorted by id."""
        out = []
        for broker_id in sorted(self.metadata.brokers):
            conn = self.connection(broker_id)
            version = conn.version_for(ListGroupsRequest.API_KEY)
            if version < LIST_GROUPS_TYPES_VERSION:
                raise CliError(f"the broker at {conn.address} cannot list groups by type (ListGroups "
                               f"v{version}); it has no share groups")
            r = conn.request(ListGroupsRequest(states_filter=list(states), types_filter=["share"]), version)
            if r.error_code:
                raise ShareGroupError(r.error_code, f"broker {broker_id} could not list its groups: "
                                      f"{wire_error(r.error_code, None)}")
            out += [(g.group_id, g.group_state) for g in r.groups if g.group_type == "share"]
        return sorted(set(out))

    def describe(self, group: str) -> ShareGroup:
        """The group; ShareGroupError GROUP_ID_NOT_FOUND when there is no share group of that id."""
        node = self.coordinator(group)
        r = self.connection(node).request(ShareGroupDescribeRequest(group_ids=[group]))
        (d,) = r.groups
        if d.error_code:
            raise ShareGroupError(d.error_code, wire_error(d.error_code, d.error_message))
        broker = self.metadata.brokers.get(node)
        members = [ShareMember(m.member_id, m.client_id, m.client_host, m.member_epoch, m.rack_id,
                               sorted((t.topic_name, p) for t in m.assignment.topic_partitions for p in t.partitions))
                   for m in d.members]
        return ShareGroup(d.group_id, d.group_state, d.group_epoch, d.assignment_epoch, d.assignor_name,
                          (node, broker.host if broker else "?", broker.port if broker else -1),
                          sorted(members, key=lambda m: m.member_id))

    def start_offsets(self, group: str) -> dict[tuple[str, int], tuple[int, int, int]]:
        """(start offset, leader epoch, lag) of each share partition of the group with state. The lag is
        DescribeShareGroupOffsets v1's (KIP-1226); -1 where it is not known (a v0 broker, a partition not
        yet fetched from)."""
        request = DescribeShareGroupOffsetsRequest(groups=[
            DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)])
        r = self.connection(self.coordinator(group)).request(request)
        (g,) = r.groups
        if g.error_code:
            raise ShareGroupError(g.error_code, wire_error(g.error_code, g.error_message))
        out = {}
        for t in g.topics:
            for p in t.partitions:
                if p.error_code:
                    raise ShareGroupError(p.error_code, f"{t.topic_name}-{p.partition_index}: "
                                          f"{wire_error(p.error_code, p.error_message)}")
                out[(t.topic_name, p.partition_index)] = (p.start_offset, p.leader_epoch, p.lag)
        return out

    def alter_start_offsets(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        by_topic: dict[str, list] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestPartition(
                    partition_index=partition, start_offset=offset))
        request = AlterShareGroupOffsetsRequest(group_id=group, topics=[
            AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
            for t, ps in by_topic.items()])
        r = self.connection(self.coordinator(group)).request(request)
        if r.error_code:
            raise ShareGroupError(r.error_code, wire_error(r.error_code, r.error_message))
        for t in r.responses:
            for p in t.partitions:
                if p.error_code:
                    raise ShareGroupError(p.error_code, f"{t.topic_name}-{p.partition_index}: "
                                          f"{wire_error(p.error_code, p.error_message)}")

    def delete_start_offsets(self, group: str, topics: list[str]) -> dict[str, tuple[int, str | None]]:
        """Each topic's (error code, message) (0: deleted)."""
        request = DeleteShareGroupOffsetsRequest(group_id=group, topics=[
            DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics])
        r = self.connection(self.coordinator(group)).request(request)
        if r.error_code:
            raise ShareGroupError(r.error_code, wire_error(r.error_code, r.error_message))
        return {t.topic_name: (t.error_code, t.error_message) for t in r.responses}

    def delete_group(self, group: str) -> int:
        """DeleteGroups for one group: its error code (0: deleted)."""
        r = self.connection(self.coordinator(group)).request(DeleteGroupsRequest(groups_names=[group]))
        (result,) = r.results
        return result.error_code


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


__all__ = ["ShareGroup", "ShareGroupAdmin", "ShareGroupError", "ShareMember", "error_name"]
