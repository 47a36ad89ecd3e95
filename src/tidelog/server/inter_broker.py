"""How this broker connects to another broker (followers to leaders, and any other broker-to-broker
request): over the inter-broker listener, with that listener's security, as Kafka's brokers do.

* The listener: ``inter.broker.listener.name``, else the first listener whose protocol is
  ``security.inter.broker.protocol`` (default PLAINTEXT), else the first listener.
* TLS (SSL, SASL_SSL): the broker's own ``ssl.*`` keys, or ``listener.name.<listener>.ssl.*``, read as a
  client's: the trust store checks the other broker's certificate (default: the system's CAs), the
  key store (when set) is presented for mutual TLS, so the other broker sees this one's certificate
  principal; ``ssl.endpoint.identification.algorithm=https`` (Kafka's default) checks the host name.
* SASL (SASL_PLAINTEXT, SASL_SSL): ``sasl.mechanism.inter.broker.protocol`` (PLAIN, SCRAM-SHA-256,
  SCRAM-SHA-512; Kafka's default GSSAPI is refused at start-up) with the ``username`` and ``password``
  of the JAAS entry in ``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (Kafka's key), e.g.
  ``org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="...";``.

:meth:`InterBrokerConnector.prepare` reads the PEM files and checks the settings (at start-up; a
ConfigError stops the broker); the connector is then the ``connect`` of a
:class:`~tidelog.replica.fetcher.BrokerChannel`: it opens the connection, does the TLS handshake and
the SASL exchange (SaslHandshake v1, SaslAuthenticate v2), and raises
:class:`~tidelog.replica.fetcher.LeaderRefusedError` with the reason when the other broker refuses.
Secrets never appear in its errors. Loop-only.
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import struct
from dataclasses import dataclass, field
from typing import Any

from tidelog.config import BrokerConfig
from tidelog.errors import ConfigError, ErrorCode
from tidelog.listener import Listener
from tidelog.protocol import decode_response, encode_request
from tidelog.protocol.messages import SaslAuthenticateRequest, SaslHandshakeRequest
from tidelog.replica.fetcher import LeaderRefusedError
from tidelog.security.sasl_client import CLIENT_MECHANISMS, jaas_credentials, sasl_client
from tidelog.security.scram import AuthenticationError
from tidelog.server.tls import _TLS_VERSIONS, _load_key_store, _load_trust_store, listener_value

_SIZE = struct.Struct(">i")
_HANDSHAKE_VERSION = 1
_AUTHENTICATE_VERSION = 2


def inter_broker_listener_name(config: BrokerConfig, listeners: tuple[Listener, ...]) -> str:
    """Kafka's choice: ``inter.broker.listener.name``, else the listener of ``security.inter.broker.protocol``."""
    protocols = config["listener.security.protocol.map"]
    return config["inter.broker.listener.name"] or next(
        (lst.name for lst in listeners if protocols.get(lst.name) == config["security.inter.broker.protocol"]),
        listeners[0].name)


def jaas_key(listener: str, mechanism: str) -> str:
    return f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"


def client_ssl_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The TLS context of a connection to another broker's ``listener``. Raises ConfigError."""
    def get(key: str) -> Any:
        return listener_value(config, listener, key)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    chosen = sorted(_TLS_VERSIONS[v] for v in get("ssl.enabled.protocols") if v in _TLS_VERSIONS)
    if chosen:
        ctx.minimum_version, ctx.maximum_version = chosen[0], chosen[-1]
    ciphers = get("ssl.cipher.suites")
    if ciphers:
        try:
            ctx.set_ciphers(":".join(ciphers))
        except ssl.SSLError:
            raise ConfigError(f"listener {listener}: ssl.cipher.suites names no cipher suite OpenSSL knows") from None
    _load_trust_store(ctx, get, listener, ssl.Purpose.SERVER_AUTH)
    if get("ssl.keystore.location") is not None or get("ssl.keystore.certificate.chain") is not None:
        _load_key_store(ctx, get, listener)  # presented to the other broker: mutual TLS
    ctx.check_hostname = bool(get("ssl.endpoint.identification.algorithm"))
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


@dataclass(slots=True)
class InterBrokerSecurity:
    listener: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def describe(self) -> str:
        """For the log (no secrets)."""
        text = f"inter-broker listener {self.listener} ({self.protocol}"
        if self.mechanism:
            text += f", SASL {self.mechanism} as {self.username}"
        return text + ")"


