"""InitProducerId for idempotent producers: a fresh, never reused producer id with epoch 0.

A request with a transactional id needs the transaction coordinator, which arrives with a later
issue; until then it is answered with COORDINATOR_NOT_AVAILABLE (the client retries, then fails).
A producer id without an epoch, or an epoch without a producer id, is INVALID_REQUEST (as in Kafka).
"""

from __future__ import annotations

from tidelog.coordinator.txn.producer_ids import ProducerIdManager
from tidelog.errors import ErrorCode
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import InitProducerIdRequest, InitProducerIdResponse
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles


class InitProducerIdHandler:
    def __init__(self, producer_ids: ProducerIdManager) -> None:
        self.producer_ids = producer_ids

    @handles(ApiKey.INIT_PRODUCER_ID, 0, 5)
    def handle_init_producer_id(self, ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
        if (request.producer_id == -1) != (request.producer_epoch == -1):
            return InitProducerIdResponse(error_code=int(ErrorCode.INVALID_REQUEST), producer_id=-1,
                                          producer_epoch=-1)
        if request.transactional_id is not None:
            return InitProducerIdResponse(error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE), producer_id=-1,
                                          producer_epoch=-1)
        return InitProducerIdResponse(error_code=0, producer_id=self.producer_ids.next_producer_id(), producer_epoch=0)


__all__ = ["InitProducerIdHandler"]
