"""The delegation-token APIs' gate and answers (Kafka 4.4's KafkaApis): which connections may ask, ACLs on
USER and DELEGATION_TOKEN resources, the refusals' fields; and a token-authenticated SASL session."""

from __future__ import annotations

from tidelog.cluster.credential_store import EmbeddedCredentialStore
from tidelog.cluster.token_store import EmbeddedTokenStore
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    ApiKey,
    CreateDelegationTokenRequest,
    DescribeDelegationTokenRequest,
    ExpireDelegationTokenRequest,
    RenewDelegationTokenRequest,
)
from tidelog.protocol.messages.header import RequestHeader
from tidelog.security.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from tidelog.security.authorizer import Authorizer
from tidelog.security.delegation_token import DelegationTokenManager, TokenSettings
from tidelog.security.principal import ANONYMOUS, KafkaPrincipal
from tidelog.security.sasl_client import ScramClient
from tidelog.server.authenticator import SaslAuthenticator, SaslSettings
from tidelog.server.context import RequestContext
from tidelog.server.handlers.delegation_tokens import DelegationTokenHandlers
from tidelog.testing import ManualClock

ALICE, BOB = KafkaPrincipal("User", "alice"), KafkaPrincipal("User", "bob")
Renewer = CreateDelegationTokenRequest.CreatableRenewers
Owner = DescribeDelegationTokenRequest.DescribeDelegationTokenOwner


def _ctx(principal=ALICE, protocol="SASL_PLAINTEXT") -> RequestContext:
    header = RequestHeader(request_api_key=ApiKey.CREATE_DELEGATION_TOKEN, request_api_version=3, correlation_id=1,
                           client_id="t")
    return RequestContext(header, "c1", "127.0.0.1", principal=principal, security_protocol=protocol)


def _handlers(tmp_path, secret="s3cret", acls=()):
    clock = ManualClock()
    tokens = DelegationTokenManager(TokenSettings(secret), EmbeddedTokenStore(tmp_path), clock)
    authorizer = Authorizer(lambda: frozenset(acls), (), False)
    return DelegationTokenHandlers(tokens, authorizer), tokens, clock


def _create(owner: str | None = None, renewers=()) -> CreateDelegationTokenRequest:
    return CreateDelegationTokenRequest(owner_principal_type="User" if owner else None, owner_principal_name=owner,
                                        renewers=[Renewer(principal_type=t, principal_name=n) for t, n in renewers],
                                        max_lifetime_ms=-1)


def test_token_requests_are_refused_in_clear_text_over_one_way_tls_and_over_a_token(tmp_path):
    handlers, _, _ = _handlers(tmp_path)
    token_principal = KafkaPrincipal("User", "alice", token_authenticated=True)
    for ctx in (_ctx(protocol="PLAINTEXT"), _ctx(ANONYMOUS, "SSL"), _ctx(token_principal)):
        created = handlers.create(ctx, _create())
        assert created.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert (created.issue_timestamp_ms, created.token_id, created.hmac) == (-1, "", b"")
        assert (created.principal_name, created.token_requester_principal_name) == (ctx.principal.name,) * 2
        assert handlers.renew(ctx, RenewDelegationTokenRequest(hmac=b"h", renew_period_ms=-1)).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert handlers.expire(ctx, ExpireDelegationTokenRequest(hmac=b"h", expiry_time_period_ms=-1)).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert handlers.describe(ctx, DescribeDelegationTokenRequest(owners=None)).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    # two-way TLS (a certificate's principal) may
    assert handlers.create(_ctx(KafkaPrincipal("User", "CN=app"), "SSL"), _create()).error_code == 0


def test_disabled_tokens_answer_auth_disabled(tmp_path):
    handlers, _, _ = _handlers(tmp_path, secret=None)
    created = handlers.create(_ctx(), _create())
    assert created.error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED and created.expiry_timestamp_ms == 0
    described = handlers.describe(_ctx(), DescribeDelegationTokenRequest(owners=None))
    assert described.error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


def _acl(principal: str, operation: AclOperation, resource_type: ResourceType, name: str) -> AclBinding:
    return AclBinding(resource_type, name, PatternType.LITERAL, principal, "*", operation, AclPermissionType.ALLOW)


