"""Each listener's security, from Kafka's property names: its security protocol, the TLS context of SSL
and SASL_SSL listeners (PEM key stores and trust stores, ``ssl.client.auth``, ``ssl.enabled.protocols``,
``ssl.cipher.suites``), the principal mapping of client certificates, and the SASL settings of
SASL_PLAINTEXT and SASL_SSL listeners.

A key may be set for one listener as ``listener.name.<name in lower case>.<key>`` (Kafka's rule), which
wins over the plain key. Secrets (key passwords, inline keys) never appear in the errors raised here.
Reads the PEM files once, when the broker is built.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from dataclasses import dataclass
from typing import Any

from tidelog.config import BROKER_CONFIGS, BrokerConfig
from tidelog.errors import ConfigError
from tidelog.listener import Listener
from tidelog.security.principal_mapping import PrincipalMapper
from tidelog.security.sasl_client import LOGIN_MODULES, parse_jaas_config
from tidelog.server.authenticator import SaslSettings

_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


@dataclass(frozen=True, slots=True)
class ListenerSecurity:
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: PrincipalMapper | None = None
    sasl: SaslSettings | None = None


def listener_value(config: BrokerConfig, listener: str, key: str) -> Any:
    """``key`` for ``listener``: ``listener.name.<listener>.<key>`` when set, else the broker's value."""
    prefixed = f"listener.name.{listener.lower()}.{key}"
    if prefixed in config.props:
        return BROKER_CONFIGS[key].parse(prefixed, config.props[prefixed])
    return config[key]


def _load_key_store(ctx: ssl.SSLContext, get, listener: str) -> None:
    location, chain, key = get("ssl.keystore.location"), get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    password = get("ssl.key.password") or get("ssl.keystore.password")
    where = f"listener {listener}"
    if location is None and chain is None:
        raise ConfigError(f"{where} uses TLS and needs a key store: set ssl.keystore.location (a PEM file with the "
                          "private key and certificate chain) or ssl.keystore.certificate.chain and ssl.keystore.key")
    if location is not None and chain is not None:
        raise ConfigError(f"{where}: set ssl.keystore.location or ssl.keystore.certificate.chain, not both")
    try:
        if location is not None:
            ctx.load_cert_chain(location, password=password)
            return
        if key is None:
            raise ConfigError(f"{where}: ssl.keystore.certificate.chain needs ssl.keystore.key")
        # load_cert_chain reads files only: the inline PEM goes through a private temporary directory.
        with tempfile.TemporaryDirectory(prefix="tidelog-tls-") as tmp:
            path = os.path.join(tmp, "keystore.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(key.strip() + "\n" + chain.strip() + "\n")
            ctx.load_cert_chain(path, password=password)
    except FileNotFoundError:
        raise ConfigError(f"{where}: ssl.keystore.location {location} does not exist") from None
    except (ssl.SSLError, ValueError) as e:
        reason = getattr(e, "reason", None) or type(e).__name__
        raise ConfigError(f"{where}: cannot load the key store ({reason}); check the PEM contents and "
                          "ssl.key.password") from None


def _load_trust_store(ctx: ssl.SSLContext, get, listener: str,
                      purpose: ssl.Purpose = ssl.Purpose.CLIENT_AUTH) -> None:
    """The trust store of ``listener`` (file, inline PEM, or the system's), into ``ctx``: for checking
    clients' certificates (CLIENT_AUTH) or, as a client of another broker, its server's (SERVER_AUTH)."""
    location, certificates = get("ssl.truststore.location"), get("ssl.truststore.certificates")
    try:
        if location is not None:
            ctx.load_verify_locations(cafile=location)
        elif certificates is not None:
            ctx.load_verify_locations(cadata=certificates)
        else:
            ctx.load_default_certs(purpose)
    except FileNotFoundError:
        raise ConfigError(f"listener {listener}: ssl.truststore.location {location} does not exist") from None
    except ssl.SSLError as e:
        raise ConfigError(f"listener {listener}: cannot load the trust store ({e.reason})") from None


def ssl_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    def get(key: str) -> Any:
        return listener_value(config, listener, key)

    for key in ("ssl.keystore.type", "ssl.truststore.type"):
        get(key)  # parsed: PEM only
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = get("ssl.enabled.protocols")
    unknown = [v for v in versions if v not in _TLS_VERSIONS]
    if unknown:
        raise ConfigError(f"Invalid value {','.join(versions)!r} for configuration ssl.enabled.protocols: Tidelog "
                          f"serves {', '.join(_TLS_VERSIONS)}")
    chosen = sorted(_TLS_VERSIONS[v] for v in versions)
    ctx.minimum_version, ctx.maximum_version = chosen[0], chosen[-1]
    ciphers = get("ssl.cipher.suites")
    if ciphers:
        try:
            ctx.set_ciphers(":".join(ciphers))
        except ssl.SSLError:
            raise ConfigError(f"Invalid value {','.join(ciphers)!r} for configuration ssl.cipher.suites: no cipher "
                              "suite OpenSSL knows") from None
    _load_key_store(ctx, get, listener)
    client_auth = get("ssl.client.auth")
    ctx.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}[client_auth]
    if client_auth != "none":
        _load_trust_store(ctx, get, listener)
    return ctx


