"""The authorization denial matrix, shared by Tidelog's tests (tests/integration/test_acls.py) and the
comparison with Apache Kafka (tests/oracle/test_acl_oracle.py).

Each :class:`Case` is one API on one resource: a request in an exact version, sent by a *caller* (a
principal on a connection: :class:`Caller`), the ACLs that let it through, and how to read the error
code out of the response. :func:`run_case` sends it once without ACLs (the denial) and once after the
grant (through CreateAcls, by an administrator), then removes the grant. Callers are a parameter so
that SASL principals plug in next to ``User:ANONYMOUS``.

The administrator is ``User:ANONYMOUS`` connecting from ANOTHER loopback address (127.0.0.2) that
holds host-limited ALLOW ALL ACLs on every resource type; callers connect from 127.0.0.3. Callers'
grants use host ``*``, so removing them (DeleteAcls with principal and host ``*``) leaves the
administrator's ACLs alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.errors import ErrorCode
from tidelog.protocol.message import Message
from tidelog.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    DescribeTopicPartitionsRequest,
    DescribeTransactionsRequest,
    ElectLeadersRequest,
    EndTxnRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListConfigResourcesRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    ListPartitionReassignmentsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    ProduceRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)
from tidelog.records.builder import build_batch
from tidelog.security.acl import CLUSTER_NAME, AclOperation, AclPermissionType, PatternType, ResourceType
from tidelog.testing.client import WireClient

Op, Res = AclOperation, ResourceType
ADMIN_HOST = "127.0.0.2"
CALLER_HOST = "127.0.0.3"
TOPIC = "acl-topic"
GROUP = "acl-group"
TXN = "acl-txn"
#: What the administrator may do: everything, from ADMIN_HOST only.
ADMIN_ACLS = [(rtype, name) for rtype, name in [(Res.CLUSTER, CLUSTER_NAME), (Res.TOPIC, "*"), (Res.GROUP, "*"),
                                                 (Res.TRANSACTIONAL_ID, "*")]]
AUTH_CODES = {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
              ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}


@dataclass(frozen=True)
class Caller:
    """A principal and how to open a connection as it (a PLAINTEXT connection is User:ANONYMOUS)."""

    principal: str
    connect: Callable[[str], WireClient]

    def __str__(self) -> str:
        return self.principal


ANONYMOUS = Caller("User:ANONYMOUS", lambda bootstrap: WireClient.connect(bootstrap, source_host=CALLER_HOST))


def admin_connect(bootstrap: str) -> WireClient:
    return WireClient.connect(bootstrap, source_host=ADMIN_HOST)


# ------------------------------------------------------------------------------- ACL administration


def create_acls(client: WireClient, acls: list[tuple[ResourceType, str, PatternType, str, str, AclOperation,
                                                        AclPermissionType]]) -> list[int]:
    response = client.request(CreateAclsRequest(creations=[
        CreateAclsRequest.AclCreation(resource_type=int(r), resource_name=n, resource_pattern_type=int(pt),
                                      principal=p, host=h, operation=int(o), permission_type=int(pm))
        for r, n, pt, p, h, o, pm in acls]), 3)
    return [r.error_code for r in response.results]


def grant(client: WireClient, principal: str, grants: list[tuple[ResourceType, str, AclOperation]],
          host: str = "*") -> None:
    codes = create_acls(client, [(r, n, PatternType.LITERAL, principal, host, o, AclPermissionType.ALLOW)
                                 for r, n, o in grants])
    assert codes == [0] * len(grants), codes


def revoke_all(client: WireClient, principal: str, host: str = "*") -> int:
    """Remove every ACL of ``principal`` for ``host``; how many went."""
    response = client.request(DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
        resource_type_filter=int(Res.ANY), resource_name_filter=None, pattern_type_filter=int(PatternType.ANY),
        principal_filter=principal, host_filter=host, operation=int(Op.ANY),
        permission_type=int(AclPermissionType.ANY))]), 3)
    (result,) = response.filter_results
    assert result.error_code == 0, result
    return len(result.matching_acls)


def describe_acls(client: WireClient, principal: str | None = None) -> list[tuple]:
    response = client.request(DescribeAclsRequest(
        resource_type_filter=int(Res.ANY), resource_name_filter=None, pattern_type_filter=int(PatternType.ANY),
        principal_filter=principal, host_filter=None, operation=int(Op.ANY),
        permission_type=int(AclPermissionType.ANY)), 3)
    assert response.error_code == 0, response
    return sorted((ResourceType(r.resource_type).name, r.resource_name, PatternType(r.pattern_type).name, a.principal,
                   a.host, AclOperation(a.operation).name, AclPermissionType(a.permission_type).name)
                  for r in response.resources for a in r.acls)


def admin_acls(principal: str = "User:ANONYMOUS") -> list[tuple]:
    return [(r, n, PatternType.LITERAL, principal, ADMIN_HOST, Op.ALL, AclPermissionType.ALLOW) for r, n in ADMIN_ACLS]


# ------------------------------------------------------------------------------------------ the cases


def _one(seq):
    (item,) = seq
    return item


def _batch() -> bytes:
    return build_batch([(int(time.time() * 1000), b"k", b"v")])


@dataclass(frozen=True)
class Case:
    name: str
    #: the error code refused callers get
    denied: ErrorCode
    #: what lets the caller through
    grants: list[tuple[ResourceType, str, AclOperation]]
    #: the code the caller gets once granted (the API's own answer: success, or an error that is not about access)
    allowed: ErrorCode
    request: Callable[[], Message]
    version: int
    code: Callable[[Message], int]
    #: run by the administrator before each attempt (e.g. re-create what the case deletes)
    setup: Callable[[WireClient], None] | None = None

    def __str__(self) -> str:
        return self.name


def _topic_code(response) -> int:
    return _one(response.topics).error_code


def _create_topic(name: str) -> Callable[[WireClient], None]:
    def create(admin: WireClient) -> None:
        admin.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=1, replication_factor=1)], timeout_ms=10_000), 7)
    return create


def commit_group_offset(group: str) -> Callable[[WireClient], None]:
    def commit(admin: WireClient) -> None:
        response = admin.request(_offset_commit(group), 8)
        assert response.topics[0].partitions[0].error_code == 0, response
    return commit


def _offset_commit(group: str = GROUP) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])])


def _fetch() -> FetchRequest:
    return FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, topics=[
        FetchRequest.FetchTopic(topic=TOPIC, partitions=[
            FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])


def _describe_configs(rtype: int, name: str) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=rtype, resource_name=name, configuration_keys=None)])


def _incremental(rtype: int, name: str, key: str, value: str) -> IncrementalAlterConfigsRequest:
    return IncrementalAlterConfigsRequest(validate_only=True, resources=[
        IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=[
            IncrementalAlterConfigsRequest.AlterableConfig(name=key, config_operation=0, value=value)])])


def _acl_filter_request() -> DescribeAclsRequest:
    return DescribeAclsRequest(resource_type_filter=int(Res.TOPIC), resource_name_filter="nothing-here",
                               pattern_type_filter=int(PatternType.LITERAL), principal_filter=None, host_filter=None,
                               operation=int(Op.ANY), permission_type=int(AclPermissionType.ANY))


E = ErrorCode
CASES: list[Case] = [
    Case("Metadata/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.DESCRIBE)], E.NONE,
         lambda: MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)],
                                 allow_auto_topic_creation=False), 12, _topic_code),
    Case("Metadata/auto-create", E.TOPIC_AUTHORIZATION_FAILED,
         [(Res.TOPIC, "acl-auto-created", Op.DESCRIBE), (Res.TOPIC, "acl-auto-created", Op.CREATE)], E.NONE,
         lambda: MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="acl-auto-created")],
                                 allow_auto_topic_creation=True), 12,
         # Kafka answers LEADER_NOT_AVAILABLE while it creates the topic: counted as success
         lambda r: E.NONE if _one(r.topics).error_code == E.LEADER_NOT_AVAILABLE else _one(r.topics).error_code),
    Case("Produce/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.WRITE)], E.NONE,
         lambda: ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
             name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=_batch())])]), 9,
         lambda r: _one(_one(r.responses).partition_responses).error_code),
    Case("Fetch/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.READ)], E.NONE, _fetch, 12,
         lambda r: _one(_one(r.responses).partitions).error_code),
    Case("ListOffsets/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.DESCRIBE)], E.NONE,
         lambda: ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(name=TOPIC, partitions=[
             ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7,
         lambda r: _one(_one(r.topics).partitions).error_code),
    Case("DeleteRecords/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.DELETE)], E.NONE,
         lambda: DeleteRecordsRequest(timeout_ms=5000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
             name=TOPIC, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=0)])]), 2,
         lambda r: _one(_one(r.topics).partitions).error_code),
    Case("CreateTopics/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, "acl-new-topic", Op.CREATE)], E.NONE,
         lambda: CreateTopicsRequest(validate_only=True, timeout_ms=10_000, topics=[
             CreateTopicsRequest.CreatableTopic(name="acl-new-topic", num_partitions=1, replication_factor=1)]), 7,
         _topic_code),
    Case("CreateTopics/cluster", E.TOPIC_AUTHORIZATION_FAILED, [(Res.CLUSTER, CLUSTER_NAME, Op.CREATE)], E.NONE,
         lambda: CreateTopicsRequest(validate_only=True, timeout_ms=10_000, topics=[
             CreateTopicsRequest.CreatableTopic(name="acl-new-topic-2", num_partitions=1, replication_factor=1)]), 7,
         _topic_code),
    Case("CreatePartitions/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.ALTER)], E.NONE,
         lambda: CreatePartitionsRequest(validate_only=True, timeout_ms=10_000, topics=[
             CreatePartitionsRequest.CreatePartitionsTopic(name=TOPIC, count=2, assignments=None)]), 3,
         lambda r: _one(r.results).error_code),
    Case("DeleteTopics/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, "acl-victim", Op.DELETE)], E.NONE,
         lambda: DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name="acl-victim")],
                                     timeout_ms=10_000), 6,
         lambda r: _one(r.responses).error_code, setup=_create_topic("acl-victim")),
    Case("DescribeConfigs/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.DESCRIBE_CONFIGS)], E.NONE,
         lambda: _describe_configs(2, TOPIC), 4, lambda r: _one(r.results).error_code),
    Case("DescribeConfigs/broker", E.CLUSTER_AUTHORIZATION_FAILED, [(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS)],
         E.NONE, lambda: _describe_configs(4, "0"), 4, lambda r: _one(r.results).error_code),
    Case("DescribeConfigs/client-metrics", E.CLUSTER_AUTHORIZATION_FAILED,
         [(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS)], E.NONE, lambda: _describe_configs(16, "acl-metrics"), 4,
         lambda r: _one(r.results).error_code),
    Case("IncrementalAlterConfigs/client-metrics", E.CLUSTER_AUTHORIZATION_FAILED,
         [(Res.CLUSTER, CLUSTER_NAME, Op.ALTER_CONFIGS)], E.NONE, lambda: _incremental(16, "acl-metrics", "interval.ms",
                                                                                        "60000"), 1,
         lambda r: _one(r.responses).error_code),
    Case("ListConfigResources/cluster", E.CLUSTER_AUTHORIZATION_FAILED,
         [(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS)], E.NONE, lambda: ListConfigResourcesRequest(), 0,
         lambda r: r.error_code),
    Case("IncrementalAlterConfigs/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.ALTER_CONFIGS)],
         E.NONE, lambda: _incremental(2, TOPIC, "retention.ms", "100000"), 1, lambda r: _one(r.responses).error_code),
    Case("AlterConfigs/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.ALTER_CONFIGS)], E.NONE,
         lambda: AlterConfigsRequest(validate_only=True, resources=[AlterConfigsRequest.AlterConfigsResource(
             resource_type=2, resource_name=TOPIC, configs=[
                 AlterConfigsRequest.AlterableConfig(name="retention.ms", value="100000")])]), 2,
         lambda r: _one(r.responses).error_code),
    Case("FindCoordinator/group", E.GROUP_AUTHORIZATION_FAILED, [(Res.GROUP, GROUP, Op.DESCRIBE)], E.NONE,
         lambda: FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), 4,
         lambda r: _one(r.coordinators).error_code),
    Case("FindCoordinator/transactional-id", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
         [(Res.TRANSACTIONAL_ID, TXN, Op.DESCRIBE)], E.NONE,
         lambda: FindCoordinatorRequest(key_type=1, coordinator_keys=[TXN]), 4,
         lambda r: _one(r.coordinators).error_code),
    Case("JoinGroup/group", E.GROUP_AUTHORIZATION_FAILED, [(Res.GROUP, GROUP, Op.READ)], E.MEMBER_ID_REQUIRED,
         lambda: JoinGroupRequest(group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                  member_id="", protocol_type="consumer", protocols=[
                                      JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]), 5,
         lambda r: r.error_code),
    Case("Heartbeat/group", E.GROUP_AUTHORIZATION_FAILED, [(Res.GROUP, GROUP, Op.READ)], E.UNKNOWN_MEMBER_ID,
         lambda: HeartbeatRequest(group_id=GROUP, generation_id=1, member_id="nobody"), 4, lambda r: r.error_code,
         setup=commit_group_offset(GROUP)),
    Case("SyncGroup/group", E.GROUP_AUTHORIZATION_FAILED, [(Res.GROUP, GROUP, Op.READ)], E.UNKNOWN_MEMBER_ID,
         lambda: SyncGroupRequest(group_id=GROUP, generation_id=1, member_id="nobody", protocol_type="consumer",
                                  protocol_name="range", assignments=[]), 5, lambda r: r.error_code,
         setup=commit_group_offset(GROUP)),
    Case("LeaveGroup/group", E.GROUP_AUTHORIZATION_FAILED, [(Res.GROUP, GROUP, Op.READ)], E.UNKNOWN_MEMBER_ID,
         lambda: LeaveGroupRequest(group_id=GROUP, members=[LeaveGroupRequest.MemberIdentity(member_id="nobody")]), 3,
         lambda r: r.error_code or _one(r.members).error_code, setup=commit_group_offset(GROUP)),
    Case("ConsumerGroupHeartbeat/group", E.GROUP_AUTHORIZATION_FAILED, [(Res.GROUP, "acl-cg", Op.READ)],
         E.TOPIC_AUTHORIZATION_FAILED,
         lambda: ConsumerGroupHeartbeatRequest(group_id="acl-cg", member_id="", member_epoch=0,
                                               rebalance_timeout_ms=30_000, subscribed_topic_names=[TOPIC],
                                               topic_partitions=[]), 0, lambda r: r.error_code),
    Case("ConsumerGroupHeartbeat/group+topic", E.GROUP_AUTHORIZATION_FAILED,
         [(Res.GROUP, "acl-cg", Op.READ), (Res.TOPIC, TOPIC, Op.DESCRIBE)], E.NONE,
         lambda: ConsumerGroupHeartbeatRequest(group_id="acl-cg", member_id="", member_epoch=0,
                                               rebalance_timeout_ms=30_000, subscribed_topic_names=[TOPIC],
                                               topic_partitions=[]), 0, lambda r: r.error_code),
    Case("WriteTxnMarkers/cluster", E.CLUSTER_AUTHORIZATION_FAILED, [(Res.CLUSTER, CLUSTER_NAME, Op.CLUSTER_ACTION)],
         E.NONE, lambda: WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.WritableTxnMarker(
             producer_id=999_999, producer_epoch=0, transaction_result=False, coordinator_epoch=0, topics=[
                 WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=TOPIC, partition_indexes=[0])])]), 1,
         lambda r: _one(_one(_one(r.markers).topics).partitions).error_code),
    Case("OffsetCommit/group", E.GROUP_AUTHORIZATION_FAILED, [(Res.GROUP, GROUP, Op.READ)],
         E.TOPIC_AUTHORIZATION_FAILED, _offset_commit, 8, lambda r: _one(_one(r.topics).partitions).error_code),
    Case("OffsetCommit/group+topic", E.GROUP_AUTHORIZATION_FAILED,
         [(Res.GROUP, GROUP, Op.READ), (Res.TOPIC, TOPIC, Op.READ)], E.NONE, _offset_commit, 8,
         lambda r: _one(_one(r.topics).partitions).error_code),
    Case("OffsetFetch/group", E.GROUP_AUTHORIZATION_FAILED, [(Res.GROUP, GROUP, Op.DESCRIBE)],
         E.TOPIC_AUTHORIZATION_FAILED,
         lambda: OffsetFetchRequest(groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=GROUP, topics=[
             OffsetFetchRequest.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])])]), 8,
         lambda r: _one(r.groups).error_code or _one(_one(_one(r.groups).topics).partitions).error_code),
    Case("OffsetFetch/v7", E.GROUP_AUTHORIZATION_FAILED,
         [(Res.GROUP, GROUP, Op.DESCRIBE), (Res.TOPIC, TOPIC, Op.DESCRIBE)], E.NONE,
         lambda: OffsetFetchRequest(group_id=GROUP, topics=[
             OffsetFetchRequest.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])]), 7,
         lambda r: r.error_code or _one(_one(r.topics).partitions).error_code),
    Case("OffsetDelete/group", E.GROUP_AUTHORIZATION_FAILED,
         [(Res.GROUP, GROUP, Op.DELETE), (Res.TOPIC, TOPIC, Op.READ)], E.NONE,
         lambda: OffsetDeleteRequest(group_id=GROUP, topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
             name=TOPIC, partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)])]), 0,
         lambda r: r.error_code or _one(_one(r.topics).partitions).error_code, setup=commit_group_offset(GROUP)),
    Case("DescribeGroups/group", E.GROUP_AUTHORIZATION_FAILED, [(Res.GROUP, GROUP, Op.DESCRIBE)], E.NONE,
         lambda: DescribeGroupsRequest(groups=[GROUP]), 5, lambda r: _one(r.groups).error_code),
    Case("ListGroups/filtered", E.GROUP_ID_NOT_FOUND, [(Res.GROUP, GROUP, Op.DESCRIBE)], E.NONE,
         lambda: ListGroupsRequest(), 4,
         lambda r: E.NONE if any(g.group_id == GROUP for g in r.groups) else E.GROUP_ID_NOT_FOUND,
         setup=commit_group_offset(GROUP)),  # "GROUP_ID_NOT_FOUND" here: the group is left out of the list
    Case("DeleteGroups/group", E.GROUP_AUTHORIZATION_FAILED, [(Res.GROUP, "acl-group-2", Op.DELETE)], E.NONE,
         lambda: DeleteGroupsRequest(groups_names=["acl-group-2"]), 2, lambda r: _one(r.results).error_code,
         setup=commit_group_offset("acl-group-2")),
    Case("ConsumerGroupDescribe/group", E.GROUP_AUTHORIZATION_FAILED, [(Res.GROUP, "acl-group-3", Op.DESCRIBE)],
         E.GROUP_ID_NOT_FOUND, lambda: ConsumerGroupDescribeRequest(group_ids=["acl-group-3"]), 0,
         lambda r: _one(r.groups).error_code),
    Case("InitProducerId/transactional-id", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
         [(Res.TRANSACTIONAL_ID, TXN, Op.WRITE)], E.NONE,
         lambda: InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60_000, producer_id=-1,
                                       producer_epoch=-1), 4, lambda r: r.error_code),
    Case("InitProducerId/idempotent", E.CLUSTER_AUTHORIZATION_FAILED, [(Res.CLUSTER, CLUSTER_NAME,
                                                                        Op.IDEMPOTENT_WRITE)], E.NONE,
         lambda: InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1,
                                       producer_epoch=-1), 4, lambda r: r.error_code),
    Case("InitProducerId/idempotent-by-topic-write", E.CLUSTER_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.WRITE)],
         E.NONE, lambda: InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1,
                                               producer_epoch=-1), 4, lambda r: r.error_code),
    Case("AddPartitionsToTxn/transactional-id", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
         [(Res.TRANSACTIONAL_ID, TXN, Op.WRITE)], E.TOPIC_AUTHORIZATION_FAILED,
         lambda: AddPartitionsToTxnRequest(v3_and_below_transactional_id=TXN, v3_and_below_producer_id=1,
                                           v3_and_below_producer_epoch=0, v3_and_below_topics=[
                                               AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=TOPIC,
                                                                                                 partitions=[0])]), 3,
         lambda r: _one(_one(r.results_by_topic_v3_and_below).results_by_partition).partition_error_code),
    Case("AddOffsetsToTxn/transactional-id", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
         [(Res.TRANSACTIONAL_ID, TXN, Op.WRITE)], E.GROUP_AUTHORIZATION_FAILED,
         lambda: AddOffsetsToTxnRequest(transactional_id=TXN, producer_id=1, producer_epoch=0, group_id=GROUP), 3,
         lambda r: r.error_code),
    Case("EndTxn/transactional-id", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
         [(Res.TRANSACTIONAL_ID, "acl-txn-unknown", Op.WRITE)],
         E.INVALID_PRODUCER_ID_MAPPING,
         lambda: EndTxnRequest(transactional_id="acl-txn-unknown", producer_id=1, producer_epoch=0, committed=True),
         3, lambda r: r.error_code),
    Case("TxnOffsetCommit/transactional-id", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
         [(Res.TRANSACTIONAL_ID, TXN, Op.WRITE)], E.GROUP_AUTHORIZATION_FAILED,
         lambda: TxnOffsetCommitRequest(transactional_id=TXN, group_id=GROUP, producer_id=1, producer_epoch=0,
                                        topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[
                                            TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                                                partition_index=0, committed_offset=0)])]), 3,
         lambda r: _one(_one(r.topics).partitions).error_code),
    Case("DescribeTransactions/transactional-id", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
         [(Res.TRANSACTIONAL_ID, "acl-txn-none", Op.DESCRIBE)], E.TRANSACTIONAL_ID_NOT_FOUND,
         lambda: DescribeTransactionsRequest(transactional_ids=["acl-txn-none"]), 0,
         lambda r: _one(r.transaction_states).error_code),
    Case("DescribeProducers/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.READ)], E.NONE,
         lambda: DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(name=TOPIC,
                                                                                        partition_indexes=[0])]), 0,
         lambda r: _one(_one(r.topics).partitions).error_code),
    Case("DescribeTopicPartitions/topic", E.TOPIC_AUTHORIZATION_FAILED, [(Res.TOPIC, TOPIC, Op.DESCRIBE)], E.NONE,
         lambda: DescribeTopicPartitionsRequest(topics=[DescribeTopicPartitionsRequest.TopicRequest(name=TOPIC)],
                                                response_partition_limit=100), 0, _topic_code),
    Case("AlterPartitionReassignments/cluster", E.CLUSTER_AUTHORIZATION_FAILED, [(Res.CLUSTER, CLUSTER_NAME, Op.ALTER)],
         E.NO_REASSIGNMENT_IN_PROGRESS,
         lambda: AlterPartitionReassignmentsRequest(topics=[AlterPartitionReassignmentsRequest.ReassignableTopic(
             name=TOPIC, partitions=[AlterPartitionReassignmentsRequest.ReassignablePartition(
                 partition_index=0, replicas=None)])]), 0,
         lambda r: r.error_code or _one(_one(r.responses).partitions).error_code),
    Case("ListPartitionReassignments/cluster", E.CLUSTER_AUTHORIZATION_FAILED,
         [(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE)], E.NONE,
         lambda: ListPartitionReassignmentsRequest(topics=None), 0, lambda r: r.error_code),
    Case("DescribeLogDirs/cluster", E.CLUSTER_AUTHORIZATION_FAILED, [(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE)], E.NONE,
         lambda: DescribeLogDirsRequest(topics=None), 4, lambda r: r.error_code),
    Case("DescribeCluster/authorized-operations", E.CLUSTER_AUTHORIZATION_FAILED,
         [(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE)], E.NONE,
         lambda: DescribeClusterRequest(include_cluster_authorized_operations=True), 1,
         lambda r: r.error_code or (E.NONE if r.cluster_authorized_operations else E.CLUSTER_AUTHORIZATION_FAILED)),
    Case("CreateAcls/cluster", E.CLUSTER_AUTHORIZATION_FAILED, [(Res.CLUSTER, CLUSTER_NAME, Op.ALTER)], E.NONE,
         lambda: CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
             resource_type=int(Res.TOPIC), resource_name="acl-by-caller", resource_pattern_type=3,
             principal="User:someone", host="*", operation=int(Op.READ), permission_type=3)]), 3,
         lambda r: _one(r.results).error_code),
    Case("DescribeAcls/cluster", E.CLUSTER_AUTHORIZATION_FAILED, [(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE)], E.NONE,
         _acl_filter_request, 3, lambda r: r.error_code),
    Case("ElectLeaders/cluster", E.CLUSTER_AUTHORIZATION_FAILED, [(Res.CLUSTER, CLUSTER_NAME, Op.ALTER)], E.NONE,
         lambda: ElectLeadersRequest(election_type=0, topic_partitions=[
             ElectLeadersRequest.TopicPartitions(topic=TOPIC, partitions=[0])], timeout_ms=10_000), 2,
         lambda r: r.error_code),
    Case("DeleteAcls/cluster", E.CLUSTER_AUTHORIZATION_FAILED, [(Res.CLUSTER, CLUSTER_NAME, Op.ALTER)], E.NONE,
         lambda: DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(
             resource_type_filter=int(Res.TOPIC), resource_name_filter="acl-by-caller", pattern_type_filter=3,
             principal_filter="User:someone", host_filter=None, operation=int(Op.ANY), permission_type=1)]), 3,
         lambda r: _one(r.filter_results).error_code),
]


#: Answers that only mean "not yet" (a coordinator loading, a topic being created): asked again.
RETRIABLE = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR,
             ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
             ErrorCode.CONCURRENT_TRANSACTIONS}


def attempt(caller: Caller, bootstrap: str, case: Case, tries: int = 40, *, granted: bool = False) -> int:
    """The case's code; "not yet" answers are asked again, and once ``granted`` so are refusals (Kafka's
    brokers apply a new ACL a moment after CreateAcls answers: the controller commits it, then each
    broker's authorizer reads it from the metadata log)."""
    again = RETRIABLE | AUTH_CODES if granted else RETRIABLE
    with caller.connect(bootstrap) as client:
        for _ in range(tries):
            code = case.code(client.request(case.request(), case.version))
            if code not in again or code == case.allowed:
                return code
            time.sleep(0.25)
        return code