def inter_broker_security(config: BrokerConfig, listener: str) -> InterBrokerSecurity:
    """The settings of connections to other brokers' ``listener``. Raises ConfigError."""
    protocol = config["listener.security.protocol.map"].get(listener, listener)
    security = InterBrokerSecurity(listener, protocol)
    if protocol in ("SSL", "SASL_SSL"):
        security.ssl_context = client_ssl_context(config, listener)
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        mechanism = config["sasl.mechanism.inter.broker.protocol"]
        if mechanism not in CLIENT_MECHANISMS:
            raise ConfigError(f"sasl.mechanism.inter.broker.protocol={mechanism} is not supported: the inter-broker "
                              f"listener {listener} is {protocol}; use one of {', '.join(CLIENT_MECHANISMS)}")
        key = jaas_key(listener, mechanism)
        text = config.props.get(key)
        if not text:
            raise ConfigError(f"the inter-broker listener {listener} is {protocol}: set {key} with this broker's "
                              "username and password (Kafka's JAAS syntax)")
        try:
            security.username, security.password = jaas_credentials(str(text), mechanism)
        except ValueError as e:
            raise ConfigError(f"{key}: {e}") from None
        security.mechanism = mechanism
    return security


class InterBrokerConnector:
    """Opens connections to other brokers with the inter-broker listener's security (see the module)."""

    def __init__(self, config: BrokerConfig, listener: str, client_id: str) -> None:
        self.config = config
        self.listener = listener
        self.client_id = client_id
        self.security: InterBrokerSecurity | None = None  # set by prepare()
        self._ids = itertools.count(1)

    def prepare(self) -> InterBrokerSecurity:
        self.security = inter_broker_security(self.config, self.listener)
        return self.security

    async def open(self, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        security = self.security or self.prepare()
        try:
            reader, writer = await asyncio.open_connection(
                host, port, ssl=security.ssl_context, server_hostname=host if security.ssl_context else None)
        except ssl.SSLError as e:
            raise LeaderRefusedError(f"TLS handshake with {host}:{port} (listener {security.listener}) failed: "
                                     f"{e.reason or e}") from None
        if security.mechanism is not None:
            try:
                await self._authenticate(reader, writer, security)
            except BaseException:
                writer.close()
                raise
        return reader, writer

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: Any,
                        version: int) -> Any:
        corr = -next(self._ids)  # negative: never one a BrokerChannel uses on the same connection
        payload = encode_request(body, version, corr, self.client_id)
        writer.write(_SIZE.pack(len(payload)) + payload)
        await writer.drain()
        (size,) = _SIZE.unpack(await reader.readexactly(4))
        got, response = decode_response(await reader.readexactly(size), body.API_KEY, version)
        if got != corr:
            raise ConnectionError(f"correlation id {got}, expected {corr}")
        return response

    async def _authenticate(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            security: InterBrokerSecurity) -> None:
        assert security.mechanism is not None and security.username is not None and security.password is not None
        mechanism, user = security.mechanism, security.username
        handshake = await self._exchange(reader, writer, SaslHandshakeRequest(mechanism=mechanism), _HANDSHAKE_VERSION)
        if handshake.error_code:
            raise LeaderRefusedError(
                f"SaslHandshake for {mechanism} on listener {security.listener} answered "
                f"{_error_name(handshake.error_code)} (enabled there: {', '.join(handshake.mechanisms) or 'none'})")
        client = sasl_client(mechanism, user, security.password)
        reply = b""
        try:
            while (token := client.step(reply)) is not None:
                response = await self._exchange(reader, writer, SaslAuthenticateRequest(auth_bytes=token),
                                                _AUTHENTICATE_VERSION)
                if response.error_code:
                    raise LeaderRefusedError(
                        f"SASL {mechanism} authentication as {user} on listener {security.listener} failed: "
                        f"{_error_name(response.error_code)}: {response.error_message}")
                reply = response.auth_bytes
        except AuthenticationError as e:
            raise LeaderRefusedError(f"SASL {mechanism} authentication as {user} failed: {e}") from None


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


__all__ = ["InterBrokerConnector", "InterBrokerSecurity", "client_ssl_context", "inter_broker_listener_name",
           "inter_broker_security", "jaas_key"]
