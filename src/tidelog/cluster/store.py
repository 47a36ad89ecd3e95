"""Where the metadata image lives. A single node embeds it in its data directory as JSON.

File ``<data dir>/tidelog-metadata.json`` (written atomically: a ``.tmp`` file, fsync, rename; on a full
disk with the data dir's space reserve, so that DeleteTopics can free space: :mod:`tidelog.disk_space`)::

    {"version": 1, "cluster_id": "...", "topics": [{"name", "topic_id", "configs", "is_internal",
      "partitions": [{"partition", "leader", "leader_epoch", "replicas", "isr", "partition_epoch"}]}],
     "broker_configs": {...}, "group_configs": {group: {...}}, "next_producer_id_block": N,
     "client_quotas": [{"entity": {"user": "alice", "client-id": null}, "quotas": {"producer_byte_rate": 1024.0}}],
     "acls": [{"resource_type", "name", "pattern_type", "principal", "host", "operation", "permission"}],
     "finalized_features": {"share.version": 1}, "features_epoch": N}

Brokers are not persisted: each broker registers itself at start-up.

Every store notifies its subscribers after each change, with the image before and after: this is how
the rest of the broker learns of metadata changes (the replica manager creates and deletes logs, the
coordinators learn of new partitions), whichever store (embedded file, ZooKeeper) made them.
Loop-only, not thread-safe.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from tidelog import disk_space
from tidelog.cluster import client_quota
from tidelog.cluster.metadata import BrokerInfo, MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.errors import ErrorCode, KafkaError
from tidelog.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

METADATA_FILE = "tidelog-metadata.json"
FORMAT_VERSION = 1


#: Called after every change with (image before, image after).
MetadataListener = Callable[[MetadataImage, MetadataImage], None]


class MetadataStore(Protocol):
    @property
    def image(self) -> MetadataImage: ...

    def publish(self, image: MetadataImage) -> None: ...

    def refresh(self) -> None:
        """Bring the image up to the shared store's state now (bounded wait), before a decision that a
        lagging image would get wrong."""
        ...

    def subscribe(self, listener: MetadataListener) -> None: ...

    def open(self, broker: BrokerInfo) -> MetadataImage: ...

    def close(self) -> None: ...


def new_cluster_id() -> str:
    """22 characters of URL-safe base64 over a random UUID, as Kafka's cluster ids look."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class EmbeddedStore:
    """The metadata image of a single-node cluster, persisted in a JSON file in the data dir.

    Building one reads nothing; :meth:`open` loads (or creates) the file, once the broker owns the
    data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / METADATA_FILE
        self._image: MetadataImage | None = None
        self._listeners: list[MetadataListener] = []

    def open(self, broker: BrokerInfo) -> MetadataImage:
        self._image = self._load(broker)
        return self._image

    @property
    def image(self) -> MetadataImage:
        if self._image is None:
            raise RuntimeError(f"the metadata store {self.path} is not open")
        return self._image

    def publish(self, image: MetadataImage) -> None:
        """Write the new image, then tell the subscribers. A write that fails even with the data
        dir's space reserve (:mod:`tidelog.disk_space`) changes nothing: KafkaError(KAFKA_STORAGE_ERROR)."""
        old = self.image
        try:
            self._write(image)
        except OSError as e:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR,
                             f"cannot write the metadata file {self.path}: {disk_space.describe(e)}") from None
        self._image = image
        for listener in self._listeners:
            listener(old, image)

    def subscribe(self, listener: MetadataListener) -> None:
        self._listeners.append(listener)

    def alter_partition_state(self, topic: str, partition: int, new: PartitionMetadata,
                              on_done: Callable[[bool], None]) -> None:
        """A partition state the controller decided (a new partition's first one), written as a
        cluster's store writes it: only at the partition epoch it was read at (``new.partition_epoch``),
        which then goes up by one; ``on_done(written)`` at once."""
        t = self.image.topics.get(topic)
        current = t.partitions[partition] if t is not None and partition < len(t.partitions) else None
        if current is None or current.partition_epoch != new.partition_epoch:
            on_done(False)
            return
        parts = list(t.partitions)  # type: ignore[union-attr]
        parts[partition] = replace(new, partition_epoch=current.partition_epoch + 1)
        try:
            self.publish(self.image.with_topic(replace(t, partitions=tuple(parts))))  # type: ignore[type-var]
        except KafkaError:
            on_done(False)
            return
        on_done(True)

    def refresh(self) -> None:
        """Nothing to do: this image is the only copy."""

    def close(self) -> None:
        """Nothing to release: every change is already on disk."""

    def _load(self, broker: BrokerInfo) -> MetadataImage:
        if not self.path.exists():
            image = MetadataImage(new_cluster_id(), broker.broker_id, {broker.broker_id: broker}, {})
            self._write(image)
            return image
        raw = json.loads(self.path.read_text(encoding="utf-8"))
        if raw.get("version") != FORMAT_VERSION:
            raise ValueError(f"{self.path}: unsupported metadata format {raw.get('version')!r}")
        topics = {}
        for t in raw["topics"]:
            parts = tuple(
                PartitionMetadata(
                    p["partition"], p["leader"], p["leader_epoch"], tuple(p["replicas"]), tuple(p["isr"]),
                    p.get("partition_epoch", 0),
                )
                for p in t["partitions"]
            )
            topics[t["name"]] = TopicMetadata(
                t["name"], uuid.UUID(t["topic_id"]), parts, dict(t.get("configs", {})), t.get("is_internal", False)
            )
        image = MetadataImage(
            raw["cluster_id"], broker.broker_id, {broker.broker_id: broker}, topics,
            dict(raw.get("broker_configs", {})), int(raw.get("next_producer_id_block", 0)),
            {g: dict(c) for g, c in raw.get("group_configs", {}).items()},
        )
        return replace(image, version=1, client_quotas=client_quota.from_json(raw.get("client_quotas", [])),
                       acls=frozenset(_acl_from_json(a) for a in raw.get("acls", [])),
                       client_metrics_configs={n: dict(c) for n, c in raw.get("client_metrics_configs", {}).items()},
                       finalized_features={k: int(v) for k, v in raw.get("finalized_features", {}).items()},
                       features_epoch=int(raw.get("features_epoch", 0)))

    def _write(self, image: MetadataImage) -> None:
        data = {
            "version": FORMAT_VERSION,
            "cluster_id": image.cluster_id,
            "broker_configs": image.broker_configs,
            "next_producer_id_block": image.next_producer_id_block,
            "group_configs": image.group_configs,
            "client_metrics_configs": image.client_metrics_configs,
            "client_quotas": client_quota.to_json(image.client_quotas),
            "acls": sorted((_acl_to_json(a) for a in image.acls), key=lambda a: sorted(a.items())),
            "finalized_features": image.finalized_features,
            "features_epoch": image.features_epoch,
            "topics": [
                {
                    "name": t.name,
                    "topic_id": str(t.topic_id),
                    "configs": t.configs,
                    "is_internal": t.is_internal,
                    "partitions": [
                        {
                            "partition": p.partition,
                            "leader": p.leader,
                            "leader_epoch": p.leader_epoch,
                            "replicas": list(p.replicas),
                            "isr": list(p.isr),
                            "partition_epoch": p.partition_epoch,
                        }
                        for p in t.partitions
                    ],
                }
                for t in sorted(image.topics.values(), key=lambda t: t.name)
            ],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        disk_space.write_atomically(self.path, json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))


def _acl_to_json(acl: AclBinding) -> dict[str, str]:
    return {"resource_type": acl.resource_type.name, "name": acl.name, "pattern_type": acl.pattern_type.name,
            "principal": acl.principal, "host": acl.host, "operation": acl.operation.name,
            "permission": acl.permission.name}


def _acl_from_json(raw: dict[str, str]) -> AclBinding:
    return AclBinding(ResourceType[raw["resource_type"]], raw["name"], PatternType[raw["pattern_type"]],
                      raw["principal"], raw["host"], AclOperation[raw["operation"]],
                      AclPermissionType[raw["permission"]])


__all__ = ["METADATA_FILE", "EmbeddedStore", "MetadataListener", "MetadataStore", "new_cluster_id"]
