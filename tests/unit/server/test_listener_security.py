"""A connection's principal and security protocol as the network layer sets them in RequestContext:
from the client certificate on SSL listeners (through ssl.principal.mapping.rules), ANONYMOUS without
one, from SASL on SASL listeners; and the listener security built from Kafka's ssl.* keys."""

from __future__ import annotations

import ssl

import pytest

from tidelog.config import BrokerConfig
from tidelog.errors import ConfigError
from tidelog.listener import Listener
from tidelog.security.principal import ANONYMOUS, KafkaPrincipal
from tidelog.security.principal_mapping import PrincipalMapper
from tidelog.server.dispatcher import HandlerRegistry
from tidelog.server.network import (
    AUTH_LOG_BURST,
    AUTH_LOG_WINDOW_MS,
    ClientProtocol,
    ConnectionSettings,
    SocketServer,
)
from tidelog.server.tls import (
    ListenerSecurity,
    ignored_listener_keys,
    listener_security,
    listener_value,
    plain_users,
)
from tidelog.testing import ManualClock

SUBJECT = ((("countryName", "US"),), (("organizationName", "Example"),), (("commonName", "alice"),))


class FakeTransport:
    def __init__(self, cert: dict | None) -> None:
        self.extra = {"peername": ("10.0.0.1", 5555), "sockname": ("10.0.0.2", 9093), "peercert": cert}
        self.closed = False

    def get_extra_info(self, key: str):
        return self.extra.get(key)

    def close(self) -> None:
        self.closed = True


def _protocol(rules: str, cert: dict | None) -> ClientProtocol:
    security = ListenerSecurity("SSL", ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), PrincipalMapper(rules))
    server = SocketServer(HandlerRegistry(), ManualClock(), ConnectionSettings(), security={"SSL": security})
    server.use_sendfile = True
    proto = ClientProtocol(server, "SSL")
    proto.connection_made(FakeTransport(cert))  # type: ignore[arg-type]
    return proto


def test_client_certificate_names_the_principal():
    proto = _protocol("DEFAULT", {"subject": SUBJECT})
    ctx = proto._context(None)
    assert ctx.principal == KafkaPrincipal("User", "CN=alice,O=Example,C=US")
    assert ctx.security_protocol == "SSL" and ctx.listener_name == "SSL"
    assert not proto.use_sendfile  # TLS: no zero-copy


def test_mapping_rules_rewrite_the_name_and_no_match_closes():
    assert _protocol(r"RULE:^CN=([^,]*),.*$/$1/U", {"subject": SUBJECT})._context(None).principal.name == "ALICE"
    refused = _protocol(r"RULE:^OU=x$/$1/", {"subject": SUBJECT})
    assert refused.closed and refused.transport.closed  # type: ignore[union-attr]


def test_no_certificate_is_anonymous():
    assert _protocol("DEFAULT", None)._context(None).principal == ANONYMOUS


def test_plaintext_listener_keeps_sendfile_and_anonymous():
    server = SocketServer(HandlerRegistry(), ManualClock(), ConnectionSettings())
    server.use_sendfile = True
    proto = ClientProtocol(server, "PLAINTEXT")
    proto.connection_made(FakeTransport(None))  # type: ignore[arg-type]
    ctx = proto._context(None)
    assert proto.use_sendfile and ctx.principal == ANONYMOUS and ctx.security_protocol == "PLAINTEXT"
    assert ctx.authenticator is None


def test_listener_overrides_win_over_broker_keys():
    config = BrokerConfig.from_props({"listeners": "SSL://:0,SASL_SSL://:1", "ssl.client.auth": "required",
                                      "listener.name.sasl_ssl.ssl.client.auth": "none",
                                      "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN"})
    assert config.unknown == ()
    assert listener_value(config, "SSL", "ssl.client.auth") == "required"
    assert listener_value(config, "SASL_SSL", "ssl.client.auth") == "none"
    assert listener_value(config, "SASL_SSL", "sasl.enabled.mechanisms") == ("PLAIN",)
    assert listener_value(config, "SSL", "sasl.enabled.mechanisms") == ("SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.mark.parametrize(("props", "message"), [
    ({}, "needs a key store"),
    ({"ssl.keystore.location": "/no/such.pem"}, "does not exist"),
    ({"ssl.keystore.type": "JKS"}, "PEM only"),
    ({"ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----",
      "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
      "ssl.key.password": "hunter2"}, "cannot load the key store"),
    ({"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols"),
])
def test_bad_tls_settings_are_one_line_config_errors_without_secrets(props, message):
    with pytest.raises(ConfigError, match=message) as e:
        config = BrokerConfig.from_props({"listeners": "SSL://:0", **props})
        listener_security(config, Listener("SSL", "", 0), credentials=None)
    assert "hunter2" not in str(e.value) and "\n" not in str(e.value)


