"""Feature levels (KIP-584): what this broker supports, the cluster's finalized levels, and their updates.

Kafka 4.4 reports, in ApiVersions v3+, each feature's supported range and the cluster's finalized level,
with an epoch that grows with every change (Kafka's: the metadata offset that set them). Tidelog keeps
the finalized levels in the metadata image (:attr:`MetadataImage.finalized_features`, persisted by the
single node's metadata file and by ZooKeeper's ``/feature`` in a cluster) with
:attr:`MetadataImage.features_epoch`. A level never set by UpdateFeatures is the broker config's initial
one (:func:`initial_levels`: ``share.version``, ``transaction.version``, the consumer protocol in
``group.coordinator.rebalance.protocols``), so a new cluster starts where its brokers' configs say.

What Tidelog supports (:data:`SUPPORTED`), decided per Kafka 4.4 feature (docs/compat.md "features"):

* ``metadata.version``: fixed at 4.4-IV2 (level 33), the protocol Tidelog speaks; there is no KRaft
  metadata log whose format it would select, so it cannot change;
* ``group.version`` 0-1 (KIP-848) and ``transaction.version`` 0-2 (KIP-890): reported at the level the
  broker configs select; they cannot change at runtime (the consumer protocol's handlers and the
  transaction coordinator read them at start-up);
* ``share.version`` 0-:data:`SHARE_VERSION_MAX` (KIP-932): changes at runtime; level 0 turns share groups
  off (their APIs are not advertised and answer UNSUPPORTED_VERSION), 1 on, 2 adds their dead-letter
  queues (KIP-1191), as Kafka's broker does;
* ``streams.version`` 0-1 (KIP-1071): 1 with ``streams`` in ``group.coordinator.rebalance.protocols``, fixed
  at start-up;
* ``kraft.version``, ``eligible.leader.replicas.version``: not reported (no KRaft
  quorum or ELR); an update to a level above 0 is INVALID_UPDATE_VERSION.

:func:`apply_updates` checks an UpdateFeatures request as Kafka's controller does (its messages, its
order: upgrade type, below 0, direction, supported range) and returns the new levels. Pure: no I/O.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from tidelog.cluster.store import MetadataStore
from tidelog.config import BrokerConfig
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey

METADATA_VERSION = "metadata.version"
GROUP_VERSION = "group.version"
TRANSACTION_VERSION = "transaction.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"

#: Kafka 4.4.0's newest production metadata version, 4.4-IV2.
METADATA_VERSION_LEVEL = 33
#: The highest ``share.version`` Tidelog serves: 2, as Kafka 4.4 (1: share groups, KIP-932; 2: their
#: dead-letter queues, KIP-1191).
SHARE_VERSION_MAX = 2


#: The twelve share-group APIs (KIP-932): served only while the finalized ``share.version`` is 1 or more.
SHARE_GROUP_APIS: tuple[int, ...] = (
    ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE,
    ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE, ApiKey.WRITE_SHARE_GROUP_STATE,
    ApiKey.DELETE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS, ApiKey.DELETE_SHARE_GROUP_OFFSETS)


@dataclass(frozen=True, slots=True)
class FeatureSpec:
    """A feature this broker supports: its range, and why it cannot change at runtime (None: it can)."""

    name: str
    min_level: int
    max_level: int
    fixed: str | None = None

    def supports(self, level: int) -> bool:
        return self.min_level <= level <= self.max_level


#: What Tidelog supports, in the order ApiVersions reports them.
SUPPORTED: dict[str, FeatureSpec] = {s.name: s for s in (
    FeatureSpec(METADATA_VERSION, METADATA_VERSION_LEVEL, METADATA_VERSION_LEVEL,
                "Tidelog has no KRaft metadata log: its metadata version is fixed at 4.4-IV2."),
    FeatureSpec(GROUP_VERSION, 0, 1,
                "Tidelog sets group.version at start-up from group.coordinator.rebalance.protocols."),
    FeatureSpec(TRANSACTION_VERSION, 0, 2,
                "Tidelog sets transaction.version at start-up from the broker config transaction.version."),
    FeatureSpec(SHARE_VERSION, 0, SHARE_VERSION_MAX),
    FeatureSpec(STREAMS_VERSION, 0, 1,
                "Tidelog sets streams.version at start-up from group.coordinator.rebalance.protocols (streams)."),
)}


class UpgradeType(enum.IntEnum):
    """UpdateFeatures v1+'s ``upgrade_type`` (Kafka's FeatureUpdate.UpgradeType); v0's ``allow_downgrade``
    is SAFE_DOWNGRADE."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3

    @classmethod
    def of(cls, code: int) -> UpgradeType:
        return cls(code) if code in (1, 2, 3) else cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    feature: str
    level: int
    upgrade_type: UpgradeType = UpgradeType.UPGRADE


@dataclass(frozen=True, slots=True)
class FinalizedFeatures:
    """The cluster's finalized levels (level 0 features left out, as Kafka leaves them) and their epoch."""

    levels: Mapping[str, int]
    epoch: int

    def level(self, name: str) -> int:
        return self.levels.get(name, 0)


def initial_levels(config: BrokerConfig) -> dict[str, int]:
    """The levels a cluster starts with, from the broker configs."""
    return {
        METADATA_VERSION: METADATA_VERSION_LEVEL,
        GROUP_VERSION: int("consumer" in config["group.coordinator.rebalance.protocols"]),
        TRANSACTION_VERSION: config["transaction.version"],
        SHARE_VERSION: min(config["share.version"], SHARE_VERSION_MAX),
        STREAMS_VERSION: int("streams" in config["group.coordinator.rebalance.protocols"]),
    }


