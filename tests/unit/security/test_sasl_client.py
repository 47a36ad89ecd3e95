"""SASL clients (a broker authenticating to another broker): RFC 7677's vector, against Tidelog's own
servers, and Kafka's JAAS text."""

from __future__ import annotations

import base64

import pytest

from tidelog.security.plain import PlainServer
from tidelog.security.sasl_client import (
    PlainClient,
    ScramClient,
    jaas_credentials,
    parse_jaas_config,
    sasl_client,
)
from tidelog.security.scram import AuthenticationError, ScramServer, credential_from_password

RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SECRET = b"s" * 32


def _run(client, server) -> None:
    reply = b""
    while (token := client.step(reply)) is not None:
        reply = server.step(token)


def test_scram_client_sends_rfc_7677s_messages() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.step(b"") == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = client.step(f"r={RFC_CLIENT_NONCE}{RFC_SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode())
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert client.step(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None


def test_scram_client_refuses_a_server_that_does_not_know_the_password() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.step(b"")
    client.step(f"r={RFC_CLIENT_NONCE}{RFC_SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode())
    with pytest.raises(AuthenticationError, match="signature"):
        client.step(base64.b64encode(b"x" * 32).join([b"v=", b""]))


def test_scram_client_refuses_a_nonce_it_did_not_start() -> None:
    client = ScramClient("SCRAM-SHA-512", "user", "pencil")
    client.step(b"")
    with pytest.raises(AuthenticationError):
        client.step(b"r=someone-elses-nonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_client_and_server_agree(mechanism: str) -> None:
    creds = {"bro,ker=1": credential_from_password(mechanism, "secret")}
    server = ScramServer(mechanism, creds.get, SECRET)
    _run(sasl_client(mechanism, "bro,ker=1", "secret"), server)
    assert server.complete and server.user == "bro,ker=1"
    with pytest.raises(AuthenticationError):
        _run(sasl_client(mechanism, "bro,ker=1", "wrong"), ScramServer(mechanism, creds.get, SECRET))


def test_plain_client_against_the_plain_server() -> None:
    cred = credential_from_password("SCRAM-SHA-512", "secret")
    server = PlainServer(lambda user, mechanism: cred if user == "broker" and mechanism == "SCRAM-SHA-512" else None)
    client = PlainClient("broker", "secret")
    _run(client, server)
    assert server.complete and server.user == "broker"


def test_jaas_config_in_kafkas_syntax() -> None:
    text = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" '
            'password="p\\"w;d" tokenauth=false;')
    entry = parse_jaas_config(text)
    assert entry.login_module == "org.apache.kafka.common.security.scram.ScramLoginModule"
    assert entry.options == {"username": "broker", "password": 'p"w;d', "tokenauth": "false"}
    assert jaas_credentials(text, "SCRAM-SHA-256") == ("broker", 'p"w;d')
    plain = 'org.apache.kafka.common.security.plain.PlainLoginModule required username=admin password=x user_admin="x";'
    assert jaas_credentials(plain, "PLAIN") == ("admin", "x")


@pytest.mark.parametrize("text, mechanism, message", [
    ("username=a password=b", "PLAIN", "LoginModule"),
    ('org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";', "SCRAM-SHA-256",
     "must use org.apache.kafka.common.security.scram.ScramLoginModule"),
    ('org.apache.kafka.common.security.scram.ScramLoginModule required username="a";', "SCRAM-SHA-256",
     "needs username and password"),
    ('org.apache.kafka.common.security.scram.ScramLoginModule required username="a" password="top-secret";', "GSSAPI",
     "not supported"),
])
def test_bad_jaas_config_is_refused_without_the_password(text: str, mechanism: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as e:
        jaas_credentials(text, mechanism)
    assert "top-secret" not in str(e.value)
