"""Reading Kafka's ZooKeeper-era layout into metadata (the counterpart of :mod:`zk_write`): the topic
tree (assignments, KIP-455's adding/removing replicas, partition states, configs) and the ACL tree.
Reads leave ``watch`` where the caller asks for one; requests for many znodes are sent at once
(kazoo's async calls) and then collected. Runs on the caller's thread:
:class:`~tidelog.cluster.zk_store.ZooKeeperStore` calls it from its reader thread.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError

from tidelog.cluster import zk_acl
from tidelog.cluster import zk_data as zk
from tidelog.cluster.metadata import PartitionMetadata, TopicMetadata
from tidelog.security.acl import AclBinding, PatternType

log = logging.getLogger(__name__)

Watch = Callable[[object], None]


def read_acls(client: KazooClient) -> list[AclBinding]:
    """Every ACL under ``/kafka-acl`` and ``/kafka-acl-extended``; unreadable nodes are logged and
    skipped, nodes deleted meanwhile ignored."""
    acls: list[AclBinding] = []
    for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        root = zk_acl.pattern_root(pattern_type)
        for type_name in client.get_children(root) if client.exists(root) else []:
            resource_type = zk_acl.resource_type_from_path(type_name)
            if resource_type is None:
                continue
            for name in client.get_children(f"{root}/{type_name}"):
                try:
                    raw, _ = client.get(zk_acl.resource_path(pattern_type, resource_type, name))
                except NoNodeError:
                    continue
                try:
                    acls.extend(zk_acl.decode_acls(raw, resource_type, name, pattern_type))
                except (ValueError, KeyError, TypeError) as e:
                    log.warning("ignoring the unreadable ACLs of %s/%s: %r", root, name, e)
    return acls


def read_config(client: KazooClient, path: str, watch: Watch | None) -> dict[str, str]:
    """A config znode's entries ({} when it does not exist)."""
    if not client.exists(path, watch=watch):
        return {}
    try:
        return zk.decode_config(client.get(path, watch=watch)[0])
    except NoNodeError:
        return {}


def read_topics(client: KazooClient, watch: Watch | None, deleting: set[str],
                old: Mapping[str, TopicMetadata],
                internal: Collection[str] = frozenset()) -> tuple[dict[str, TopicMetadata], dict[str, int]]:
    """Every topic not being deleted, and the version of each one's assignment znode. A topic equal
    to its entry in ``old`` is that same object (subscribers compare by identity)."""
    names = [n for n in client.get_children(zk.TOPICS, watch=watch) if n not in deleting]
    assignments = {n: client.get_async(zk.topic_path(n), watch=watch) for n in names}
    configs = {n: client.exists_async(zk.topic_config_path(n), watch=watch) for n in names}
    topics: dict[str, TopicMetadata] = {}
    versions: dict[str, int] = {}
    for name in names:
        try:
            raw, stat = assignments[name].get()
        except NoNodeError:
            continue
        topic_id, assignment = zk.decode_topic(raw)
        adding, removing = zk.decode_topic_reassignment(raw)
        if topic_id is None:  # written by a tool that predates topic ids: a stable one from the name
            topic_id = uuid.uuid5(uuid.NAMESPACE_URL, f"tidelog-topic:{name}")
        states = {p: client.get_async(zk.partition_state_path(name, p), watch=watch) for p in assignment}
        partitions = []
        for p, replicas in sorted(assignment.items()):
            try:
                raw_state, state_stat = states[p].get()
                meta, _ = zk.decode_partition_state(p, replicas, raw_state, state_stat.version)
            except NoNodeError:  # no state yet: the controller decides the first one; its creation is watched
                meta = PartitionMetadata.new(p, replicas)
                if watch is not None:
                    _watch_creation(client, zk.partition_state_path(name, p), watch)
            if p in adding or p in removing:
                meta = replace(meta, adding_replicas=adding.get(p, ()), removing_replicas=removing.get(p, ()))
            partitions.append(meta)
        config = read_config(client, zk.topic_config_path(name), watch) if configs[name].get() else {}
        topic = TopicMetadata(name, topic_id, tuple(partitions), config, name in internal)
        previous = old.get(name)
        topics[name] = previous if previous == topic else topic
        versions[name] = stat.version
    return topics, versions


def _watch_creation(client: KazooClient, path: str, watch: Watch) -> None:
    """``watch`` fires once ``path`` exists (at once if it was created since it was found missing)."""
    def found(result) -> None:  # kazoo's thread
        try:
            exists = result.get() is not None
        except KazooException:  # a lost connection: reconnecting re-reads anyway
            return
        if exists:
            watch(None)

    client.exists_async(path, watch=watch).rawlink(found)


__all__ = ["read_acls", "read_config", "read_topics"]
