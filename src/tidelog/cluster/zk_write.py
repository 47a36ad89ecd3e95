"""A metadata change as the operations of ONE ZooKeeper transaction, in Kafka's ZooKeeper-era layout
(:mod:`zk_data`, :mod:`zk_acl`, :mod:`zk_quota`): :func:`add_changes` compares two images and adds to
a kazoo transaction what makes ZooKeeper hold the second one.

* a new topic: its assignment and config, created together (so a topic another broker created first
  makes the transaction fail with NodeExists); its partitions' states are the controller's to create
  (:meth:`~tidelog.cluster.zk_store.ZooKeeperStore.alter_partition_state`), as Kafka's ``AdminZkClient``
  leaves them (a partition given with a state is created with it);
* a changed topic: the assignment (new partitions, KIP-455's adding/removing replicas) at the znode
  version read, changed partition states at their partition epoch (the version read; a first state is
  created), the config;
* a deleted topic: an ``/admin/delete_topics/<t>`` entry the controller carries out;
* dynamic broker and group configs, client quotas, ACLs (one znode per resource pattern plus a change
  notification), the producer-id block and the finalized feature levels (``/feature``; each at the
  version read).

Only ``exists`` checks and ``ensure_path`` are sent before the commit, each bounded by
``WRITE_TIMEOUT_S``. :class:`~tidelog.cluster.zk_store.ZooKeeperStore` commits the transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kazoo.client import KazooClient

from tidelog.cluster import reassignment, zk_acl
from tidelog.cluster import zk_data as zk
from tidelog.cluster.features import FEATURE_ZNODE, encode_feature_znode
from tidelog.cluster.metadata import MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.cluster.zk_quota import write_client_quotas

#: How long a metadata write (one ZooKeeper transaction, a request's handler waits for it) may take.
WRITE_TIMEOUT_S = 3.0


@dataclass(frozen=True, slots=True)
class ReadVersions:
    """What the writer read last: the versions its conditional writes are made at."""

    #: topic name -> version of ``/brokers/topics/<t>`` (the assignment)
    topics: Mapping[str, int]
    #: version of ``/latest_producer_id_block`` (-1: it does not exist yet)
    producer_id_block: int
    #: the controller epoch recorded in the partition states written
    controller_epoch: int
    #: version of ``/feature`` (-1: it does not exist yet)
    features: int = -1


def add_changes(tx, client: KazooClient, old: MetadataImage, image: MetadataImage, broker_id: int,
                versions: ReadVersions) -> list[str]:
    """Add to ``tx`` the writes that turn ``old`` into ``image``; returns the topics created."""
    created: list[str] = []
    for name, topic in image.topics.items():
        previous = old.topics.get(name)
        if previous is None or previous.topic_id != topic.topic_id:
            _create_topic(tx, client, topic, versions.controller_epoch)
            created.append(name)
        elif previous is not topic:
            _update_topic(tx, client, previous, topic, versions)
    for name in old.topics:
        if name not in image.topics:
            tx.create(zk.delete_topic_path(name))
    if image.broker_configs != old.broker_configs:
        _write_config(tx, client, f"{zk.CONFIG_BROKERS}/{zk.DEFAULT_BROKER_ENTITY}", image.broker_configs)
    for group in set(old.group_configs) | set(image.group_configs):
        if old.group_configs.get(group) != image.group_configs.get(group):
            _write_config(tx, client, zk.group_config_path(group), image.group_configs.get(group, {}))
    for name in set(old.client_metrics_configs) | set(image.client_metrics_configs):
        if old.client_metrics_configs.get(name) != image.client_metrics_configs.get(name):
            _write_config(tx, client, zk.client_metrics_config_path(name), image.client_metrics_configs.get(name, {}))
    if image.client_quotas != old.client_quotas:
        write_client_quotas(client, tx, old.client_quotas, image.client_quotas)
    if image.acls != old.acls:
        _write_acls(tx, client, old.acls, image.acls)
    if (image.finalized_features, image.features_epoch) != (old.finalized_features, old.features_epoch):
        data = encode_feature_znode(image.finalized_features, image.features_epoch)
        if versions.features < 0:
            tx.create(FEATURE_ZNODE, data)
        else:
            tx.set_data(FEATURE_ZNODE, data, version=versions.features)
    if image.next_producer_id_block != old.next_producer_id_block:
        data = zk.encode_producer_id_block(broker_id, old.next_producer_id_block, image.next_producer_id_block - 1)
        if versions.producer_id_block < 0:
            tx.create(zk.PRODUCER_ID_BLOCK, data)
        else:
            tx.set_data(zk.PRODUCER_ID_BLOCK, data, version=versions.producer_id_block)
    return created


def _write_acls(tx, client: KazooClient, old: frozenset, new: frozenset) -> None:
    """One node per resource pattern whose ACLs changed (created, rewritten or deleted), and a
    change notification for each."""

    def by_pattern(acls: frozenset) -> dict[tuple, set]:
        out: dict[tuple, set] = {}
        for a in acls:
            out.setdefault((a.pattern_type, a.resource_type, a.name), set()).add(a)
        return out

    before, after = by_pattern(old), by_pattern(new)
    for key in set(before) | set(after):
        if before.get(key) == after.get(key):
            continue
        pattern_type, resource_type, name = key
        path = zk_acl.resource_path(pattern_type, resource_type, name)
        if key not in after:
            tx.delete(path)
        elif key in before:
            tx.set_data(path, zk_acl.encode_acls(after[key]))
        else:
            client.ensure_path_async(zk_acl.type_path(pattern_type, resource_type)).get(timeout=WRITE_TIMEOUT_S)
            tx.create(path, zk_acl.encode_acls(after[key]))
        change_path, data = zk_acl.change_notification(pattern_type, resource_type, name)
        tx.create(change_path, data, sequence=True)


def _create_topic(tx, client: KazooClient, topic: TopicMetadata, controller_epoch: int) -> None:
    assignment = {p.partition: p.replicas for p in topic.partitions}
    tx.create(zk.topic_path(topic.name), zk.encode_topic(topic.topic_id, assignment))
    stated = [p for p in topic.partitions if not p.is_new]
    if stated:
        tx.create(zk.partitions_path(topic.name))
    for p in stated:
        tx.create(zk.partition_path(topic.name, p.partition))
        tx.create(zk.partition_state_path(topic.name, p.partition),
                  zk.encode_partition_state(p.leader, p.leader_epoch, p.isr, controller_epoch))
    _write_config(tx, client, zk.topic_config_path(topic.name), topic.configs)


def _update_topic(tx, client: KazooClient, previous: TopicMetadata, topic: TopicMetadata,
                  versions: ReadVersions) -> None:
    if len(topic.partitions) != len(previous.partitions) or reassignment.assignment_changed(previous, topic):
        tx.set_data(zk.topic_path(topic.name), reassignment.encode_assignment(topic),
                    version=versions.topics.get(topic.name, -1))
    for p in topic.partitions[len(previous.partitions):]:
        if not p.is_new:
            _create_state(tx, client, topic.name, p, versions.controller_epoch)
    for before, after in zip(previous.partitions, topic.partitions):
        if (before.leader, before.leader_epoch, before.isr) == (after.leader, after.leader_epoch, after.isr):
            continue
        if before.is_new:  # no state znode yet: created (another writer's first makes the transaction fail)
            _create_state(tx, client, topic.name, after, versions.controller_epoch)
        else:
            tx.set_data(zk.partition_state_path(topic.name, after.partition),
                        zk.encode_partition_state(after.leader, after.leader_epoch, after.isr,
                                                  versions.controller_epoch),
                        version=before.partition_epoch)
    if topic.configs != previous.configs:
        _write_config(tx, client, zk.topic_config_path(topic.name), topic.configs)


def _create_state(tx, client: KazooClient, topic: str, p: PartitionMetadata, controller_epoch: int) -> None:
    client.ensure_path_async(zk.partition_path(topic, p.partition)).get(timeout=WRITE_TIMEOUT_S)
    tx.create(zk.partition_state_path(topic, p.partition),
              zk.encode_partition_state(p.leader, p.leader_epoch, p.isr, controller_epoch))


def _write_config(tx, client: KazooClient, path: str, config: dict[str, str]) -> None:
    if client.exists_async(path).get(timeout=WRITE_TIMEOUT_S):  # bounded, as the commit is
        tx.set_data(path, zk.encode_config(config))
    else:
        tx.create(path, zk.encode_config(config))


__all__ = ["WRITE_TIMEOUT_S", "ReadVersions", "add_changes"]
