"""The transaction coordinator's APIs: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
ListTransactions (InitProducerId is in producer_ids.py). Thin: check what Kafka's KafkaApis checks,
call :class:`~tidelog.coordinator.txn.TransactionCoordinator`, shape the answer for the version.

* AddPartitionsToTxn v0-v3 carry one transaction (the client's); v4+ a batch of them, each with
  ``verify_only`` (KIP-890 part 1; brokers send these). A partition that does not exist fails the
  whole transaction: UNKNOWN_TOPIC_OR_PARTITION for it, OPERATION_NOT_ATTEMPTED for the others.
* AddOffsetsToTxn adds the ``__consumer_offsets`` partition of the group.
* EndTxn v5 is transaction version 2 (KIP-890 part 2): its answer carries the producer id and epoch
  the producer uses next.
* PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for clients older than AddPartitionsToTxn v2,
  AddOffsetsToTxn v2 and EndTxn v2, as Kafka answers them.
"""

from __future__ import annotations

from tidelog.coordinator.group import OFFSETS_TOPIC
from tidelog.coordinator.group.service import GroupCoordinatorService
from tidelog.coordinator.internal_topics import INTERNAL_TOPIC_NAMES
from tidelog.coordinator.txn import TransactionVersion
from tidelog.coordinator.txn.service import TransactionCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from tidelog.replica.manager import ReplicaManager
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

TopicPartition = tuple[str, int]
Result = AddPartitionsToTxnResponse.AddPartitionsToTxnResult
TopicResult = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
PartitionResult = AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult


def _fenced_for(code: ErrorCode, version: int, first_version: int = 2) -> ErrorCode:
    """PRODUCER_FENCED as a client older than ``first_version`` understands it."""
    return ErrorCode.INVALID_PRODUCER_EPOCH if code == ErrorCode.PRODUCER_FENCED and version < first_version else code


def _topic_results(codes: dict[TopicPartition, ErrorCode]) -> list:
    by_topic: dict[str, list] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append(PartitionResult(partition_index=partition,
                                                              partition_error_code=int(code)))
    return [TopicResult(name=t, results_by_partition=parts) for t, parts in by_topic.items()]


def _transactions(request: AddPartitionsToTxnRequest, version: int) -> list:
    """The request's transactions; v0-v3 carry one in the ``v3_and_below_*`` fields."""
    if version >= 4:
        return list(request.transactions)
    return [AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction(
        transactional_id=request.v3_and_below_transactional_id, producer_id=request.v3_and_below_producer_id,
        producer_epoch=request.v3_and_below_producer_epoch, verify_only=False, topics=request.v3_and_below_topics)]


def _add_partitions_error(request: AddPartitionsToTxnRequest, code: ErrorCode, message: str | None):
    if request.transactions:
        return AddPartitionsToTxnResponse(error_code=int(code))
    codes = {(t.name, p): code for t in request.v3_and_below_topics for p in t.partitions}
    return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=_topic_results(codes))


