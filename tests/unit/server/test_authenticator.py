"""The SASL state machine of a connection: what may be sent when, failures, re-authentication (KIP-368)."""

from __future__ import annotations

from tidelog.cluster.credential_store import EmbeddedCredentialStore
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import ApiKey
from tidelog.security.principal import KafkaPrincipal
from tidelog.security.scram import credential_from_password
from tidelog.server.authenticator import SaslAuthenticator, SaslSettings
from tidelog.testing import ManualClock


def _auth(tmp_path, reauth_ms=0, mechanisms=("PLAIN", "SCRAM-SHA-256")):
    store = EmbeddedCredentialStore(tmp_path)
    store.alter([("alice", "SCRAM-SHA-256", credential_from_password("SCRAM-SHA-256", "pw")),
                 ("bob", "SCRAM-SHA-256", credential_from_password("SCRAM-SHA-256", "pw2"))], [])
    clock = ManualClock()
    return SaslAuthenticator(SaslSettings(mechanisms, store, reauth_ms), clock), clock


def test_only_versions_and_sasl_before_authentication(tmp_path):
    auth, _ = _auth(tmp_path)
    assert auth.refusal(ApiKey.API_VERSIONS) is None
    assert auth.refusal(ApiKey.SASL_HANDSHAKE) is None
    assert "before SASL authentication" in auth.refusal(ApiKey.METADATA)
    assert auth.refusal(ApiKey.PRODUCE) is not None


def test_authenticate_before_handshake_is_illegal_and_closes(tmp_path):
    auth, _ = _auth(tmp_path)
    code, _, _, _ = auth.authenticate(1, b"\x00alice\x00pw")
    assert code == ErrorCode.ILLEGAL_SASL_STATE and auth.close_reason


def test_unsupported_mechanism_is_refused(tmp_path):
    auth, _ = _auth(tmp_path)
    assert auth.handshake(1, "GSSAPI") == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert auth.close_reason is not None


def test_plain_success_sets_the_principal_and_session_lifetime(tmp_path):
    auth, clock = _auth(tmp_path, reauth_ms=1000)
    assert auth.handshake(1, "PLAIN") == ErrorCode.NONE
    code, message, _, lifetime = auth.authenticate(2, b"\x00alice\x00pw")
    assert (code, message, lifetime) == (ErrorCode.NONE, None, 1000)
    assert auth.principal == KafkaPrincipal("User", "alice")
    assert auth.refusal(ApiKey.METADATA) is None
    clock.advance(1000)
    assert "expired" in auth.refusal(ApiKey.METADATA)
    assert auth.refusal(ApiKey.SASL_HANDSHAKE) is None
    # re-authentication as the same user renews the session
    assert auth.handshake(1, "PLAIN") == ErrorCode.NONE
    assert auth.authenticate(1, b"\x00alice\x00pw")[0] == ErrorCode.NONE
    assert auth.refusal(ApiKey.METADATA) is None


def test_v0_authenticate_reports_no_lifetime(tmp_path):
    auth, _ = _auth(tmp_path, reauth_ms=1000)
    auth.handshake(1, "PLAIN")
    assert auth.authenticate(0, b"\x00alice\x00pw")[3] == 0


def test_reauthentication_cannot_change_the_principal(tmp_path):
    auth, _ = _auth(tmp_path, reauth_ms=1000)
    auth.handshake(1, "PLAIN")
    auth.authenticate(1, b"\x00alice\x00pw")
    auth.handshake(1, "PLAIN")
    code, message, _, _ = auth.authenticate(1, b"\x00bob\x00pw2")
    assert code == ErrorCode.SASL_AUTHENTICATION_FAILED and "Cannot change principals" in message
    assert auth.close_reason is not None


def test_wrong_password_fails_and_closes(tmp_path):
    auth, _ = _auth(tmp_path)
    auth.handshake(1, "PLAIN")
    code, message, _, _ = auth.authenticate(1, b"\x00alice\x00nope")
    assert code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert message == "Authentication failed: Invalid username or password"
    assert auth.principal is None and auth.close_reason is not None


def test_old_librdkafka_nonce_gets_kafkas_answer_and_the_log_names_the_client_versions(tmp_path):
    auth, _ = _auth(tmp_path)
    assert auth.handshake(1, "SCRAM-SHA-256") == ErrorCode.NONE
    code, _, server_first, _ = auth.authenticate(1, b"n,,n=alice,r=cnonce")
    nonce = dict(item.split("=", 1) for item in server_first.decode().split(","))["r"]
    code, message, _, _ = auth.authenticate(1, f"c=biws,r=cnonce{nonce},p=AAAA".encode())  # librdkafka < 2.6.1
    assert code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert message == "Authentication failed during authentication due to invalid credentials with SASL mechanism " \
                      "SCRAM-SHA-256"
    assert "librdkafka before 2.6.1" in auth.close_reason and auth.principal is None


def test_handshake_v0_switches_to_raw_tokens(tmp_path):
    auth, _ = _auth(tmp_path)
    assert auth.handshake(0, "PLAIN") == ErrorCode.NONE and auth.raw
    assert auth.raw_token(b"\x00alice\x00pw") == b""
    assert auth.principal == KafkaPrincipal("User", "alice") and not auth.raw


def test_scram_credential_results_follow_kafkas_hashmap_order():
    from tidelog.server.handlers.scram_credentials import kafka_order

    # Orders Apache Kafka 4.4 answered in the wire differential suite (java.util.HashMap iteration).
    assert kafka_order(["", "diff-nobody", "diff-x", "diff-few", "diff-many", "diff-dup"]) == \
        ["", "diff-nobody", "diff-dup", "diff-few", "diff-many", "diff-x"]
    assert kafka_order(["diff-alice", "diff-bob", "diff-unknown"]) == ["diff-alice", "diff-unknown", "diff-bob"]
