"""UpdateFeatures (KIP-584): the refusals Kafka 4.4's controller makes, and updates that change nothing
(validate-only, or the level a feature already has), so neither broker's levels move: an unknown
feature, a level above the supported range, a downgrade without a downgrade type, a negative level, an
unknown upgrade type; v0's ``allow_downgrade``. Messages are not compared (the error-message rule);
docs/compat.md "Feature levels" lists what each broker supports and finalizes."""

from __future__ import annotations

from tests.oracle.wire.program import Program
from tidelog.protocol.messages import UpdateFeaturesRequest

UPDATE = UpdateFeaturesRequest.API_KEY
UPGRADE, SAFE, UNSAFE = 1, 2, 3


def update(version: int, feature: str, level: int, upgrade_type: int = UPGRADE, *, validate_only: bool = False,
           allow_downgrade: bool = False) -> UpdateFeaturesRequest:
    key = UpdateFeaturesRequest.FeatureUpdateKey(feature=feature, max_version_level=level)
    if version == 0:
        key.allow_downgrade = allow_downgrade
    else:
        key.upgrade_type = upgrade_type
    return UpdateFeaturesRequest(timeout_ms=30000, feature_updates=[key],
                                 validate_only=validate_only if version >= 1 else False)


def add(program: Program) -> None:
    for v in program.versions(UPDATE):
        program.request("unknown-feature", v, update(v, "diff.no.such.feature", 1))
        program.request("above-supported", v, update(v, "share.version", 9))
        program.request("downgrade-without-type", v, update(v, "group.version", 0))
        program.request("same-level", v, update(v, "group.version", 1, validate_only=True))
        program.request("metadata-version-same-level", v, update(v, "metadata.version", 33, validate_only=True))
        if v == 0:
            program.request("allow-downgrade-upward", v, update(v, "share.version", 9, allow_downgrade=True))
            continue
        program.request("negative-level", v, update(v, "transaction.version", -1, SAFE))
        program.request("unknown-upgrade-type", v, update(v, "group.version", 1, 9))
        program.request("downgrade-to-newer", v, update(v, "share.version", 9, UNSAFE, validate_only=True))
        program.request("two-features-one-refused", v, UpdateFeaturesRequest(feature_updates=[
            UpdateFeaturesRequest.FeatureUpdateKey(feature="group.version", max_version_level=1, upgrade_type=UPGRADE),
            UpdateFeaturesRequest.FeatureUpdateKey(feature="diff.no.such.feature", max_version_level=2,
                                                   upgrade_type=UPGRADE)], validate_only=True))


__all__ = ["add"]