def finalized(stored: Mapping[str, int], stored_epoch: int, initial: Mapping[str, int]) -> FinalizedFeatures:
    """The finalized levels: those stored (set by UpdateFeatures) over the initial ones. Epoch 1 until the
    first update (Kafka's clients read finalized features only with an epoch >= 0)."""
    levels = {**initial, **stored}
    return FinalizedFeatures({n: v for n, v in levels.items() if v > 0}, max(stored_epoch, 1))


def invalid_update(feature: str, level: int, message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature {feature}. {message}")


def apply_updates(current: FinalizedFeatures, updates: Iterable[FeatureUpdate], node_id: int) -> dict[str, int]:
    """The finalized levels after ``updates`` (every level, 0 included: a level set to 0 is stored as 0 so
    that it overrides the initial one). Raises KafkaError (INVALID_UPDATE_VERSION, INVALID_REQUEST) on the
    first update Kafka's controller refuses; then nothing is applied."""
    levels = dict(current.levels)
    seen: set[str] = set()
    for u in updates:
        if u.feature in seen:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Feature {u.feature} appears more than once in the request.")
        seen.add(u.feature)
        if not u.feature:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "A feature name cannot be empty.")
        _check(u, current.level(u.feature), node_id)
        levels[u.feature] = u.level
    return levels


def _check(u: FeatureUpdate, now: int, node_id: int) -> None:
    if u.upgrade_type is UpgradeType.UNKNOWN:
        raise invalid_update(u.feature, u.level, "The controller does not support the given upgrade type.")
    if u.level < 0:
        raise invalid_update(u.feature, u.level, "A feature version cannot be less than 0.")
    if u.level > now and u.upgrade_type is not UpgradeType.UPGRADE:
        raise invalid_update(u.feature, u.level, "Can't downgrade to a newer version.")
    if u.level < now and u.upgrade_type is UpgradeType.UPGRADE:
        raise invalid_update(u.feature, u.level, "Can't downgrade the version of this feature without setting the "
                                                 "upgrade type to either safe or unsafe downgrade.")
    spec = SUPPORTED.get(u.feature)
    if spec is None:
        if u.level > 0:
            raise invalid_update(u.feature, u.level, f"Local controller {node_id} does not support this feature.")
        return
    if not spec.supports(u.level):
        raise invalid_update(u.feature, u.level, f"Local controller {node_id} only supports versions "
                                                 f"{spec.min_level}-{spec.max_level}")
    if spec.fixed is not None and u.level != now:
        raise invalid_update(u.feature, u.level, spec.fixed)


#: Where a cluster's finalized levels live in ZooKeeper: Kafka's FeatureZNode (KIP-584), its JSON with
#: Tidelog's epoch beside the features (Kafka's ZooKeeper-era epoch was the znode's version).
FEATURE_ZNODE = "/feature"


def encode_feature_znode(levels: Mapping[str, int], epoch: int) -> bytes:
    features = {n: {"min_version_level": 1, "max_version_level": v} for n, v in sorted(levels.items())}
    return json.dumps({"version": 2, "status": 1, "features": features, "epoch": epoch}).encode()


def decode_feature_znode(raw: bytes | None) -> tuple[dict[str, int], int]:
    """(levels, epoch) of a ``/feature`` znode (an empty one: none set yet)."""
    if not raw:
        return {}, 0
    data = json.loads(raw)
    return ({n: int(f["max_version_level"]) for n, f in data.get("features", {}).items()},
            int(data.get("epoch", 0)))


class ClusterFeatures:
    """The cluster's finalized levels, as the current metadata image says, and their changes."""

    def __init__(self, store: MetadataStore, initial: Mapping[str, int], node_id: int) -> None:
        self.store = store
        self.initial = dict(initial)
        self.node_id = node_id

    def finalized(self) -> FinalizedFeatures:
        try:
            image = self.store.image
        except RuntimeError:  # the store is not open yet (a broker built, not started): the initial levels
            return finalized({}, 0, self.initial)
        return finalized(image.finalized_features, image.features_epoch, self.initial)

    def level(self, name: str) -> int:
        return self.finalized().level(name)

    def share_groups_enabled(self) -> bool:
        """Share groups are served at ``share.version`` 1 and above (Kafka's isShareGroupProtocolEnabled)."""
        return self.level(SHARE_VERSION) >= 1

    def update(self, updates: Iterable[FeatureUpdate], validate_only: bool) -> None:
        """Check ``updates`` (KafkaError as Kafka's controller refuses them) and, unless ``validate_only``,
        store the new levels (every supported feature's, so the cluster no longer depends on the brokers'
        initial configs) with the next epoch. Nothing stored when nothing changes."""
        image = self.store.image
        current = finalized(image.finalized_features, image.features_epoch, self.initial)
        levels = apply_updates(current, updates, self.node_id)
        if validate_only:
            return
        stored = {name: current.level(name) for name in SUPPORTED} | levels
        if stored == image.finalized_features:
            return
        self.store.publish(replace(image, finalized_features=stored, features_epoch=current.epoch + 1,
                                   version=image.version + 1))


__all__ = [
    "FEATURE_ZNODE",
    "GROUP_VERSION",
    "METADATA_VERSION",
    "METADATA_VERSION_LEVEL",
    "SHARE_GROUP_APIS",
    "SHARE_VERSION",
    "SHARE_VERSION_MAX",
    "STREAMS_VERSION",
    "SUPPORTED",
    "TRANSACTION_VERSION",
    "ClusterFeatures",
    "FeatureSpec",
    "FeatureUpdate",
    "FinalizedFeatures",
    "UpgradeType",
    "apply_updates",
    "decode_feature_znode",
    "encode_feature_znode",
    "finalized",
    "initial_levels",
    "invalid_update",
]
