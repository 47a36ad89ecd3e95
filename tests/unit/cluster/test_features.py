"""Feature levels (KIP-584, cluster/features.py): UpdateFeatures' checks as Kafka 4.4's controller makes
them, the finalized levels over the configs' initial ones, and the ``/feature`` znode's JSON."""

from __future__ import annotations

import pytest

from tidelog.cluster.features import (
    SUPPORTED,
    FeatureUpdate,
    FinalizedFeatures,
    UpgradeType,
    apply_updates,
    decode_feature_znode,
    encode_feature_znode,
    finalized,
    initial_levels,
)
from tidelog.config import BrokerConfig
from tidelog.errors import ErrorCode, KafkaError

CURRENT = FinalizedFeatures({"metadata.version": 33, "group.version": 1, "transaction.version": 2}, 5)
UP, SAFE, UNSAFE = UpgradeType.UPGRADE, UpgradeType.SAFE_DOWNGRADE, UpgradeType.UNSAFE_DOWNGRADE


def refused(*updates: FeatureUpdate) -> KafkaError:
    with pytest.raises(KafkaError) as e:
        apply_updates(CURRENT, updates, node_id=1)
    return e.value


def test_share_version_upgrades_and_downgrades_with_a_downgrade_type() -> None:
    assert apply_updates(CURRENT, [FeatureUpdate("share.version", 1, UP)], 1)["share.version"] == 1
    on = FinalizedFeatures({**CURRENT.levels, "share.version": 1}, 6)
    assert apply_updates(on, [FeatureUpdate("share.version", 0, SAFE)], 1)["share.version"] == 0
    assert apply_updates(on, [FeatureUpdate("share.version", 0, UNSAFE)], 1)["share.version"] == 0
    # the same level is no change, whatever the type
    assert apply_updates(on, [FeatureUpdate("share.version", 1, SAFE)], 1)["share.version"] == 1


@pytest.mark.parametrize(("update", "message"), [
    (FeatureUpdate("share.version", 1, UpgradeType.UNKNOWN), "does not support the given upgrade type"),
    (FeatureUpdate("share.version", -1, SAFE), "cannot be less than 0"),
    (FeatureUpdate("share.version", 1, SAFE), "Can't downgrade to a newer version."),
    (FeatureUpdate("group.version", 0, UP), "without setting the upgrade type to either safe or unsafe downgrade"),
    (FeatureUpdate("share.version", 3, UP), "only supports versions 0-2"),
    (FeatureUpdate("no.such.feature", 1, UP), "Local controller 1 does not support this feature."),
    (FeatureUpdate("transaction.version", 1, SAFE), "transaction.version at start-up"),
    (FeatureUpdate("metadata.version", 34, UP), "only supports versions 33-33"),
])
def test_refused_updates_are_invalid_update_version(update: FeatureUpdate, message: str) -> None:
    e = refused(update)
    assert e.code == ErrorCode.INVALID_UPDATE_VERSION
    assert e.message.startswith(f"Invalid update version {update.level} for feature {update.feature}. ")
    assert message in e.message


def test_one_refused_update_refuses_the_request_and_unknown_features_may_go_to_0() -> None:
    assert refused(FeatureUpdate("share.version", 1), FeatureUpdate("share.version", 1)).code == ErrorCode.INVALID_REQUEST
    assert refused(FeatureUpdate("share.version", 1), FeatureUpdate("streams.version", 1)).code == (
        ErrorCode.INVALID_UPDATE_VERSION)
    assert apply_updates(CURRENT, [FeatureUpdate("streams.version", 0, SAFE)], 1)["streams.version"] == 0


def test_finalized_levels_are_the_stored_over_the_initial_ones_without_zeroes() -> None:
    config = BrokerConfig.from_props({"share.version": "1", "group.coordinator.rebalance.protocols": "classic"})
    initial = initial_levels(config)
    assert initial == {"metadata.version": 33, "group.version": 0, "transaction.version": 2, "share.version": 1,
                       "streams.version": 0}
    never = finalized({}, 0, initial)
    assert never.epoch == 1 and dict(never.levels) == {"metadata.version": 33, "transaction.version": 2,
                                                       "share.version": 1}
    changed = finalized({"share.version": 0, "group.version": 0}, 4, initial)
    assert changed.epoch == 4 and "share.version" not in changed.levels
    assert set(SUPPORTED) == {"metadata.version", "group.version", "transaction.version", "share.version",
                              "streams.version"}


def test_by_default_streams_groups_are_on_as_in_kafka_4_4() -> None:
    config = BrokerConfig.from_props({})
    assert config["group.coordinator.rebalance.protocols"] == ("classic", "consumer", "streams")
    assert initial_levels(config)["streams.version"] == 1 and initial_levels(config)["group.version"] == 1
    off = BrokerConfig.from_props({"group.coordinator.rebalance.protocols": "classic,consumer"})
    assert initial_levels(off).get("streams.version", 0) == 0


def test_the_feature_znode_round_trips() -> None:
    raw = encode_feature_znode({"share.version": 1, "group.version": 0}, 7)
    assert decode_feature_znode(raw) == ({"share.version": 1, "group.version": 0}, 7)
    assert decode_feature_znode(b"") == ({}, 0)
