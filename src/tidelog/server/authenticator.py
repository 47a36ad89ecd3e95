"""The SASL side of a connection (Kafka's ``SaslServerAuthenticator``), sans-IO, one per connection on a
SASL_PLAINTEXT or SASL_SSL listener.

The states, as Kafka's:

* ``handshake``: ApiVersions and SaslHandshake are answered; anything else closes the connection;
* after SaslHandshake v1: ``authenticate``: SaslAuthenticate requests carry the mechanism's tokens;
* after SaslHandshake v0 (old clients): ``raw``: the next frames are bare SASL tokens without a
  request header, answered by bare tokens (:meth:`raw_token`);
* ``authenticated``: every API; a new SaslHandshake (v1) starts a re-authentication (KIP-368). When
  ``connections.max.reauth.ms`` is set, SaslAuthenticate v1+ tells the client how long its session
  lasts, and once it has expired any request but a re-authentication closes the connection.

A failed authentication answers with SASL_AUTHENTICATION_FAILED and Kafka's message, then the
connection is closed once the answer has left (:attr:`close_reason`). Loop-only, not thread-safe.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from tidelog.clock import Clock
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import ApiKey
from tidelog.security.plain import PlainServer
from tidelog.security.principal import USER_TYPE, KafkaPrincipal
from tidelog.security.scram import MECHANISMS, AuthenticationError, ScramServer, TokenCredential

#: What a client may send before it has authenticated.
PRE_AUTH_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


@dataclass(frozen=True, slots=True)
class SaslSettings:
    """A SASL listener's settings and the credential store its mechanisms check against."""

    mechanisms: tuple[str, ...]
    credentials: object  # a tidelog.cluster.credential_store.CredentialStore
    reauth_ms: int = 0
    max_receive_size: int = 524_288
    #: PLAIN users of the listener's JAAS entry (``user_<name>="<password>"``): user -> password.
    plain_users: dict[str, str] = field(default_factory=dict)
    #: Seeds the made-up salts shown to unknown users (stable for the broker's lifetime).
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    #: Delegation tokens (a tidelog.security.delegation_token.DelegationTokenManager), for SCRAM's
    #: ``tokenauth=true``; None: no token authenticates.
    tokens: object = None


