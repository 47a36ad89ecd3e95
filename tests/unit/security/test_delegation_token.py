"""Delegation tokens: Kafka's HMAC, the create / renew / expire / describe rules, expiry sweeps, the
token store's file (a restart reads it back), and SCRAM ``tokenauth`` against the manager."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from tidelog.cluster.token_store import EmbeddedTokenStore, token_from_json, token_to_json
from tidelog.errors import ErrorCode
from tidelog.security.delegation_token import (
    DelegationTokenManager,
    TokenInformation,
    TokenSettings,
    create_hmac,
    new_token_id,
)
from tidelog.security.principal import KafkaPrincipal
from tidelog.security.sasl_client import ScramClient
from tidelog.security.scram import AuthenticationError, ScramServer, TokenCredential
from tidelog.testing import ManualClock

ALICE, BOB, CAROL = KafkaPrincipal("User", "alice"), KafkaPrincipal("User", "bob"), KafkaPrincipal("User", "carol")
HOUR, DAY = 3_600_000, 86_400_000


def _manager(tmp_path, secret: str | None = "s3cret", max_lifetime_ms=7 * DAY, expiry_ms=DAY):
    clock = ManualClock()
    return DelegationTokenManager(TokenSettings(secret, max_lifetime_ms, expiry_ms), EmbeddedTokenStore(tmp_path),
                                  clock), clock


def test_hmac_is_hmac_sha512_of_the_token_id_keyed_with_the_secret():
    # Kafka: Mac.getInstance("HmacSHA512") over SecretKeySpec(secret.getBytes(UTF_8)), doFinal(tokenId UTF-8)
    expected = hmac.new(b"key\xc3\xa9", "t\xefd".encode(), hashlib.sha512).digest()
    assert create_hmac("t\xefd", "key\xe9") == expected and len(expected) == 64


def test_token_ids_are_kafka_uuids():
    ids = {new_token_id() for _ in range(200)}
    assert len(ids) == 200
    for token_id in ids:
        assert len(token_id) == 22 and not token_id.startswith("-")
        assert len(base64.urlsafe_b64decode(token_id + "==")) == 16


def test_create_timestamps_follow_the_configs_and_the_request(tmp_path):
    tokens, clock = _manager(tmp_path)
    now = clock.wall_ms()
    outcome = tokens.create(ALICE, BOB, [CAROL], -1)
    assert outcome.error == ErrorCode.NONE and outcome.token is not None
    info = outcome.token.info
    assert (info.issue_timestamp, info.expiry_timestamp, info.max_timestamp) == (now, now + DAY, now + 7 * DAY)
    assert (info.owner, info.token_requester, info.renewers) == (ALICE, BOB, (CAROL,))
    assert outcome.token.hmac == create_hmac(info.token_id, "s3cret")
    # a shorter max lifetime than the expiry time caps the expiry; a longer one than the config is capped
    short = tokens.create(ALICE, ALICE, [], HOUR).token
    assert short is not None and short.info.expiry_timestamp == short.info.max_timestamp == now + HOUR
    long = tokens.create(ALICE, ALICE, [], 30 * DAY).token
    assert long is not None and long.info.max_timestamp == now + 7 * DAY


def test_disabled_without_a_secret_key(tmp_path):
    tokens, _ = _manager(tmp_path, secret=None)
    assert not tokens.enabled
    assert tokens.create(ALICE, ALICE, [], -1).error == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert tokens.renew(ALICE, b"x", -1).error == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert tokens.expire(ALICE, b"x", -1).error == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert tokens.credential("anything", "SCRAM-SHA-256") is None


def test_a_renewer_must_be_a_user(tmp_path):
    tokens, _ = _manager(tmp_path)
    outcome = tokens.create(ALICE, ALICE, [KafkaPrincipal("Group", "g")], -1)
    assert outcome.error == ErrorCode.INVALID_PRINCIPAL_TYPE and tokens.store.tokens() == {}


def test_renew_rules_in_kafkas_order(tmp_path):
    tokens, clock = _manager(tmp_path)
    token = tokens.create(ALICE, ALICE, [BOB], 3 * DAY).token
    assert token is not None
    assert tokens.renew(ALICE, b"not a token", -1).error == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    assert tokens.renew(CAROL, token.hmac, -1).error == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    clock.advance(HOUR)
    renewed = tokens.renew(BOB, token.hmac, HOUR)  # a renewer may; the period is min(requested, default)
    assert (renewed.error, renewed.expiry_timestamp) == (ErrorCode.NONE, clock.wall_ms() + HOUR)
    assert tokens.renew(ALICE, token.hmac, 10 * DAY).expiry_timestamp == clock.wall_ms() + DAY
    assert tokens.store.tokens()[token.info.token_id].expiry_timestamp == clock.wall_ms() + DAY
    clock.advance(DAY)  # at its expiry timestamp it is still valid (expired: past it)
    assert tokens.renew(ALICE, token.hmac, -1).expiry_timestamp == clock.wall_ms() + DAY
    clock.advance(DAY)
    assert tokens.renew(ALICE, token.hmac, -1).expiry_timestamp == token.info.max_timestamp  # never past it
    clock.advance(DAY + 1)
    # past its max timestamp: EXPIRED before OWNER_MISMATCH
    assert tokens.renew(CAROL, token.hmac, -1).error == ErrorCode.DELEGATION_TOKEN_EXPIRED


def test_expire_rules(tmp_path):
    tokens, clock = _manager(tmp_path)
    token = tokens.create(ALICE, ALICE, [BOB], -1).token
    assert token is not None
    assert tokens.expire(CAROL, token.hmac, -1).error == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    later = tokens.expire(BOB, token.hmac, HOUR)
    assert (later.error, later.expiry_timestamp) == (ErrorCode.NONE, clock.wall_ms() + HOUR)
    clock.advance(HOUR + 1)
    assert tokens.expire(ALICE, token.hmac, HOUR).error == ErrorCode.DELEGATION_TOKEN_EXPIRED
    now = tokens.expire(ALICE, token.hmac, -1)  # a negative period removes it, even when expired
    assert (now.error, now.expiry_timestamp) == (ErrorCode.NONE, clock.wall_ms())
    assert tokens.store.tokens() == {}
    assert tokens.expire(ALICE, token.hmac, -1).error == ErrorCode.DELEGATION_TOKEN_NOT_FOUND


def test_describe_filters_by_owner_and_permission(tmp_path):
    tokens, _ = _manager(tmp_path)
    a = tokens.create(ALICE, ALICE, [BOB], -1).token
    c = tokens.create(CAROL, CAROL, [], -1).token
    assert a is not None and c is not None

    def ids(requester, owners, token_ok=lambda _t: False, owner_ok=lambda _o: False):
        return {t.info.token_id for t in tokens.describe(requester, owners, token_ok, owner_ok)}

    assert ids(ALICE, None) == {a.info.token_id}
    assert ids(BOB, None) == {a.info.token_id}  # a renewer sees it
    assert ids(BOB, [CAROL]) == set()
    assert ids(BOB, [], owner_ok=lambda _o: True) == set()  # an empty owner list: none
    assert ids(BOB, None, owner_ok=lambda o: o == CAROL) == {a.info.token_id, c.info.token_id}
    assert ids(BOB, [CAROL], token_ok=lambda t: t == c.info.token_id) == {c.info.token_id}
    described = tokens.describe(ALICE, [ALICE], lambda _t: False, lambda _o: False)
    assert [t.hmac for t in described] == [a.hmac]


def test_sweep_removes_expired_tokens_and_a_restart_reads_the_rest(tmp_path):
    tokens, clock = _manager(tmp_path)
    short = tokens.create(ALICE, ALICE, [], HOUR).token
    kept = tokens.create(ALICE, BOB, [CAROL], -1).token
    assert short is not None and kept is not None
    clock.advance(HOUR + 1)
    assert tokens.sweep() == [short.info.token_id]
    again = DelegationTokenManager(TokenSettings("s3cret"), EmbeddedTokenStore(tmp_path), clock)
    assert again.store.tokens() == {kept.info.token_id: kept.info}
    assert again.renew(ALICE, kept.hmac, -1).error == ErrorCode.NONE  # the HMAC is recomputed, not stored
    stored = (tmp_path / "tidelog-delegation-tokens.json").read_text()
    assert base64.b64encode(kept.hmac).decode() not in stored and "s3cret" not in stored


def test_kafkas_zookeeper_json_round_trips():
    info = TokenInformation("Tl3TrGdoQbygAQgSMdA8Kw", KafkaPrincipal("User", "al:ice"), BOB, (CAROL,), 1, 3, 2)
    raw = token_to_json(info)
    assert raw == {"version": 3, "owner": "User%3Aal%3Aice", "tokenRequester": "User%3Abob",
                   "renewers": ["User%3Acarol"], "issueTimestamp": 1, "maxTimestamp": 3, "expiryTimestamp": 2,
                   "tokenId": "Tl3TrGdoQbygAQgSMdA8Kw"}
    assert token_from_json(json.loads(json.dumps(raw))) == info
    old = {k: v for k, v in raw.items() if k != "tokenRequester"} | {"version": 2}
    assert token_from_json(old).token_requester == info.owner  # before version 3: the owner


# ------------------------------------------------------------------------- SCRAM tokenauth


def _exchange(server: ScramServer, client: ScramClient) -> None:
    reply = b""
    while (message := client.step(reply)) is not None:
        reply = server.step(message)


def _token_server(tokens: DelegationTokenManager, mechanism: str) -> ScramServer:
    def lookup(token_id: str) -> TokenCredential | None:
        info, credential = tokens.token(token_id), tokens.credential(token_id, mechanism)
        return TokenCredential(credential, info.owner.name, info.expiry_timestamp) if info and credential else None

    return ScramServer(mechanism, lambda _user: None, b"s" * 32, token_lookup=lookup)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_tokenauth_authenticates_as_the_owner(tmp_path, mechanism):
    tokens, _ = _manager(tmp_path)
    token = tokens.create(ALICE, BOB, [], -1).token
    assert token is not None
    server = _token_server(tokens, mechanism)
    _exchange(server, ScramClient(mechanism, token.info.token_id, token.hmac_base64, tokenauth=True))
    assert server.complete and server.user == "alice" and server.token_authenticated
    assert server.token_expiry_ms == token.info.expiry_timestamp


def test_tokenauth_with_a_wrong_hmac_or_unknown_token_fails_at_the_proof(tmp_path):
    tokens, _ = _manager(tmp_path)
    token = tokens.create(ALICE, ALICE, [], -1).token
    assert token is not None
    for user, password in [(token.info.token_id, "wrong"), ("no-such-token", token.hmac_base64)]:
        server = _token_server(tokens, "SCRAM-SHA-256")
        with pytest.raises(AuthenticationError, match="invalid credentials"):
            _exchange(server, ScramClient("SCRAM-SHA-256", user, password, tokenauth=True))
        assert not server.complete


def test_without_tokenauth_a_token_is_not_a_user(tmp_path):
    tokens, _ = _manager(tmp_path)
    token = tokens.create(ALICE, ALICE, [], -1).token
    assert token is not None
    server = _token_server(tokens, "SCRAM-SHA-256")
    with pytest.raises(AuthenticationError):
        _exchange(server, ScramClient("SCRAM-SHA-256", token.info.token_id, token.hmac_base64))


def test_tokenauth_without_tokens_fails_like_a_wrong_password():
    server = ScramServer("SCRAM-SHA-256", lambda _user: None, b"s" * 32)
    with pytest.raises(AuthenticationError, match="invalid credentials"):
        _exchange(server, ScramClient("SCRAM-SHA-256", "tid", "hmac", tokenauth=True))
