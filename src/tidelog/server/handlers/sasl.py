"""SaslHandshake and SaslAuthenticate: thin over the connection's
:class:`~tidelog.server.authenticator.SaslAuthenticator` (``ctx.authenticator``). On a listener without
SASL both answer ILLEGAL_SASL_STATE, as Kafka's request handler does."""

from __future__ import annotations

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    ApiKey,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles


class SaslHandlers:
    def __init__(self, mechanisms: tuple[str, ...]) -> None:
        self.mechanisms = mechanisms

    @handles(ApiKey.SASL_HANDSHAKE, 0, 1)
    def sasl_handshake(self, ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
        auth = ctx.authenticator
        if auth is None:
            return SaslHandshakeResponse(error_code=int(ErrorCode.ILLEGAL_SASL_STATE), mechanisms=[])
        code = auth.handshake(ctx.api_version, request.mechanism)
        return SaslHandshakeResponse(error_code=int(code), mechanisms=list(auth.settings.mechanisms))

    @handles(ApiKey.SASL_AUTHENTICATE, 0, 2)
    def sasl_authenticate(self, ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
        auth = ctx.authenticator
        if auth is None:
            return SaslAuthenticateResponse(error_code=int(ErrorCode.ILLEGAL_SASL_STATE),
                                            error_message="SaslAuthenticate on a listener without SASL")
        code, message, reply, lifetime = auth.authenticate(ctx.api_version, request.auth_bytes)
        return SaslAuthenticateResponse(error_code=int(code), error_message=message, auth_bytes=reply,
                                        session_lifetime_ms=lifetime)


__all__ = ["SaslHandlers"]
