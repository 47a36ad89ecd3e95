"""InitProducerId: a producer id and epoch for an idempotent or transactional producer.

Without a transactional id: a fresh, never reused producer id with epoch 0. With one, the transaction
coordinator answers (:meth:`~tidelog.coordinator.txn.TransactionCoordinator.init_producer_id`: epoch
bumps, fencing, aborting a previous instance's transaction, KIP-360 recovery with the producer id and
epoch of v3+). As in Kafka: a producer id without an epoch (or the reverse) is INVALID_REQUEST, and
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for clients older than v4.
"""

from __future__ import annotations

from tidelog.coordinator.txn.producer_ids import ProducerIdManager
from tidelog.coordinator.txn.service import TransactionCoordinatorService
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import InitProducerIdRequest, InitProducerIdResponse
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles


def _error(code: ErrorCode) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=int(code), producer_id=-1, producer_epoch=-1)


class InitProducerIdHandler:
    def __init__(self, producer_ids: ProducerIdManager, transactions: TransactionCoordinatorService,
                 authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.authorizer = authorizer
        self.producer_ids = producer_ids
        self.transactions = transactions

    @handles(ApiKey.INIT_PRODUCER_ID, 0, 5)
    async def handle_init_producer_id(self, ctx: RequestContext,
                                      request: InitProducerIdRequest) -> InitProducerIdResponse:
        auth = self.authorizer
        if request.transactional_id is not None:
            if not auth.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
                return _error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        elif not (auth.authorize(ctx, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME)
                  or auth.authorize_by_resource_type(ctx, AclOperation.WRITE, ResourceType.TOPIC)):
            # an idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
            return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        pid, epoch = request.producer_id, request.producer_epoch
        if (pid == -1) != (epoch == -1):
            return _error(ErrorCode.INVALID_REQUEST)
        if request.transactional_id is None:
            try:
                return InitProducerIdResponse(error_code=0, producer_id=self.producer_ids.next_producer_id(),
                                              producer_epoch=0)
            except KafkaError as e:
                return _error(e.code)
        result = await self.transactions.init_producer_id(request.transactional_id, request.transaction_timeout_ms,
                                                          None if pid == -1 else (pid, epoch))
        code = result.error
        if code == ErrorCode.PRODUCER_FENCED and ctx.api_version < 4:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        return InitProducerIdResponse(error_code=int(code), producer_id=result.producer_id,
                                      producer_epoch=result.producer_epoch)


__all__ = ["InitProducerIdHandler"]
