"""The transport ``--command-config`` chooses for the CLI's own Kafka requests (quotas, transactions,
reassignments, the refusals confluent-kafka hides): librdkafka's property names, bad ones a usage error."""

from __future__ import annotations

import ssl

import pytest
import trustme

from tidelog.cli.broker_connection import ClientSecurity, wire_error
from tidelog.cli.client import CliError
from tidelog.errors import ErrorCode


def test_no_properties_is_plaintext() -> None:
    security = ClientSecurity.from_properties({})
    assert (security.protocol, security.mechanism, security.ssl_context) == ("PLAINTEXT", None, None)


def test_sasl_ssl_with_scram_and_a_ca_file(tmp_path) -> None:
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    security = ClientSecurity.from_properties({
        "security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin",
        "sasl.password": "pw", "ssl.ca.location": str(tmp_path / "ca.pem")})
    assert (security.protocol, security.mechanism, security.username, security.password) == (
        "SASL_SSL", "SCRAM-SHA-512", "admin", "pw")
    assert isinstance(security.ssl_context, ssl.SSLContext) and security.ssl_context.check_hostname


def test_credentials_from_a_java_jaas_line_and_hostname_checks_off() -> None:
    security = ClientSecurity.from_properties({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "ssl.endpoint.identification.algorithm": "none",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
                            'password="p";'})
    assert (security.username, security.password) == ("u", "p")
    assert security.ssl_context is not None and not security.ssl_context.check_hostname


@pytest.mark.parametrize(("properties", "said"), [
    ({"security.protocol": "SASL_TLS"}, "security.protocol must be one of"),
    ({"security.protocol": "SASL_PLAINTEXT"}, "GSSAPI is not supported"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs sasl.username and sasl.password"),
    ({"security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"}, "cannot load the TLS files"),
])
def test_bad_properties_are_a_usage_error(properties, said) -> None:
    with pytest.raises(CliError, match=said) as e:
        ClientSecurity.from_properties(properties)
    assert e.value.exit_code == 2


def test_wire_error_names_the_code() -> None:
    assert wire_error(int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "Cluster authorization failed.") == \
        "Cluster authorization failed. (CLUSTER_AUTHORIZATION_FAILED)"
    assert wire_error(9999, None) == "refused (error 9999)"