#: The keys a listener may override (``listener.name.<name>.<key>``).
LISTENER_KEYS = frozenset(k for k in BROKER_CONFIGS if k.startswith("ssl.")) | {"sasl.enabled.mechanisms"}


def ignored_listener_keys(config: BrokerConfig, used: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """``listener.name.*`` keys Tidelog does not use, each with the reason (the broker logs them); ``used``:
    keys read elsewhere (the inter-broker credentials, server/inter_broker.py)."""
    names = {listener.name.lower() for listener in config["listeners"]}
    out = []
    for key in sorted(config.props):
        parts = key.split(".", 3)
        if len(parts) != 4 or parts[:2] != ["listener", "name"] or key in used:
            continue
        name, rest = parts[2], parts[3]
        if name.lower() not in names:
            out.append(f"{key} is ignored: there is no listener {name.upper()}")
        elif rest == "plain.sasl.jaas.config":
            continue  # PLAIN users (user_<name>), plain_users()
        elif rest.endswith("sasl.jaas.config"):
            out.append(f"{key} is ignored: SCRAM users are credentials (tidelog users), not JAAS entries")
        elif rest not in LISTENER_KEYS:
            out.append(f"{key} is ignored: only ssl.* keys and sasl.enabled.mechanisms can be set per listener")
    return out


def plain_users(config: BrokerConfig, listener: str) -> dict[str, str]:
    """The PLAIN users of ``listener``'s JAAS entry, ``listener.name.<l>.plain.sasl.jaas.config``
    (Kafka's ``PlainLoginModule``: ``user_<name>="<password>"``; ``username``/``password`` are the broker's
    own, for connections to other brokers). Raises ConfigError, without the passwords."""
    key = f"listener.name.{listener.lower()}.plain.sasl.jaas.config"
    text = config.props.get(key)
    if text is None:
        return {}
    try:
        entry = parse_jaas_config(str(text))
    except ValueError as e:
        raise ConfigError(f"{key}: {e}") from None
    if entry.login_module != LOGIN_MODULES["PLAIN"]:
        raise ConfigError(f"{key} must use {LOGIN_MODULES['PLAIN']}, not {entry.login_module}")
    return {k[len("user_"):]: v for k, v in entry.options.items() if k.startswith("user_") and len(k) > 5}


def listener_security(config: BrokerConfig, listener: Listener, credentials: object,
                      tokens: object = None) -> ListenerSecurity:
    """The security of ``listener``. Raises ConfigError for a missing or unreadable key store, a bad rule ..."""
    protocol = config["listener.security.protocol.map"][listener.name]
    ctx = mapper = sasl = None
    if protocol in ("SSL", "SASL_SSL"):
        ctx = ssl_context(config, listener.name)
        mapper = PrincipalMapper(listener_value(config, listener.name, "ssl.principal.mapping.rules"))
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        mechanisms = listener_value(config, listener.name, "sasl.enabled.mechanisms")
        sasl = SaslSettings(mechanisms, credentials, config["connections.max.reauth.ms"],
                            config["sasl.server.max.receive.size"], plain_users(config, listener.name),
                            tokens=tokens)
    return ListenerSecurity(protocol, ctx, mapper, sasl)


__all__ = ["LISTENER_KEYS", "ListenerSecurity", "ignored_listener_keys", "listener_security", "listener_value", "plain_users",
           "ssl_context"]