def test_creating_for_another_owner_needs_create_tokens_on_that_user(tmp_path):
    handlers, _, _ = _handlers(tmp_path, acls=[_acl("User:bob", AclOperation.CREATE_TOKENS, ResourceType.USER,
                                                    "User:carol")])
    refused = handlers.create(_ctx(BOB), _create("alice"))
    assert refused.error_code == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    assert (refused.principal_name, refused.token_requester_principal_name) == ("alice", "bob")
    created = handlers.create(_ctx(BOB), _create("carol", [("User", "alice")]))
    assert created.error_code == 0 and created.principal_name == "carol" and created.token_requester_principal_name == "bob"
    assert len(created.hmac) == 64 and created.expiry_timestamp_ms > created.issue_timestamp_ms
    bad = handlers.create(_ctx(), _create(renewers=[("Group", "g")]))
    assert bad.error_code == ErrorCode.INVALID_PRINCIPAL_TYPE and bad.issue_timestamp_ms == -1


def test_describe_shows_owned_renewable_and_permitted_tokens(tmp_path):
    acls = [_acl("User:carol", AclOperation.DESCRIBE_TOKENS, ResourceType.USER, "User:alice")]
    handlers, _, _ = _handlers(tmp_path, acls=acls)
    created = handlers.create(_ctx(), _create(renewers=[("User", "bob")]))
    for who, expected in ((ALICE, 1), (BOB, 1), (KafkaPrincipal("User", "carol"), 1),
                          (KafkaPrincipal("User", "dave"), 0)):
        answer = handlers.describe(_ctx(who), DescribeDelegationTokenRequest(owners=None))
        assert answer.error_code == 0 and len(answer.tokens) == expected, who
    [token] = handlers.describe(_ctx(), DescribeDelegationTokenRequest(owners=[Owner(principal_type="User",
                                                                                  principal_name="alice")])).tokens
    assert (token.token_id, token.hmac, token.principal_name) == (created.token_id, created.hmac, "alice")
    assert [(r.principal_type, r.principal_name) for r in token.renewers] == [("User", "bob")]
    assert handlers.describe(_ctx(), DescribeDelegationTokenRequest(owners=[])).tokens == []


def test_renew_and_expire_through_the_handlers(tmp_path):
    handlers, tokens, clock = _handlers(tmp_path)
    created = handlers.create(_ctx(), _create(renewers=[("User", "bob")]))
    renewed = handlers.renew(_ctx(BOB), RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=1000))
    assert (renewed.error_code, renewed.expiry_timestamp_ms) == (0, clock.wall_ms() + 1000)
    missing = handlers.renew(_ctx(), RenewDelegationTokenRequest(hmac=b"nope", renew_period_ms=-1))
    assert (missing.error_code, missing.expiry_timestamp_ms) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)
    expired = handlers.expire(_ctx(), ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1))
    assert (expired.error_code, expired.expiry_timestamp_ms) == (0, clock.wall_ms())
    assert tokens.store.tokens() == {}


def test_a_token_session_is_its_owner_marked_token_authenticated_and_ends_with_the_token(tmp_path):
    clock = ManualClock()
    tokens = DelegationTokenManager(TokenSettings("s3cret", expiry_time_ms=5000), EmbeddedTokenStore(tmp_path), clock)
    token = tokens.create(ALICE, ALICE, [], -1).token
    assert token is not None
    auth = SaslAuthenticator(SaslSettings(("SCRAM-SHA-256",), EmbeddedCredentialStore(tmp_path), 60_000,
                                          tokens=tokens), clock)
    assert auth.handshake(1, "SCRAM-SHA-256") == ErrorCode.NONE
    client = ScramClient("SCRAM-SHA-256", token.info.token_id, token.hmac_base64, tokenauth=True)
    reply, lifetime = b"", 0
    while (message := client.step(reply)) is not None:
        code, error, reply, lifetime = auth.authenticate(2, message)
        assert code == ErrorCode.NONE, error
    assert auth.principal == ALICE and auth.principal.token_authenticated
    assert lifetime == 5000  # the token expires before connections.max.reauth.ms
    clock.advance(5000)
    assert "expired" in auth.refusal(ApiKey.METADATA)
    # an expired token no longer authenticates
    clock.advance(1)
    again = SaslAuthenticator(SaslSettings(("SCRAM-SHA-256",), EmbeddedCredentialStore(tmp_path), tokens=tokens),
                              clock)
    again.handshake(1, "SCRAM-SHA-256")
    client = ScramClient("SCRAM-SHA-256", token.info.token_id, token.hmac_base64, tokenauth=True)
    first = auth_reply = again.authenticate(2, client.step(b""))
    assert first[0] == ErrorCode.NONE
    final = again.authenticate(2, client.step(auth_reply[2]))
    assert final[0] == ErrorCode.SASL_AUTHENTICATION_FAILED and again.principal is None
