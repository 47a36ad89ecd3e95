"""CreateDelegationToken (38), RenewDelegationToken (39), ExpireDelegationToken (40) and
DescribeDelegationToken (41), over the token manager (:mod:`tidelog.security.delegation_token`).

What the broker checks before the manager, as Kafka 4.4's ``KafkaApis`` does:

* token requests are refused (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) on a connection authenticated with
  a delegation token, on PLAINTEXT listeners, and on SSL connections without a client certificate;
* creating a token for another owner needs CREATE_TOKENS on that owner (USER resource ``User:name``),
  else DELEGATION_TOKEN_AUTHORIZATION_FAILED; a renewer that is not a ``User`` is INVALID_PRINCIPAL_TYPE;
  refused requests answer the owner and requester with -1 timestamps, an empty id and HMAC;
* describe: disabled tokens answer DELEGATION_TOKEN_AUTH_DISABLED (the others answer it from the manager).
"""

from __future__ import annotations

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    ApiKey,
    CreateDelegationTokenRequest,
    CreateDelegationTokenResponse,
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse,
    ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse,
    RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
)
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.security.delegation_token import ERROR_TIMESTAMP, DelegationTokenManager
from tidelog.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

Described = DescribeDelegationTokenResponse.DescribedDelegationToken
Renewer = DescribeDelegationTokenResponse.DescribedDelegationTokenRenewer


def token_requests_allowed(ctx: RequestContext) -> bool:
    """Kafka's ``allowTokenRequests``: not over a token, not in clear text, not over one-way TLS."""
    protocol = ctx.security_protocol
    return not (ctx.principal.token_authenticated or protocol == "PLAINTEXT"
                or (protocol == "SSL" and ctx.principal == ANONYMOUS))


def _create_error(request: CreateDelegationTokenRequest, code: ErrorCode, _message: str | None = None,
                  owner: KafkaPrincipal = ANONYMOUS, requester: KafkaPrincipal | None = None,
                  timestamp: int = ERROR_TIMESTAMP) -> CreateDelegationTokenResponse:
    """``requester``: only from v3 (None: the fields keep their defaults, as Kafka leaves them before v3)."""
    return CreateDelegationTokenResponse(
        error_code=int(code), principal_type=owner.principal_type, principal_name=owner.name,
        token_requester_principal_type=requester.principal_type if requester else "",
        token_requester_principal_name=requester.name if requester else "",
        issue_timestamp_ms=timestamp, expiry_timestamp_ms=timestamp, max_timestamp_ms=timestamp, token_id="",
        hmac=b"", throttle_time_ms=0)


def _renew_error(_request: object, code: ErrorCode, _message: str | None = None) -> RenewDelegationTokenResponse:
    return RenewDelegationTokenResponse(error_code=int(code), expiry_timestamp_ms=ERROR_TIMESTAMP, throttle_time_ms=0)


def _expire_error(_request: object, code: ErrorCode, _message: str | None = None) -> ExpireDelegationTokenResponse:
    return ExpireDelegationTokenResponse(error_code=int(code), expiry_timestamp_ms=ERROR_TIMESTAMP, throttle_time_ms=0)


def _describe_error(_request: object, code: ErrorCode, _message: str | None = None) -> DescribeDelegationTokenResponse:
    return DescribeDelegationTokenResponse(error_code=int(code), tokens=[], throttle_time_ms=0)


