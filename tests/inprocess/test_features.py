"""Feature levels through the broker (KIP-584): ApiVersions reports the supported ranges and the
cluster's finalized levels with their epoch; UpdateFeatures changes them as Kafka 4.4 does; changing
``share.version`` turns share groups on and off at runtime; the levels survive a restart."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.inprocess.harness import InProcessBroker, run
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    CreateAclsRequest,
    FindCoordinatorRequest,
    ShareGroupHeartbeatRequest,
    UpdateFeaturesRequest,
)
from tidelog.security.principal import KafkaPrincipal

SHARE_APIS = {76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92}


def update(feature: str, level: int, upgrade_type: int = 1, validate_only: bool = False) -> UpdateFeaturesRequest:
    return UpdateFeaturesRequest(feature_updates=[UpdateFeaturesRequest.FeatureUpdateKey(
        feature=feature, max_version_level=level, upgrade_type=upgrade_type)], validate_only=validate_only)


async def versions(b: InProcessBroker, version: int = 4):
    r = await b.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), version)
    assert r.error_code == 0
    return r


async def finalized(b: InProcessBroker) -> tuple[dict[str, int], int]:
    r = await versions(b)
    assert all(f.min_version_level == f.max_version_level for f in r.finalized_features)
    return {f.name: f.max_version_level for f in r.finalized_features}, r.finalized_features_epoch


def heartbeat() -> ShareGroupHeartbeatRequest:
    return ShareGroupHeartbeatRequest(group_id="sg", member_id="m1", member_epoch=0, subscribed_topic_names=["t"])


def test_api_versions_reports_what_kafka_4_4_reports_for_tidelogs_features(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        r = await versions(b, 4)
        assert {(f.name, f.min_version, f.max_version) for f in r.supported_features} == {
            ("metadata.version", 33, 33), ("group.version", 0, 1), ("transaction.version", 0, 2),
            ("share.version", 0, 2), ("streams.version", 0, 1)}
        # share and streams groups are on by default, as in Kafka 4.4: share.version 2 (with dead-letter
        # queues, KIP-1191), streams.version 1, and their APIs
        assert await finalized(b) == ({"metadata.version": 33, "group.version": 1, "transaction.version": 2,
                                       "share.version": 2, "streams.version": 1}, 1)
        assert {88, 89, 93} <= {k.api_key for k in r.api_keys}
        # v3 leaves out the features whose lowest supported level is 0 (KAFKA-17011)
        r3 = await versions(b, 3)
        assert [(f.name, f.min_version) for f in r3.supported_features] == [("metadata.version", 33)]
        assert r3.finalized_features_epoch == 1
        assert 57 in {k.api_key for k in r.api_keys}
        assert {k.api_key for k in r.api_keys} >= SHARE_APIS

    run(tmp_path, scenario)


def test_share_version_0_finalizes_no_share_version_and_serves_no_share_api(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        r = await versions(b, 4)
        assert ("share.version", 0, 2) in {(f.name, f.min_version, f.max_version) for f in r.supported_features}
        assert await finalized(b) == ({"metadata.version": 33, "group.version": 1, "transaction.version": 2,
                                       "streams.version": 1}, 1)
        assert not SHARE_APIS & {k.api_key for k in r.api_keys}

    run(tmp_path, scenario, overrides={"share.version": "0"})


def test_share_version_turns_share_groups_on_and_off_at_runtime(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        assert (await b.request(heartbeat(), 1)).error_code == ErrorCode.UNSUPPORTED_VERSION
        share_key = FindCoordinatorRequest(key_type=2, coordinator_keys=[f"sg:{uuid.uuid4()}:0"])
        assert (await b.request(share_key, 6)).coordinators[0].error_code == ErrorCode.INVALID_REQUEST

        # validate-only changes nothing
        r = await b.request(update("share.version", 1, validate_only=True), 1)
        assert (r.error_code, [(x.feature, x.error_code) for x in r.results]) == (0, [("share.version", 0)])
        assert "share.version" not in (await finalized(b))[0]

        r = await b.request(update("share.version", 1), 2)
        assert (r.error_code, r.error_message, r.results) == (0, None, [])
        levels, epoch = await finalized(b)
        assert levels["share.version"] == 1 and epoch == 2
        assert {k.api_key for k in (await versions(b)).api_keys} >= SHARE_APIS
        assert (await b.request(heartbeat(), 1)).error_code != ErrorCode.UNSUPPORTED_VERSION
        assert (await b.request(share_key, 6)).coordinators[0].error_code != ErrorCode.INVALID_REQUEST

        # a downgrade needs a downgrade type; then share groups are off again
        r = await b.request(update("share.version", 0), 1)
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION
        assert r.results == [] and "downgrade" in r.error_message  # Kafka 4.4: no per-feature results
        r = await b.request(update("share.version", 0, upgrade_type=2), 1)
        assert r.error_code == 0
        levels, epoch = await finalized(b)
        assert "share.version" not in levels and epoch == 3
        assert not SHARE_APIS & {k.api_key for k in (await versions(b)).api_keys}
        assert (await b.request(heartbeat(), 1)).error_code == ErrorCode.UNSUPPORTED_VERSION

        # v0: allow_downgrade; the levels survive a restart
        v0 = UpdateFeaturesRequest(feature_updates=[UpdateFeaturesRequest.FeatureUpdateKey(
            feature="share.version", max_version_level=1, allow_downgrade=False)])
        assert (await b.request(v0, 0)).error_code == 0
        await b.restart()
        assert await finalized(b) == ({"metadata.version": 33, "group.version": 1, "transaction.version": 2,
                                       "share.version": 1, "streams.version": 1}, 4)
        assert (await b.request(heartbeat(), 1)).error_code != ErrorCode.UNSUPPORTED_VERSION

    run(tmp_path, scenario, overrides={"share.version": "0"})  # a new cluster with share groups off


def test_update_features_errors_as_kafka(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        r = await b.request(update("share.version", 3), 1)
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION
        assert r.error_message == ("The update failed for all features since the following feature had an error: "
                                   "Invalid update version 3 for feature share.version. Local controller 1 only "
                                   "supports versions 0-2")
        r = await b.request(update("kraft.version", 1), 1)
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION and "does not support this feature" in r.error_message
        r = await b.request(update("transaction.version", 1, upgrade_type=3), 1)
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION
        r = await b.request(update("share.version", 1, upgrade_type=7), 1)
        assert r.error_code == ErrorCode.INVALID_UPDATE_VERSION
        assert (await finalized(b))[1] == 1

    run(tmp_path, scenario, overrides={"broker.id": "1"})


def test_update_features_needs_alter_on_the_cluster(tmp_path: Path) -> None:
    admin, bob = KafkaPrincipal("User", "admin"), KafkaPrincipal("User", "bob")

    async def scenario(b: InProcessBroker) -> None:
        r = await b.request(update("share.version", 1), 1, principal=bob)
        assert (r.error_code, r.results) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
        assert "share.version" not in (await finalized(b))[0]
        acl = CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=4, resource_name="kafka-cluster", resource_pattern_type=3, principal="User:bob",
            host="*", operation=7, permission_type=3)])  # CLUSTER, LITERAL, ALTER, ALLOW
        assert [c.error_code for c in (await b.request(acl, 3, principal=admin)).results] == [0]
        assert (await b.request(update("share.version", 1), 1, principal=bob)).error_code == 0

    run(tmp_path, scenario, overrides={
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:admin",
        "share.version": "0"})
