"""Cluster metadata: brokers, topics (with ids), partitions, replicas, ISR, leaders and epochs.

A single node is a cluster of one whose metadata store is embedded in its data directory.
"""

from tidelog.cluster.metadata import BrokerInfo, MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.cluster.store import EmbeddedStore, MetadataStore

__all__ = ["BrokerInfo", "EmbeddedStore", "MetadataImage", "MetadataStore", "PartitionMetadata", "TopicMetadata"]