class SaslAuthenticator:
    def __init__(self, settings: SaslSettings, clock: Clock) -> None:
        self.settings = settings
        self.clock = clock
        self.state = "handshake"
        self.principal: KafkaPrincipal | None = None
        self.mechanism: str | None = None
        self.session_expiry_ms: int | None = None
        self.close_reason: str | None = None
        self._server: ScramServer | PlainServer | None = None
        self._reauthenticating = False
        self._session_lifetime_ms = 0

    @property
    def authenticated(self) -> bool:
        return self.principal is not None

    @property
    def raw(self) -> bool:
        return self.state == "raw"

    # ------------------------------------------------------------------------------- the gate

    def refusal(self, api_key: int) -> str | None:
        """Why a request with ``api_key`` must close the connection now (None: it may be handled)."""
        if not self.authenticated:
            if api_key not in PRE_AUTH_APIS:
                return f"unexpected request (API key {api_key}) before SASL authentication"
            return None
        if self.session_expired() and api_key not in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            return "SASL session expired (connections.max.reauth.ms) and the client did not re-authenticate"
        return None

    def session_expired(self) -> bool:
        return self.session_expiry_ms is not None and self.clock.monotonic_ms() >= self.session_expiry_ms

    # ---------------------------------------------------------------------------- the requests

    def handshake(self, version: int, mechanism: str) -> ErrorCode:
        if self.state not in ("handshake", "authenticated"):
            self.close_reason = "SaslHandshake out of order"
            return ErrorCode.ILLEGAL_SASL_STATE
        if self.authenticated and version < 1:
            self.close_reason = "re-authentication needs SaslHandshake v1"
            return ErrorCode.ILLEGAL_SASL_STATE
        if mechanism not in self.settings.mechanisms:
            self.close_reason = f"unsupported SASL mechanism {mechanism!r}"
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        if self.authenticated and mechanism != self.mechanism:
            self.close_reason = "re-authentication with another SASL mechanism"
            return ErrorCode.ILLEGAL_SASL_STATE
        self._reauthenticating = self.authenticated
        self.mechanism = mechanism
        self._server = self._new_server(mechanism)
        self.state = "authenticate" if version >= 1 else "raw"
        return ErrorCode.NONE

    def authenticate(self, version: int, token: bytes) -> tuple[ErrorCode, str | None, bytes, int]:
        """(error code, error message, reply token, session lifetime ms) for one SaslAuthenticate."""
        if self.state != "authenticate" or self._server is None:
            self.close_reason = "SaslAuthenticate before SaslHandshake"
            return ErrorCode.ILLEGAL_SASL_STATE, "Unexpected SaslAuthenticate request: send SaslHandshake first", b"", 0
        try:
            reply = self._step(token)
        except AuthenticationError as e:
            detail = f" ({e.detail})" if e.detail else ""
            self.close_reason = f"failed authentication ({self.mechanism}): {e}{detail}"
            return ErrorCode.SASL_AUTHENTICATION_FAILED, str(e), b"", 0
        lifetime = 0
        if self.state == "authenticated" and version >= 1 and self.session_expiry_ms is not None:
            lifetime = self._session_lifetime_ms
        return ErrorCode.NONE, None, reply, lifetime

    def raw_token(self, token: bytes) -> bytes:
        """A bare token after SaslHandshake v0. Raises AuthenticationError (the caller closes)."""
        return self._step(token)

    # ------------------------------------------------------------------------------- internals

    def _new_server(self, mechanism: str) -> ScramServer | PlainServer:
        creds = self.settings.credentials
        if mechanism == "PLAIN":
            return PlainServer(creds.get, self.settings.plain_users)  # type: ignore[attr-defined]
        assert mechanism in MECHANISMS
        return ScramServer(mechanism, lambda user: creds.get(user, mechanism), self.settings.secret,  # type: ignore[attr-defined]
                           token_lookup=lambda token_id: self._token_credential(token_id, mechanism))

    def _token_credential(self, token_id: str, mechanism: str) -> TokenCredential | None:
        """A delegation token's SCRAM credential, owner and expiry (None: no such token, or expired)."""
        tokens = self.settings.tokens
        info = tokens.token(token_id) if tokens is not None else None  # type: ignore[attr-defined]
        if info is None or info.expired(self.clock.wall_ms()):
            return None
        credential = tokens.credential(token_id, mechanism)  # type: ignore[attr-defined]
        return TokenCredential(credential, info.owner.name, info.expiry_timestamp) if credential else None

    def _step(self, token: bytes) -> bytes:
        server = self._server
        assert server is not None
        reply = server.step(token)
        if server.complete:
            assert server.user is not None
            # a delegation token's session (SCRAM tokenauth): its principal is the token's owner
            token_expiry = server.token_expiry_ms if isinstance(server, ScramServer) else None
            principal = KafkaPrincipal(USER_TYPE, server.user, token_authenticated=token_expiry is not None)
            if self._reauthenticating and principal != self.principal:
                raise AuthenticationError(f"Cannot change principals during re-authentication from "
                                          f"{self.principal}: {principal}")
            self.principal = principal
            self.state = "authenticated"
            self._server = None
            self._reauthenticating = False
            reauth = self.settings.reauth_ms
            if reauth > 0 and token_expiry is not None:  # it ends with the token (Kafka's CREDENTIAL.LIFETIME.MS)
                reauth = max(1, min(reauth, token_expiry - self.clock.wall_ms()))
            self._session_lifetime_ms = reauth
            self.session_expiry_ms = self.clock.monotonic_ms() + reauth if reauth > 0 else None
        return reply

__all__ = ["PRE_AUTH_APIS", "SaslAuthenticator", "SaslSettings"]