def test_inter_broker_listener_must_be_a_listener():
    with pytest.raises(ConfigError, match="inter.broker.listener.name"):
        BrokerConfig.from_props({"listeners": "PLAINTEXT://:0", "inter.broker.listener.name": "INTERNAL"})
    ok = BrokerConfig.from_props({"listeners": "PLAINTEXT://:0,INTERNAL://:1",
                                  "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
                                  "inter.broker.listener.name": "internal"})
    assert ok["inter.broker.listener.name"] == "INTERNAL"


def test_listener_keys_tidelog_does_not_use_are_reported():
    config = BrokerConfig.from_props({"listeners": "SASL_SSL://:1",
                                      "listener.name.sasl_ssl.ssl.clent.auth": "none",
                                      "listener.name.other.ssl.client.auth": "none",
                                      "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": "x required;",
                                      "listener.name.sasl_ssl.ssl.client.auth": "none"})
    reasons = ignored_listener_keys(config)
    assert len(reasons) == 3
    assert any("ssl.clent.auth" in r and "only ssl.* keys" in r for r in reasons)
    assert any("listener.name.other" in r and "no listener OTHER" in r for r in reasons)
    assert not any(r.startswith("listener.name.sasl_ssl.ssl.client.auth") for r in reasons)


def test_failed_authentications_are_counted_and_their_log_lines_rate_limited(caplog):
    clock = ManualClock()
    server = SocketServer(HandlerRegistry(), clock, ConnectionSettings())
    with caplog.at_level("INFO", logger="tidelog.server.network"):
        for i in range(AUTH_LOG_BURST + 5):
            server.failed_authentication("SSL", f"10.0.0.{i}", "SSL handshake failed: UNKNOWN_CA")
        server.failed_authentication("SASL_SSL", "10.0.0.9", None)  # counted; its caller logs
        assert server.failed_authentications == {"SSL": AUTH_LOG_BURST + 5, "SASL_SSL": 1}
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == AUTH_LOG_BURST
        assert lines[0] == "Failed authentication with /10.0.0.0 on listener SSL (SSL handshake failed: UNKNOWN_CA)"
        clock.advance(AUTH_LOG_WINDOW_MS)
        server.failed_authentication("SSL", "10.0.0.99", "SSL handshake failed: UNKNOWN_CA")
        lines = [r.getMessage() for r in caplog.records]
    assert lines[AUTH_LOG_BURST:] == [
        "5 more failed authentications were not logged",
        "Failed authentication with /10.0.0.99 on listener SSL (SSL handshake failed: UNKNOWN_CA)"]


JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


def test_the_plain_jaas_entry_of_a_listener_lists_its_plain_users():
    config = BrokerConfig.from_props({"listeners": "SASL_SSL://:1", "ssl.keystore.location": "/unused",
                                      "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS})
    assert plain_users(config, "SASL_SSL") == {"admin": "admin-secret", "alice": "alice-secret"}
    assert plain_users(config, "OTHER") == {}
    assert ignored_listener_keys(config) == []  # used, not reported as ignored


@pytest.mark.parametrize(("jaas", "message"), [
    ('org.apache.kafka.common.security.scram.ScramLoginModule required user_a="hunter2";', "must use"),
    ('PlainLoginModule user_a="hunter2"', "sasl.jaas.config"),
])
def test_a_bad_plain_jaas_entry_is_a_config_error_without_the_passwords(jaas, message):
    config = BrokerConfig.from_props({"listeners": "SASL_SSL://:1",
                                      "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas})
    with pytest.raises(ConfigError, match=message) as e:
        plain_users(config, "SASL_SSL")
    assert "hunter2" not in str(e.value)