class TransactionHandlers:
    def __init__(self, transactions: TransactionCoordinatorService, groups: GroupCoordinatorService,
                 replicas: ReplicaManager,
                 authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.authorizer = authorizer
        self.transactions = transactions
        self.groups = groups
        self.replicas = replicas

    # ------------------------------------------------------------------------- AddPartitionsToTxn

    @handles(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5, _add_partitions_error)
    async def handle_add_partitions_to_txn(self, ctx: RequestContext,
                                           request: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
        version = ctx.api_version
        # v4+ comes from brokers verifying a transaction (CLUSTER_ACTION); v0-3 from the producer itself
        if version >= 4 and not self.authorizer.authorize(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER,
                                                          CLUSTER_NAME):
            raise KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        results = [Result(transactional_id=txn.transactional_id,
                          topic_results=_topic_results(await self._add(ctx, txn, version)))
                   for txn in _transactions(request, version)]
        if version < 4:
            return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=results[0].topic_results)
        return AddPartitionsToTxnResponse(error_code=0, results_by_transaction=results)

    async def _add(self, ctx: RequestContext, txn, version: int) -> dict[TopicPartition, ErrorCode]:
        partitions = list(dict.fromkeys((t.name, p) for t in txn.topics for p in t.partitions))
        auth = self.authorizer
        if version < 4 and not auth.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                              txn.transactional_id):
            return dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        denied = set() if version >= 4 else {
            tp for tp in partitions if tp[0] not in INTERNAL_TOPIC_NAMES
            and not auth.authorize(ctx, AclOperation.WRITE, ResourceType.TOPIC, tp[0])}
        missing = {tp for tp in partitions if tp not in denied and not self.replicas.partition_exists(*tp)}
        if missing or denied:
            return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp in denied
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in missing else ErrorCode.OPERATION_NOT_ATTEMPTED
                    for tp in partitions}
        if txn.verify_only:
            return await self.transactions.verify_partitions(txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                                       partitions)
        code = await self.transactions.add_partitions_to_txn(
            txn.transactional_id, txn.producer_id, txn.producer_epoch, partitions,
            TransactionVersion.TV_2 if version >= 4 else TransactionVersion.TV_0)
        return dict.fromkeys(partitions, _fenced_for(code, version))

    # ---------------------------------------------------------------------------- AddOffsetsToTxn

    @handles(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4)
    async def handle_add_offsets_to_txn(self, ctx: RequestContext,
                                        request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
        if not self.authorizer.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                         request.transactional_id):
            return AddOffsetsToTxnResponse(error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
        if not self.authorizer.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            return AddOffsetsToTxnResponse(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        partition = (OFFSETS_TOPIC, self.groups.partition_for(request.group_id))
        code = await self.transactions.add_partitions_to_txn(request.transactional_id, request.producer_id,
                                                             request.producer_epoch, [partition])
        return AddOffsetsToTxnResponse(error_code=int(_fenced_for(code, ctx.api_version)))

    # ------------------------------------------------------------------------------------ EndTxn

    @handles(ApiKey.END_TXN, 0, 5)
    async def handle_end_txn(self, ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
        if not self.authorizer.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                         request.transactional_id):
            return EndTxnResponse(error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED), producer_id=-1,
                                  producer_epoch=-1)
        version = TransactionVersion.TV_2 if ctx.api_version > 4 else TransactionVersion.TV_0
        reply = await self.transactions.end_txn(request.transactional_id, request.producer_id, request.producer_epoch,
                                          request.committed, version)
        return EndTxnResponse(error_code=int(_fenced_for(reply.error, ctx.api_version)),
                              producer_id=reply.producer_id, producer_epoch=reply.producer_epoch)

    # ---------------------------------------------------------------------------------- admin

    @handles(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0)
    async def handle_describe_transactions(self, ctx: RequestContext,
                                           request: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
        auth = self.authorizer
        allowed = [t for t in request.transactional_ids
                   if auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, t)]
        described = iter(await self.transactions.describe_transactions(allowed) if allowed else [])
        states = []
        for transactional_id in request.transactional_ids:
            if transactional_id not in allowed:
                states.append(DescribeTransactionsResponse.TransactionState(
                    transactional_id=transactional_id,
                    error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)))
                continue
            state = next(described)
            state.topics = [t for t in state.topics
                            if auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.topic)]
            states.append(state)
        return DescribeTransactionsResponse(transaction_states=states)

    @handles(ApiKey.LIST_TRANSACTIONS, 0, 2)
    async def handle_list_transactions(self, ctx: RequestContext,
                                       request: ListTransactionsRequest) -> ListTransactionsResponse:
        response = await self.transactions.list_transactions(request.state_filters, request.producer_id_filters,
                                                       request.duration_filter, request.transactional_id_pattern)
        response.transaction_states = [
            t for t in response.transaction_states
            if self.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, t.transactional_id)]
        return response


__all__ = ["TransactionHandlers"]
