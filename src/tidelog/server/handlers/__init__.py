"""Request handlers, one module per API family; each handler object gets its components from the
composition root (:mod:`tidelog.server.broker`), which registers them in a
:class:`~tidelog.server.dispatcher.HandlerRegistry`."""

from tidelog.server.handlers.acls import AclHandlers
from tidelog.server.handlers.api_versions import ApiVersionsHandler
from tidelog.server.handlers.cluster_info import ClusterInfoHandlers
from tidelog.server.handlers.configs import ConfigHandlers
from tidelog.server.handlers.consumer_group import ConsumerGroupHandlers
from tidelog.server.handlers.delete_records import DeleteRecordsHandler
from tidelog.server.handlers.describe_topic_partitions import DescribeTopicPartitionsHandler
from tidelog.server.handlers.fetch import FetchHandler
from tidelog.server.handlers.find_coordinator import FindCoordinatorHandler
from tidelog.server.handlers.groups import GroupHandlers
from tidelog.server.handlers.list_offsets import ListOffsetsHandler
from tidelog.server.handlers.metadata import MetadataHandler
from tidelog.server.handlers.offset_for_leader_epoch import OffsetForLeaderEpochHandler
from tidelog.server.handlers.offsets import OffsetHandlers
from tidelog.server.handlers.produce import ProduceHandler
from tidelog.server.handlers.producer_ids import InitProducerIdHandler
from tidelog.server.handlers.topics import TopicHandlers
from tidelog.server.handlers.transactions import TransactionHandlers
from tidelog.server.handlers.txn_offset_commit import TxnOffsetCommitHandler
from tidelog.server.handlers.txn_partitions import TxnPartitionHandlers

__all__ = [
    "AclHandlers",
    "ApiVersionsHandler",
    "ClusterInfoHandlers",
    "ConfigHandlers",
    "ConsumerGroupHandlers",
    "DeleteRecordsHandler",
    "DescribeTopicPartitionsHandler",
    "FetchHandler",
    "FindCoordinatorHandler",
    "GroupHandlers",
    "InitProducerIdHandler",
    "ListOffsetsHandler",
    "MetadataHandler",
    "OffsetForLeaderEpochHandler",
    "OffsetHandlers",
    "ProduceHandler",
    "TopicHandlers",
    "TransactionHandlers",
    "TxnOffsetCommitHandler",
    "TxnPartitionHandlers",
]
