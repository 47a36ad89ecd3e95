"""ApiVersions: the versions this broker serves, derived from the handler registry.

From v3 the client names its software (KIP-511); as in Kafka, a name or version that is not letters,
digits, dots and dashes, starting and ending with a letter or digit, gets INVALID_REQUEST and no
versions. From v5 (KIP-1242) a client may name the cluster and the node it means to reach (both or
neither, else INVALID_REQUEST); a broker of another cluster, or another node, answers
REBOOTSTRAP_REQUIRED and no versions.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tidelog.cluster.features import SUPPORTED, FinalizedFeatures
from tidelog.errors import ErrorCode
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import HandlerRegistry, handles

#: Kafka's rule for client_software_name and client_software_version (ApiVersionsRequest.isValid).
SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?")

class ApiVersionsHandler:
    """``features()``: the cluster's finalized feature levels and their epoch, sent from v3 on with the
    ranges this broker supports (KIP-584, cluster/features.py); the Java client reads
    ``transaction.version`` there to choose KIP-890's protocol. ``cluster_id()`` and ``node_id`` are this
    broker's, for v5's check."""

    def __init__(self, registry: HandlerRegistry, features: Callable[[], FinalizedFeatures] | None = None,
                 cluster_id: Callable[[], str | None] = lambda: None, node_id: int = -1,
                 on_client_software: Callable[[str, str, str], None] | None = None) -> None:
        self.registry = registry
        #: told (connection id, software name, version) of each valid v3+ request (client telemetry's match)
        self.on_client_software = on_client_software
        self.features = features
        self.cluster_id = cluster_id
        self.node_id = node_id

    @handles(ApiKey.API_VERSIONS, 0, 5)
    def handle_api_versions(self, ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
        if ctx.api_version >= 3 and not (SOFTWARE_PATTERN.fullmatch(request.client_software_name)
                                         and SOFTWARE_PATTERN.fullmatch(request.client_software_version)):
            return ApiVersionsResponse(error_code=int(ErrorCode.INVALID_REQUEST), api_keys=[], throttle_time_ms=0)
        if ctx.api_version >= 5:
            code = self._check_target(request)
            if code is not None:
                return ApiVersionsResponse(error_code=int(code), api_keys=[], throttle_time_ms=0)
        if ctx.api_version >= 3 and self.on_client_software is not None:
            self.on_client_software(ctx.connection_id, request.client_software_name, request.client_software_version)
        return ApiVersionsResponse(
            error_code=0,
            api_keys=[
                ApiVersionsResponse.ApiVersion(api_key=key, min_version=lo, max_version=hi)
                for key, lo, hi in self.registry.supported_versions()
            ],
            throttle_time_ms=0,
            **self._features(ctx.api_version),
        )

    def _features(self, version: int) -> dict:
        """Supported ranges and finalized levels, as Kafka 4.4 sends them: v3 leaves out the features whose
        lowest supported level is 0 (KAFKA-17011, ApiVersionsResponse.json); finalized levels of 0 are not
        sent; a finalized level's min_version_level is its max_version_level (KRaft's)."""
        if self.features is None:
            return {"supported_features": [], "finalized_features_epoch": -1, "finalized_features": []}
        finalized = self.features()
        return {
            "supported_features": [
                ApiVersionsResponse.SupportedFeatureKey(name=s.name, min_version=s.min_level, max_version=s.max_level)
                for s in SUPPORTED.values() if version >= 4 or s.min_level > 0],
            "finalized_features_epoch": finalized.epoch,
            "finalized_features": [
                ApiVersionsResponse.FinalizedFeatureKey(name=name, min_version_level=level, max_version_level=level)
                for name, level in finalized.levels.items()],
        }

    def _check_target(self, request: ApiVersionsRequest) -> ErrorCode | None:
        """KIP-1242, as Kafka 4.4 answers: the cluster id and the node id come both (node id not -1) or
        neither, else INVALID_REQUEST; both given and either not this broker's: REBOOTSTRAP_REQUIRED."""
        has_cluster, has_node = request.cluster_id is not None, request.node_id != -1
        if has_cluster != has_node:
            return ErrorCode.INVALID_REQUEST
        if has_cluster and (request.cluster_id != self.cluster_id() or request.node_id != self.node_id):
            return ErrorCode.REBOOTSTRAP_REQUIRED
        return None


__all__ = ["SOFTWARE_PATTERN", "ApiVersionsHandler"]
