"""ApiVersions: the versions this broker serves, derived from the handler registry.

From v3 the client names its software (KIP-511); as in Kafka, a name or version that is not letters,
digits, dots and dashes, starting and ending with a letter or digit, gets INVALID_REQUEST and no
versions. From v5 (KIP-1242) a client may name the cluster and the node it means to reach (both or
neither, else INVALID_REQUEST); a broker of another cluster, or another node, answers
REBOOTSTRAP_REQUIRED and no versions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from tidelog.errors import ErrorCode
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import HandlerRegistry, handles

#: Kafka's rule for client_software_name and client_software_version (ApiVersionsRequest.isValid).
SOFTWARE_PATTERN = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?")

#: The epoch of the finalized features (Kafka: the metadata offset that set them). Tidelog's do not
#: change while a broker runs, so one epoch will do; it must be >= 0 for clients to read them.
FINALIZED_FEATURES_EPOCH = 1


class ApiVersionsHandler:
    """``features``: feature name -> (highest supported level, finalized level), sent from v3 on
    (KIP-584); the Java client reads ``transaction.version`` there to choose KIP-890's protocol.
    ``cluster_id()`` and ``node_id`` are this broker's, for v5's check."""

    def __init__(self, registry: HandlerRegistry, features: Mapping[str, tuple[int, int]] | None = None,
                 cluster_id: Callable[[], str | None] = lambda: None, node_id: int = -1,
                 on_client_software: Callable[[str, str, str], None] | None = None) -> None:
        self.registry = registry
        #: told (connection id, software name, version) of each valid v3+ request (client telemetry's match)
        self.on_client_software = on_client_software
        self.features = dict(features or {})
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
            # v3 leaves out features whose lowest supported level is 0 (ApiVersionsResponse.json).
            supported_features=[ApiVersionsResponse.SupportedFeatureKey(name=name, min_version=0, max_version=hi)
                                for name, (hi, _) in self.features.items() if ctx.api_version >= 4],
            finalized_features_epoch=FINALIZED_FEATURES_EPOCH if self.features else -1,
            finalized_features=[ApiVersionsResponse.FinalizedFeatureKey(name=name, min_version_level=level,
                                                                        max_version_level=level)
                                for name, (_, level) in self.features.items() if level > 0],
        )

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
