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

:func:`inter_broker_security` reads the PEM files and checks the settings (at start-up, through
:meth:`~tidelog.peer.client.PeerSettings.prepare`; a ConfigError stops the broker) and returns the
:class:`~tidelog.peer.wire.Security` with which the peer clients (:mod:`tidelog.peer`) open their
connections; :func:`peer_settings` puts it together with the addresses of the other brokers'
inter-broker listeners. Secrets never appear in errors. Loop-only.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Callable
from typing import Any

from tidelog.clock import Clock
from tidelog.cluster.metadata import MetadataImage
from tidelog.config import BrokerConfig
from tidelog.errors import ConfigError
from tidelog.listener import Listener
from tidelog.peer.client import PeerSettings
from tidelog.peer.wire import Security
from tidelog.security.sasl_client import CLIENT_MECHANISMS, jaas_credentials
from tidelog.server.tls import _TLS_VERSIONS, _load_key_store, _load_trust_store, listener_value


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


def inter_broker_security(config: BrokerConfig, listener: str) -> Security:
    """The settings of connections to other brokers' ``listener``. Raises ConfigError."""
    protocol = config["listener.security.protocol.map"].get(listener, listener)
    ssl_context = client_ssl_context(config, listener) if protocol in ("SSL", "SASL_SSL") else None
    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return Security(protocol, ssl_context, listener=listener)
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
        username, password = jaas_credentials(str(text), mechanism)
    except ValueError as e:
        raise ConfigError(f"{key}: {e}") from None
    return Security(protocol, ssl_context, mechanism, username, password, listener)


def peer_settings(config: BrokerConfig, listener: str, image: Callable[[], MetadataImage],
                  clock: Clock | None = None) -> PeerSettings:
    """How this broker's peer clients reach the others: each one's ``listener`` endpoint in the
    metadata, with that listener's security (built at :meth:`~tidelog.peer.client.PeerSettings.prepare`),
    ``replica.socket.timeout.ms`` per request."""
    def address(broker_id: int) -> tuple[str, int] | None:
        broker = image().brokers.get(broker_id)
        return None if broker is None else broker.endpoint(listener)

    return PeerSettings(address, functools.partial(inter_broker_security, config, listener),
                        request_timeout_ms=config["replica.socket.timeout.ms"], clock=clock)


__all__ = ["client_ssl_context", "inter_broker_listener_name", "inter_broker_security", "jaas_key", "peer_settings"]
