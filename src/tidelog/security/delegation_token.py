"""Delegation tokens (KIP-48), as Kafka 4.4 has them: what a token is, its HMAC, and the rules of
CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and DescribeDelegationToken.

A token is its :class:`TokenInformation` (id, owner, requester, renewers, issue / expiry / max
timestamps). Only that is stored (the metadata store, :mod:`tidelog.cluster.token_store`); its
**HMAC** is HMAC-SHA512 of the token id's UTF-8 bytes keyed with ``delegation.token.secret.key``'s
UTF-8 bytes (Kafka's ``DelegationTokenControlManager.createHmac``), so every broker with the same key
computes it. A client authenticates with SCRAM (either mechanism) as user = token id, password = the
HMAC in base64, and the ``tokenauth=true`` extension; the broker's SCRAM credential of a token is
derived from that password (4096 iterations, a salt of its own), and the session's principal is
the token's owner (``User:<owner name>``), marked token-authenticated.

The rules (Kafka's controller, checked in this order):

* create: disabled without a secret key (DELEGATION_TOKEN_AUTH_DISABLED); max lifetime = the
  request's when > 0, capped by ``delegation.token.max.lifetime.ms``; expiry = min(max timestamp,
  now + ``delegation.token.expiry.time.ms``); a renewer that is not a ``User`` -> INVALID_PRINCIPAL_TYPE;
* renew: unknown HMAC -> NOT_FOUND; past its expiry or max timestamp -> EXPIRED; neither owner nor
  renewer -> OWNER_MISMATCH; new expiry = min(max timestamp, now + min(default, requested when > 0));
* expire: NOT_FOUND; OWNER_MISMATCH; a negative period removes the token now (answering now);
  otherwise EXPIRED if already expired, else expiry = min(max timestamp, now + period);
* describe: owners null = every token, [] = none; a token is shown to its owner and renewers, and to
  whoever has DESCRIBE on the token (DELEGATION_TOKEN resource) or DESCRIBE_TOKENS on its owner (USER).

Pure: no I/O; the manager (:class:`DelegationTokenManager`) reads and writes through a store it is given
and reads time from the clock it is given. Loop-only, not thread-safe.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

from tidelog.errors import ErrorCode
from tidelog.security.principal import USER_TYPE, KafkaPrincipal
from tidelog.security.scram import MECHANISMS, MIN_ITERATIONS, ScramCredential, credential_from_password

log = logging.getLogger(__name__)

#: Kafka's ErrorTimestamp: the timestamps of a refused request.
ERROR_TIMESTAMP = -1
_LONG_MAX = 2**63 - 1


def create_hmac(token_id: str, secret_key: str) -> bytes:
    """HMAC-SHA512(key = the secret key's UTF-8 bytes, message = the token id's UTF-8 bytes)."""
    return hmac.new(secret_key.encode("utf-8"), token_id.encode("utf-8"), hashlib.sha512).digest()


def new_token_id() -> str:
    """Kafka's ``Uuid.randomUuid().toString()``: 16 random bytes in URL-safe base64 without padding,
    never all zeros and never starting with ``-``."""
    while True:
        raw = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if any(raw) and not text.startswith("-"):
            return text


def _sum(now: int, duration: int) -> int:
    return _LONG_MAX if now > _LONG_MAX - duration else now + duration


@dataclass(frozen=True, slots=True)
class TokenInformation:
    """Kafka's ``TokenInformation`` (what is stored of a token). Immutable."""

    token_id: str
    owner: KafkaPrincipal
    token_requester: KafkaPrincipal
    renewers: tuple[KafkaPrincipal, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int

    def owner_or_renewer(self, principal: KafkaPrincipal) -> bool:
        return principal == self.owner or principal in self.renewers

    def expired(self, now: int) -> bool:
        return self.max_timestamp < now or self.expiry_timestamp < now


@dataclass(frozen=True, slots=True)
class DelegationToken:
    """A token with its HMAC (what Create and Describe answer)."""

    info: TokenInformation
    hmac: bytes

    @property
    def hmac_base64(self) -> str:
        return base64.b64encode(self.hmac).decode()


class WallClock(Protocol):
    """What the manager reads of a :class:`tidelog.clock.Clock` (not imported: tidelog.cluster, which
    stores tokens, imports this module and may not import asyncio)."""

    def wall_ms(self) -> int: ...


class TokenStore(Protocol):
    """Where tokens are kept (:mod:`tidelog.cluster.token_store`): every broker reads the same ones."""

    def tokens(self) -> dict[str, TokenInformation]: ...

    def put(self, token: TokenInformation) -> None: ...

    def remove(self, token_id: str) -> None: ...


@dataclass(frozen=True, slots=True)
class TokenSettings:
    """The broker's ``delegation.token.*`` configs."""

    secret_key: str | None
    max_lifetime_ms: int = 604_800_000
    expiry_time_ms: int = 86_400_000
    expiry_check_interval_ms: int = 3_600_000

    @property
    def enabled(self) -> bool:
        return bool(self.secret_key)

    @classmethod
    def from_config(cls, config) -> TokenSettings:
        return cls(config["delegation.token.secret.key"], config["delegation.token.max.lifetime.ms"],
                   config["delegation.token.expiry.time.ms"], config["delegation.token.expiry.check.interval.ms"])


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a create / renew / expire answers: an error, and the token's timestamps."""

    error: ErrorCode
    expiry_timestamp: int = 0
    token: DelegationToken | None = None


@dataclass(slots=True)
class _Credentials:
    """SCRAM credentials derived from one HMAC, per mechanism (PBKDF2 is slow: computed once)."""

    hmac_base64: str
    by_mechanism: dict[str, ScramCredential] = field(default_factory=dict)


class DelegationTokenManager:
    """Kafka's token manager over a :class:`TokenStore`: the four APIs' rules and the SCRAM lookups of
    token authentication. Loop-only, not thread-safe."""

    def __init__(self, settings: TokenSettings, store: TokenStore, clock: WallClock) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self._credentials: dict[str, _Credentials] = {}

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def hmac(self, token_id: str) -> bytes:
        assert self.settings.secret_key
        return create_hmac(token_id, self.settings.secret_key)

    def _by_hmac(self, given: bytes) -> TokenInformation | None:
        for info in self.store.tokens().values():
            if hmac.compare_digest(self.hmac(info.token_id), given):
                return info
        return None

    # ------------------------------------------------------------------------------- the APIs

    def create(self, owner: KafkaPrincipal, requester: KafkaPrincipal, renewers: Iterable[KafkaPrincipal],
               max_lifetime_ms: int) -> Outcome:
        if not self.enabled:
            return Outcome(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        now = self.clock.wall_ms()
        lifetime = self.settings.max_lifetime_ms
        if max_lifetime_ms > 0:
            lifetime = min(lifetime, max_lifetime_ms)
        max_timestamp = _sum(now, lifetime)
        expiry = min(max_timestamp, _sum(now, self.settings.expiry_time_ms))
        renewers = tuple(renewers)
        if any(r.principal_type != USER_TYPE for r in renewers):
            return Outcome(ErrorCode.INVALID_PRINCIPAL_TYPE)
        info = TokenInformation(new_token_id(), owner, requester, renewers, now, max_timestamp, expiry)
        self.store.put(info)
        log.info("Created a delegation token %s for owner %s", info.token_id, owner)
        return Outcome(ErrorCode.NONE, expiry, DelegationToken(info, self.hmac(info.token_id)))

    def renew(self, principal: KafkaPrincipal, given_hmac: bytes, renew_period_ms: int) -> Outcome:
        if not self.enabled:
            return Outcome(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        info = self._by_hmac(given_hmac)
        now = self.clock.wall_ms()
        if info is None:
            return Outcome(ErrorCode.DELEGATION_TOKEN_NOT_FOUND)
        if info.expired(now):
            return Outcome(ErrorCode.DELEGATION_TOKEN_EXPIRED)
        if not info.owner_or_renewer(principal):
            return Outcome(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        period = self.settings.expiry_time_ms
        if renew_period_ms > 0:
            period = min(period, renew_period_ms)
        expiry = min(info.max_timestamp, now + period)
        self.store.put(replace(info, expiry_timestamp=expiry))
        log.info("Delegation token %s renewed for owner %s", info.token_id, info.owner)
        return Outcome(ErrorCode.NONE, expiry)

    def expire(self, principal: KafkaPrincipal, given_hmac: bytes, expiry_period_ms: int) -> Outcome:
        if not self.enabled:
            return Outcome(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        info = self._by_hmac(given_hmac)
        now = self.clock.wall_ms()
        if info is None:
            return Outcome(ErrorCode.DELEGATION_TOKEN_NOT_FOUND)
        if not info.owner_or_renewer(principal):
            return Outcome(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        if expiry_period_ms < 0:
            self._remove(info.token_id)
            log.info("Delegation token %s expired (removed) for owner %s", info.token_id, info.owner)
            return Outcome(ErrorCode.NONE, now)
        if info.expired(now):
            return Outcome(ErrorCode.DELEGATION_TOKEN_EXPIRED)
        expiry = min(info.max_timestamp, _sum(now, expiry_period_ms))
        self.store.put(replace(info, expiry_timestamp=expiry))
        log.info("Delegation token %s now expires at %d (owner %s)", info.token_id, expiry, info.owner)
        return Outcome(ErrorCode.NONE, expiry)

    def describe(self, requester: KafkaPrincipal, owners: list[KafkaPrincipal] | None,
                 may_describe_token: Callable[[str], bool],
                 may_describe_owner: Callable[[KafkaPrincipal], bool]) -> list[DelegationToken]:
        """The tokens ``requester`` may see among those owned (or renewable) by ``owners`` (None: all)."""
        if owners is not None and not owners:
            return []
        out = []
        for info in self.store.tokens().values():
            if owners is not None and not any(info.owner_or_renewer(o) for o in owners):
                continue
            if (info.owner_or_renewer(requester) or may_describe_token(info.token_id)
                    or may_describe_owner(info.owner)):
                out.append(DelegationToken(info, self.hmac(info.token_id)))
        return out

    def sweep(self) -> list[str]:
        """Remove every token past its expiry or max timestamp (delegation.token.expiry.check.interval.ms)."""
        now = self.clock.wall_ms()
        gone = [info for info in self.store.tokens().values() if info.expired(now)]
        for info in gone:
            log.info("Delegation token expired for token: %s for owner: %s", info.token_id, info.owner)
            self._remove(info.token_id)
        return [info.token_id for info in gone]

    def _remove(self, token_id: str) -> None:
        self.store.remove(token_id)
        self._credentials.pop(token_id, None)

    # ----------------------------------------------------------------------- authentication

    def token(self, token_id: str) -> TokenInformation | None:
        if not self.enabled:
            return None
        return self.store.tokens().get(token_id)

    def credential(self, token_id: str, mechanism: str) -> ScramCredential | None:
        """The SCRAM credential a client authenticating as ``token_id`` must prove (None: no such token,
        or tokens are disabled). Kafka derives it from the HMAC in base64 with 4096 iterations."""
        if mechanism not in MECHANISMS or self.token(token_id) is None:
            return None
        password = base64.b64encode(self.hmac(token_id)).decode()
        cached = self._credentials.get(token_id)
        if cached is None or cached.hmac_base64 != password:
            cached = self._credentials[token_id] = _Credentials(password)
        if mechanism not in cached.by_mechanism:
            cached.by_mechanism[mechanism] = credential_from_password(mechanism, password, MIN_ITERATIONS)
        return cached.by_mechanism[mechanism]


__all__ = [
    "ERROR_TIMESTAMP",
    "DelegationToken",
    "DelegationTokenManager",
    "Outcome",
    "TokenInformation",
    "TokenSettings",
    "TokenStore",
    "create_hmac",
    "new_token_id",
]