def run_case(caller: Caller, bootstrap: str, case: Case, settle_s: float = 0.0) -> tuple[int, int]:
    """(code when refused, code once granted); the grant is removed afterwards, and ``settle_s`` given
    for the removal to reach the broker's authorizer (Kafka applies it asynchronously)."""
    with admin_connect(bootstrap) as admin:
        if case.setup:
            case.setup(admin)
        denied = attempt(caller, bootstrap, case)
        grant(admin, caller.principal, case.grants)
        try:
            if case.setup:
                case.setup(admin)
            allowed = attempt(caller, bootstrap, case, granted=True)
        finally:
            revoke_all(admin, caller.principal)
            time.sleep(settle_s)
    return denied, allowed


def prepare(bootstrap: str) -> None:
    """What every case assumes: the topic exists and has a record."""
    with admin_connect(bootstrap) as admin:
        _create_topic(TOPIC)(admin)
        for _ in range(40):  # Kafka makes the new partition's leader a moment after answering CreateTopics
            response = admin.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
                ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=_batch())])]), 9)
            code = response.responses[0].partition_responses[0].error_code
            if code not in RETRIABLE:
                break
            time.sleep(0.25)
        assert code == 0, response


__all__ = ["ADMIN_HOST", "ANONYMOUS", "CALLER_HOST", "CASES", "Caller", "Case", "admin_acls", "admin_connect",
           "create_acls", "describe_acls", "grant", "prepare", "revoke_all", "run_case"]
