"""UpdateFeatures (57, v0-2; KIP-584): change the cluster's finalized feature levels (cluster/features.py).

As Kafka 4.4 answers: ALTER on the CLUSTER resource, else CLUSTER_AUTHORIZATION_FAILED; every update is
checked first and the first refused one fails the whole request (INVALID_UPDATE_VERSION, its message
Kafka's controller's, after :data:`FAILED_PREFIX`), nothing applied; ``validate_only`` (v1+) checks without applying. v0's ``allow_downgrade`` is a
safe downgrade. A refusal is the top-level error with no per-feature results; a success has v0-1's one
result (NONE) per feature named (v2 has no results), as Kafka 4.4 answers (the wire differential suite).
"""

from __future__ import annotations

from tidelog.cluster.features import ClusterFeatures, FeatureUpdate, UpgradeType
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import UpdateFeaturesRequest, UpdateFeaturesResponse
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

#: What Kafka 4.4's controller puts before the refused update's own message (QuorumController.updateFeatures).
FAILED_PREFIX = "The update failed for all features since the following feature had an error: "


def _response(request: UpdateFeaturesRequest, code: ErrorCode, message: str | None,
              features: list[str] | None = None) -> UpdateFeaturesResponse:
    names = [u.feature for u in request.feature_updates] if features is None else features
    return UpdateFeaturesResponse(
        error_code=int(code), error_message=message,
        results=[UpdateFeaturesResponse.UpdatableFeatureResult(feature=name, error_code=int(code), error_message=message)
                 for name in names])


def error_response(request: UpdateFeaturesRequest, code: ErrorCode, message: str | None) -> UpdateFeaturesResponse:
    """Kafka's error response to a request it could not handle (authorization): no per-feature results."""
    return _response(request, code, message or code.message, [])


class UpdateFeaturesHandler:
    def __init__(self, features: ClusterFeatures, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.features = features
        self.authorizer = authorizer

    @handles(ApiKey.UPDATE_FEATURES, 0, 2, error_response)
    def handle_update_features(self, ctx: RequestContext, request: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
        if not self.authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
            return error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
        v0 = ctx.api_version == 0
        updates = [FeatureUpdate(u.feature, u.max_version_level,
                                 (UpgradeType.SAFE_DOWNGRADE if u.allow_downgrade else UpgradeType.UPGRADE) if v0
                                 else UpgradeType.of(u.upgrade_type))
                   for u in request.feature_updates]
        try:
            self.features.update(updates, validate_only=request.validate_only and not v0)
        except KafkaError as e:
            return _response(request, e.code, FAILED_PREFIX + e.message, [])
        return _response(request, ErrorCode.NONE, None)


__all__ = ["UpdateFeaturesHandler"]
