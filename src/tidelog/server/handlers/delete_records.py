"""DeleteRecords: move a partition's log start offset forward. The rules are the replica manager's
(:meth:`~tidelog.replica.manager.ReplicaManager.delete_records`, Kafka's ``deleteRecordsOnLeader``).
Success answers the new low watermark (the log start offset; a single node has no followers to wait
for); failures answer low watermark -1. Records before the new start become unreadable at once; their
segments go with the next retention pass.
"""

from __future__ import annotations

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse
from tidelog.replica.manager import ReplicaManager
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

TopicResult = DeleteRecordsResponse.DeleteRecordsTopicResult
PartitionResult = DeleteRecordsResponse.DeleteRecordsPartitionResult


def delete_records_error_response(request: DeleteRecordsRequest, code: ErrorCode, message: str | None = None):
    return DeleteRecordsResponse(topics=[
        TopicResult(name=t.name, partitions=[
            PartitionResult(partition_index=p.partition_index, low_watermark=-1, error_code=int(code))
            for p in t.partitions
        ])
        for t in request.topics
    ])


class DeleteRecordsHandler:
    def __init__(self, replicas: ReplicaManager, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.replicas = replicas
        self.authorizer = authorizer

    @handles(ApiKey.DELETE_RECORDS, 0, 2, delete_records_error_response)
    def handle_delete_records(self, ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
        topics = []
        for t in request.topics:
            parts = []
            if not self.authorizer.authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, t.name):
                topics.append(TopicResult(name=t.name, partitions=[PartitionResult(
                    partition_index=p.partition_index, low_watermark=-1,
                    error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)) for p in t.partitions]))
                continue
            for p in t.partitions:
                try:
                    low_watermark = self.replicas.delete_records(t.name, p.partition_index, p.offset)
                    parts.append(PartitionResult(partition_index=p.partition_index, low_watermark=low_watermark,
                                                 error_code=0))
                except KafkaError as e:
                    parts.append(PartitionResult(partition_index=p.partition_index, low_watermark=-1,
                                                 error_code=int(e.code)))
            topics.append(TopicResult(name=t.name, partitions=parts))
        return DeleteRecordsResponse(topics=topics)


__all__ = ["DeleteRecordsHandler"]
