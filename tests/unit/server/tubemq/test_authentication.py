"""The TubeMQ master's authentication of register and heartbeat requests: signatures (made with the
vector-checked :func:`tube_signature`), the timestamp window, replays, and the tokens it hands out."""

from __future__ import annotations

import pytest

from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.security.tubemq_signature import tube_signature
from tidelog.server.tubemq.authentication import TIMESTAMP_WINDOW_MS, TOKEN_LIFETIME_MS, TubeAuthenticator

NOW = 1_764_020_000_000


@pytest.fixture
def secrets() -> dict[str, str]:
    return {"alice": "alice-secret"}


@pytest.fixture
def auth(secrets: dict[str, str]) -> TubeAuthenticator:
    return TubeAuthenticator(secrets.get, lambda: NOW)


def register(user: str = "alice", secret: str = "alice-secret", timestamp: int = NOW, nonce: int = 42,
             signature: str | None = None) -> master_pb.RegisterRequestP2M:
    info = master_pb.AuthenticateInfo(userName=user, timestamp=timestamp, nonce=nonce, othParams="",
                                      signature=signature if signature is not None
                                      else tube_signature(user, secret, timestamp, nonce))
    return master_pb.RegisterRequestP2M(clientId="c", topicList=["t"], brokerCheckSum=-1, hostName="h",
                                        authInfo=master_pb.MasterCertificateInfo(authInfo=info))


def refused(auth: TubeAuthenticator, request) -> str:
    with pytest.raises(TubeError) as e:
        auth.check_master(request)
    assert e.value.code == TubeErrorCode.CERTIFICATE_FAILURE == 415
    return e.value.message


def test_a_good_signature_gets_a_token_naming_the_user(auth: TubeAuthenticator) -> None:
    token = auth.check_master(register()).authAuthorizedToken
    assert token.startswith("alice:")
    assert auth.check_token(token) == "alice"
    heartbeat = master_pb.HeartRequestP2M(clientId="c", brokerCheckSum=-1, hostName="h",
                                          authInfo=master_pb.MasterCertificateInfo(authorizedToken=token))
    assert auth.check_master(heartbeat).authAuthorizedToken == token


@pytest.mark.parametrize(("request_", "text"), [
    (register(secret="wrong"), "userName or password is not correct"),
    (register(user="mallory", secret="alice-secret"), "userName or password is not correct"),
    (register(signature=""), "authInfo.signature is Blank"),
    (register(user=" "), "authInfo.userName is Blank"),
    (register(timestamp=NOW - TIMESTAMP_WINDOW_MS - 1), "timestamp out of effective period"),
    (register(timestamp=NOW + TIMESTAMP_WINDOW_MS + 1), "timestamp out of effective period"),
    (master_pb.RegisterRequestP2M(clientId="c", brokerCheckSum=-1, hostName="h"), "Server required MasterCertificateInfo"),
    (master_pb.RegisterRequestP2M(clientId="c", brokerCheckSum=-1, hostName="h",
                                  authInfo=master_pb.MasterCertificateInfo()), "AuthenticateInfo is null"),
])
def test_refusals_are_certificate_failures(auth: TubeAuthenticator, request_, text: str) -> None:
    assert text in refused(auth, request_)


def test_a_replayed_signature_is_refused(auth: TubeAuthenticator) -> None:
    auth.check_master(register(nonce=7))
    assert "replayed" in refused(auth, register(nonce=7))
    auth.check_master(register(nonce=8))


def test_tokens_survive_a_restart_but_not_expiry_a_new_secret_or_forgery(secrets: dict[str, str]) -> None:
    clock = [NOW]
    auth = TubeAuthenticator(secrets.get, lambda: clock[0])
    token = auth.check_master(register()).authAuthorizedToken
    user, expiry, mac = token.split(":")
    assert (user, int(expiry)) == ("alice", NOW + TOKEN_LIFETIME_MS)
    restarted = TubeAuthenticator(secrets.get, lambda: clock[0])
    assert restarted.check_token(token) == "alice"
    secrets["bob"] = "bob-secret"
    for forged in (f"alice:{expiry}:{mac[::-1]}", f"bob:{expiry}:{mac}", f"alice:{int(expiry) + 1}:{mac}",
                   f"alice:x:{mac}", "alice", "", ":::"):
        with pytest.raises(TubeError, match="authorized token is not valid"):
            auth.check_token(forged)
    clock[0] = NOW + TOKEN_LIFETIME_MS + 1
    with pytest.raises(TubeError, match="authorized token is not valid"):
        auth.check_token(token)
    clock[0] = NOW
    secrets["alice"] = "a-new-secret"
    with pytest.raises(TubeError, match="authorized token is not valid"):
        auth.check_token(token)
    del secrets["alice"]
    with pytest.raises(TubeError, match="authorized token is not valid"):
        auth.check_token(token)
