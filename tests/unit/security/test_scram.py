"""SCRAM and PLAIN, server side: RFC 7677's test vector, and every way a client can get it wrong."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from tidelog.security.plain import PlainServer
from tidelog.security.scram import (
    OLD_LIBRDKAFKA_NONCE,
    AuthenticationError,
    ScramCredential,
    ScramServer,
    credential_from_password,
)

# RFC 7677 section 3 (SCRAM-SHA-256 with user "user", password "pencil").
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_PROOF = "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
RFC_SERVER_SIGNATURE = "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
SECRET = b"s" * 32


def _rfc_server() -> ScramServer:
    cred = credential_from_password("SCRAM-SHA-256", "pencil", 4096, salt=RFC_SALT)
    return ScramServer("SCRAM-SHA-256", {"user": cred}.get, SECRET, nonce=RFC_SERVER_NONCE)


def test_rfc7677_exchange_gives_the_rfc_server_signature():
    server = _rfc_server()
    first = server.step(f"n,,n=user,r={RFC_CLIENT_NONCE}".encode())
    assert first == f"r={RFC_CLIENT_NONCE}{RFC_SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
    final = server.step(f"c=biws,r={RFC_CLIENT_NONCE}{RFC_SERVER_NONCE},p={RFC_PROOF}".encode())
    assert final == f"v={RFC_SERVER_SIGNATURE}".encode()
    assert server.complete and server.user == "user"


def test_wrong_proof_fails_with_kafkas_message():
    server = _rfc_server()
    server.step(f"n,,n=user,r={RFC_CLIENT_NONCE}".encode())
    bad = base64.b64encode(bytes(32)).decode()
    with pytest.raises(AuthenticationError, match="invalid credentials with SASL mechanism SCRAM-SHA-256"):
        server.step(f"c=biws,r={RFC_CLIENT_NONCE}{RFC_SERVER_NONCE},p={bad}".encode())
    assert server.user is None and not server.complete


def test_nonce_that_is_not_the_servers_fails():
    server = _rfc_server()
    server.step(f"n,,n=user,r={RFC_CLIENT_NONCE}".encode())
    with pytest.raises(AuthenticationError, match="invalid credentials with SASL mechanism SCRAM-SHA-256") as e:
        server.step(f"c=biws,r={RFC_CLIENT_NONCE}forged,p={RFC_PROOF}".encode())
    assert "nonce" in e.value.detail and "librdkafka" not in e.value.detail


def test_librdkafka_before_2_6_1_repeating_its_nonce_is_refused_as_kafka_4_does():
    """librdkafka < 2.6.1 (confluentinc/librdkafka#4895) sends r=<client nonce><server's r>, the client
    nonce twice. Kafka 4.x compares exactly and tells the client only Kafka's failure message; the broker's
    log names the affected client versions."""
    server = _rfc_server()
    server.step(f"n,,n=user,r={RFC_CLIENT_NONCE}".encode())
    with pytest.raises(AuthenticationError) as e:
        server.step(f"c=biws,r={RFC_CLIENT_NONCE}{RFC_CLIENT_NONCE}{RFC_SERVER_NONCE},p={RFC_PROOF}".encode())
    assert str(e.value) == ("Authentication failed during authentication due to invalid credentials with SASL "
                            "mechanism SCRAM-SHA-256")
    assert e.value.detail == OLD_LIBRDKAFKA_NONCE and "librdkafka before 2.6.1" in e.value.detail
    assert not server.complete and server.user is None


def test_channel_binding_must_echo_the_gs2_header():
    server = _rfc_server()
    server.step(f"n,,n=user,r={RFC_CLIENT_NONCE}".encode())
    with pytest.raises(AuthenticationError, match="channel binding"):
        server.step(f"c=eSws,r={RFC_CLIENT_NONCE}{RFC_SERVER_NONCE},p={RFC_PROOF}".encode())


@pytest.mark.parametrize("message", [b"", b"garbage", b"p=tls-unique,,n=user,r=x", b"n,,r=x,n=user", b"n,,n=,r=x",
                                     b"n,,n=a=ZZb,r=x", b"\xff\xfe", b"n,,n=user,r=x,tokenauth"])
def test_malformed_client_first_is_refused(message):
    with pytest.raises(AuthenticationError):
        _rfc_server().step(message)


def test_authzid_other_than_the_user_is_refused():
    with pytest.raises(AuthenticationError, match="authorization id"):
        _rfc_server().step(b"n,a=admin,n=user,r=abc")


def test_unknown_user_sees_a_stable_salt_and_fails_only_at_the_proof():
    def first(user: str) -> dict[str, str]:
        server = ScramServer("SCRAM-SHA-512", lambda u: None, SECRET)
        reply = server.step(f"n,,n={user},r=abc".encode()).decode()
        attrs = dict(item.split("=", 1) for item in reply.split(","))
        return attrs | {"_server": server}  # type: ignore[return-value]

    a, b, other = first("mallory"), first("mallory"), first("eve")
    assert a["s"] == b["s"] != other["s"]
    assert a["i"] == "4096" and len(base64.b64decode(a["s"])) == 32
    server = a["_server"]
    with pytest.raises(AuthenticationError, match="invalid credentials"):
        server.step(f"c=biws,r={a['r']},p={base64.b64encode(bytes(64)).decode()}".encode())


def test_a_real_client_computation_authenticates_with_sha512():
    cred = credential_from_password("SCRAM-SHA-512", "s3cret", 8192)
    server = ScramServer("SCRAM-SHA-512", {"bob": cred}.get, SECRET)
    first_bare = "n=bob,r=clientnonce"
    server_first = server.step(f"n,,{first_bare}".encode()).decode()
    attrs = dict(item.split("=", 1) for item in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha512", b"s3cret", base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.sha512(client_key).digest(), auth_message, "sha512").digest()
    proof = base64.b64encode(bytes(x ^ y for x, y in zip(client_key, signature, strict=True))).decode()
    final = server.step(f"{without_proof},p={proof}".encode())
    server_key = hmac.new(salted, b"Server Key", "sha512").digest()
    assert final == b"v=" + base64.b64encode(hmac.new(server_key, auth_message, "sha512").digest())


def test_credential_text_is_kafkas_format_and_round_trips():
    cred = credential_from_password("SCRAM-SHA-256", "pw", 4096, salt=b"\x01" * 16)
    text = cred.to_text()
    assert text.startswith("salt=AQEBAQEBAQEBAQEBAQEBAQ==,stored_key=") and text.endswith(",iterations=4096")
    assert ScramCredential.from_text(text) == cred
    assert "pw" not in text


def _plain_lookup():
    creds = {("alice", "SCRAM-SHA-256"): credential_from_password("SCRAM-SHA-256", "alice-pw")}
    return lambda user, mechanism: creds.get((user, mechanism))


def test_plain_checks_the_password_against_the_scram_credential():
    server = PlainServer(_plain_lookup())
    assert server.step(b"\x00alice\x00alice-pw") == b""
    assert server.complete and server.user == "alice"


def test_plain_users_of_the_jaas_entry_are_checked_against_their_password_first():
    jaas_users = {"carol": "carol-pw", "alice": "jaas-pw"}  # alice: the JAAS entry wins over her SCRAM credential
    server = PlainServer(_plain_lookup(), jaas_users)
    assert server.step(b"\x00carol\x00carol-pw") == b"" and server.user == "carol"
    assert PlainServer(_plain_lookup(), jaas_users).step(b"\x00alice\x00jaas-pw") == b""
    for token in (b"\x00carol\x00wrong", b"\x00alice\x00alice-pw"):
        with pytest.raises(AuthenticationError, match="Invalid username or password"):
            PlainServer(_plain_lookup(), jaas_users).step(token)


@pytest.mark.parametrize(("token", "message"), [
    (b"\x00alice\x00wrong", "Invalid username or password"),
    (b"\x00nobody\x00alice-pw", "Invalid username or password"),
    (b"alice\x00alice-pw", "expected 3 tokens"),
    (b"\x00\x00pw", "username not specified"),
    (b"\x00alice\x00", "password not specified"),
    (b"bob\x00alice\x00alice-pw", "authorization id"),
])
def test_plain_refusals(token, message):
    with pytest.raises(AuthenticationError, match=message):
        PlainServer(_plain_lookup()).step(token)
