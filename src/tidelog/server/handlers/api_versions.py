"""ApiVersions: the versions this broker serves, derived from the handler registry."""

from __future__ import annotations

from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import HandlerRegistry, handles


class ApiVersionsHandler:
    def __init__(self, registry: HandlerRegistry) -> None:
        self.registry = registry

    @handles(ApiKey.API_VERSIONS, 0, 4)
    def handle_api_versions(self, ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
        return ApiVersionsResponse(
            error_code=0,
            api_keys=[
                ApiVersionsResponse.ApiVersion(api_key=key, min_version=lo, max_version=hi)
                for key, lo, hi in self.registry.supported_versions()
            ],
            throttle_time_ms=0,
        )


__all__ = ["ApiVersionsHandler"]
