"""TxnOffsetCommit: a consumer group's offsets committed inside a producer's transaction.

As Kafka's KafkaApis and group coordinator service: partitions that do not exist get
UNKNOWN_TOPIC_OR_PARTITION; then the group's ``__consumer_offsets`` partition is checked against the
transaction (KIP-890: verified for v0-v4, added to the transaction for v5+,
:mod:`tidelog.server.txn_verification`) unless the producer already has a transaction open there.
The check goes to the transactional id's coordinator wherever it is: in a cluster the group's
coordinator and the transaction coordinator are often different brokers (AddPartitionsToTxn v5 between
them, as for Produce);
then the group coordinator writes the offsets in a transactional batch of the producer, where they
stay pending until the transaction's marker (``GroupCoordinator.commit_transactional_offsets``). A
failure of the whole request is reported on every partition, as the coordinator reports append
errors; v0-v1 clients get COORDINATOR_NOT_AVAILABLE for COORDINATOR_LOAD_IN_PROGRESS. v6 names
topics by id (UNKNOWN_TOPIC_ID for an unknown one) and its generation field is a consumer group
member's epoch too: a stale one is STALE_MEMBER_EPOCH and a group that does not exist
GROUP_ID_NOT_FOUND (ILLEGAL_GENERATION for both before v6).
"""

from __future__ import annotations

from collections.abc import Callable

from tidelog.coordinator.group import OFFSETS_TOPIC, PartitionCommit
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.coordinator.runtime import normalize_append_error
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from tidelog.replica.manager import ReplicaManager
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles
from tidelog.server.handlers.groups import request_info
from tidelog.server.handlers.offsets import commits_to_write, name_topics_by_id
from tidelog.server.txn_verification import TransactionSupportedOperation, TransactionVerifier

Topic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
Partition = TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition


def _response(request: TxnOffsetCommitRequest, codes: dict[tuple[str, int], ErrorCode],
              version: int) -> TxnOffsetCommitResponse:
    def final(code: ErrorCode) -> int:
        if version < 2 and code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return int(code)

    return TxnOffsetCommitResponse(topics=[
        Topic(name=t.name, topic_id=t.topic_id,
              partitions=[Partition(partition_index=p.partition_index,
                                    error_code=final(codes.get((t.name, p.partition_index), ErrorCode.NONE)))
                          for p in t.partitions])
        for t in request.topics])


def _error(request: TxnOffsetCommitRequest, code: ErrorCode, message: str | None) -> TxnOffsetCommitResponse:
    return _response(request, {(t.name, p.partition_index): code for t in request.topics for p in t.partitions}, 9)


class TxnOffsetCommitHandler:
    def __init__(self, groups: GroupCoordinatorService, replicas: ReplicaManager, verifier: TransactionVerifier,
                 ensure_offsets_topic: Callable[[], object], authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.authorizer = authorizer
        self.groups = groups
        self.replicas = replicas
        self.verifier = verifier
        self.ensure_offsets_topic = ensure_offsets_topic

    @handles(ApiKey.TXN_OFFSET_COMMIT, 0, 6, _error)
    async def handle_txn_offset_commit(self, ctx: RequestContext, request: TxnOffsetCommitRequest
                                       ) -> TxnOffsetCommitResponse:
        auth = self.authorizer
        if not auth.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            raise KafkaError(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not auth.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        version = ctx.api_version
        codes: dict[tuple[str, int], ErrorCode] = {}
        if version >= 6:  # topics by id (KIP-1251): UNKNOWN_TOPIC_ID for an id no topic has
            codes.update(name_topics_by_id(self.replicas.image, request.topics))
        commits = commits_to_write(ctx, auth, request.topics, self.replicas.partition_exists, codes)
        if not commits:
            return _response(request, codes, version)
        try:
            check = self._check(request, version)
        except KafkaError as e:
            return self._failed(request, version, codes, commits, e.code)
        if check is not None:
            partition, operation = check
            # KIP-890 through the cluster-aware path Produce uses: the transactional id's coordinator
            # is asked wherever it is (this broker, or another one by AddPartitionsToTxn v5).
            errors = await self.verifier.verify(request.transactional_id, request.producer_id,
                                                request.producer_epoch, [partition], operation)
            if errors:
                return self._failed(request, version, codes, commits, errors[partition])
        return await self._commit(ctx, request, version, codes, commits)

    def _check(self, request: TxnOffsetCommitRequest,
               version: int) -> tuple[tuple[str, int], TransactionSupportedOperation] | None:
        """The group's ``__consumer_offsets`` partition and the operation, when the transaction
        coordinator must be asked first; None when the producer's transaction is open there already."""
        operation = TransactionSupportedOperation.for_txn_offset_commit(version)
        self.ensure_offsets_topic()
        partition = (OFFSETS_TOPIC, self.groups.partition_for(request.group_id))
        if not self.verifier.needs_check(*partition, request.producer_id, request.producer_epoch, operation):
            return None
        return partition, operation

    async def _commit(self, ctx: RequestContext, request: TxnOffsetCommitRequest, version: int,
                      codes: dict[tuple[str, int], ErrorCode], commits: list[PartitionCommit]
                      ) -> TxnOffsetCommitResponse:
        try:
            codes.update(await self.groups.txn_offset_commit(
                request_info(ctx), request.group_id, request.producer_id, request.producer_epoch,
                request.member_id, request.group_instance_id, request.generation_id_or_member_epoch, commits))
        except KafkaError as e:
            return self._failed(request, version, codes, commits, e.code)
        return _response(request, codes, version)

    @staticmethod
    def _failed(request: TxnOffsetCommitRequest, version: int, codes: dict[tuple[str, int], ErrorCode],
                commits: list[PartitionCommit], code: ErrorCode) -> TxnOffsetCommitResponse:
        """The whole request failed: the error on every partition it commits."""
        code = normalize_append_error(code)
        codes.update({(c.topic, c.partition): code for c in commits})
        return _response(request, codes, version)


__all__ = ["TxnOffsetCommitHandler"]