class DelegationTokenHandlers:
    def __init__(self, tokens: DelegationTokenManager, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.tokens = tokens
        self.authorizer = authorizer

    @handles(ApiKey.CREATE_DELEGATION_TOKEN, 1, 3, _create_error)
    def create(self, ctx: RequestContext, request: CreateDelegationTokenRequest) -> CreateDelegationTokenResponse:
        requester = KafkaPrincipal(ctx.principal.principal_type, ctx.principal.name)  # without the token flag
        owner = requester
        if request.owner_principal_name:
            owner = KafkaPrincipal(request.owner_principal_type or USER_TYPE, request.owner_principal_name)
        renewers = [KafkaPrincipal(r.principal_type, r.principal_name) for r in request.renewers or []]
        shown = requester if ctx.api_version >= 3 else None  # the requester fields are v3+
        if not token_requests_allowed(ctx):
            return _create_error(request, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, None, owner, shown)
        if owner != requester and not self.authorizer.authorize(ctx, AclOperation.CREATE_TOKENS, ResourceType.USER,
                                                                  str(owner)):
            return _create_error(request, ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, None, owner, shown)
        if any(r.principal_type != USER_TYPE for r in renewers):
            return _create_error(request, ErrorCode.INVALID_PRINCIPAL_TYPE, None, owner, shown)
        outcome = self.tokens.create(owner, requester, renewers, request.max_lifetime_ms)
        if outcome.token is None:  # Kafka's controller answers its refusals with zero timestamps
            return _create_error(request, outcome.error, None, owner, shown, 0)
        info = outcome.token.info
        return CreateDelegationTokenResponse(
            error_code=0, principal_type=owner.principal_type, principal_name=owner.name,
            token_requester_principal_type=shown.principal_type if shown else "",
            token_requester_principal_name=shown.name if shown else "",
            issue_timestamp_ms=info.issue_timestamp, expiry_timestamp_ms=info.expiry_timestamp,
            max_timestamp_ms=info.max_timestamp, token_id=info.token_id, hmac=outcome.token.hmac, throttle_time_ms=0)

    @handles(ApiKey.RENEW_DELEGATION_TOKEN, 1, 2, _renew_error)
    def renew(self, ctx: RequestContext, request: RenewDelegationTokenRequest) -> RenewDelegationTokenResponse:
        if not token_requests_allowed(ctx):
            return _renew_error(request, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
        outcome = self.tokens.renew(ctx.principal, bytes(request.hmac), request.renew_period_ms)
        return RenewDelegationTokenResponse(error_code=int(outcome.error), expiry_timestamp_ms=outcome.expiry_timestamp,
                                            throttle_time_ms=0)

    @handles(ApiKey.EXPIRE_DELEGATION_TOKEN, 1, 2, _expire_error)
    def expire(self, ctx: RequestContext, request: ExpireDelegationTokenRequest) -> ExpireDelegationTokenResponse:
        if not token_requests_allowed(ctx):
            return _expire_error(request, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
        outcome = self.tokens.expire(ctx.principal, bytes(request.hmac), request.expiry_time_period_ms)
        return ExpireDelegationTokenResponse(error_code=int(outcome.error),
                                             expiry_timestamp_ms=outcome.expiry_timestamp, throttle_time_ms=0)

    @handles(ApiKey.DESCRIBE_DELEGATION_TOKEN, 1, 3, _describe_error)
    def describe(self, ctx: RequestContext,
                 request: DescribeDelegationTokenRequest) -> DescribeDelegationTokenResponse:
        if not token_requests_allowed(ctx):
            return _describe_error(request, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
        if not self.tokens.enabled:
            return _describe_error(request, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        owners = (None if request.owners is None
                  else [KafkaPrincipal(o.principal_type, o.principal_name) for o in request.owners])
        tokens = self.tokens.describe(
            ctx.principal, owners,
            lambda token_id: self.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN,
                                                       token_id),
            lambda owner: self.authorizer.authorize(ctx, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, str(owner)))
        return DescribeDelegationTokenResponse(error_code=0, tokens=[
            Described(principal_type=t.info.owner.principal_type, principal_name=t.info.owner.name,
                      token_requester_principal_type=t.info.token_requester.principal_type,
                      token_requester_principal_name=t.info.token_requester.name,
                      issue_timestamp=t.info.issue_timestamp, expiry_timestamp=t.info.expiry_timestamp,
                      max_timestamp=t.info.max_timestamp, token_id=t.info.token_id, hmac=t.hmac,
                      renewers=[Renewer(principal_type=r.principal_type, principal_name=r.name)
                                for r in t.info.renewers])
            for t in tokens], throttle_time_ms=0)


__all__ = ["DelegationTokenHandlers", "token_requests_allowed"]
