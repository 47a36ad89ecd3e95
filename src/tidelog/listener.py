"""Listeners, as Kafka configures them: ``listeners`` / ``advertised.listeners`` entries
(``NAME://HOST:PORT``), ``listener.security.protocol.map``, the ``HOST:PORT`` endpoints of the TubeMQ
listeners, and the rules between them. Parsing only; :mod:`tidelog.config` holds the keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tidelog.errors import ConfigError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True)
class Listener:
    """One entry of ``listeners`` / ``advertised.listeners``: ``NAME://HOST:PORT``. An empty host
    means every interface (and, when advertised, this machine's host name), as in Kafka."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


#: Kafka's listener syntax: a name, ``://``, an optional host (IPv6 in brackets), ``:`` and a port.
_LISTENER = re.compile(r"^([A-Za-z0-9_]+)://(?:\[([0-9a-fA-F:.%]+)\]|([0-9a-zA-Z\-%._]*)):(-?[0-9]+)$")
NON_ROUTABLE_HOSTS = frozenset({"0.0.0.0", "::"})


def parse_listeners(key: str, raw: Any) -> tuple[Listener, ...]:
    items = [item.strip() for item in str(raw).split(",") if item.strip()]
    out: list[Listener] = []
    for item in items:
        m = _LISTENER.match(item)
        if m is None:
            raise ConfigError(f"Invalid value {item!r} for configuration {key}: expected NAME://HOST:PORT, "
                              "e.g. PLAINTEXT://localhost:9092 (an empty host means every interface)")
        name, host, port = m.group(1).upper(), m.group(2) or m.group(3) or "", int(m.group(4))
        if not 0 <= port <= 65535:
            raise ConfigError(f"Invalid value {item!r} for configuration {key}: port {port} is not between 0 and 65535")
        if any(other.name == name for other in out):
            raise ConfigError(f"Invalid value {raw!r} for configuration {key}: each listener must have a different "
                              f"name, and {name} appears twice")
        if port and any(other.port == port for other in out):
            raise ConfigError(f"Invalid value {raw!r} for configuration {key}: each listener must have a different "
                              f"port, and {port} appears twice")
        out.append(Listener(name, host, port))
    return tuple(out)


#: ``HOST:PORT`` (IPv6 hosts in brackets; an empty host means every interface).
_HOST_PORT = re.compile(r"^(?:\[([0-9a-fA-F:.%]+)\]|([0-9a-zA-Z\-%._]*)):([0-9]+)$")


def parse_endpoint(key: str, raw: Any) -> tuple[str, int] | None:
    """An optional ``HOST:PORT`` (empty: not set)."""
    text = str(raw).strip()
    if not text:
        return None
    m = _HOST_PORT.match(text)
    if m is None:
        raise ConfigError(f"Invalid value {text!r} for configuration {key}: expected HOST:PORT, e.g. localhost:8715 "
                          "(an empty host, as in :8715, means every interface)")
    port = int(m.group(3))
    if port > 65535:
        raise ConfigError(f"Invalid value {text!r} for configuration {key}: port {port} is not between 0 and 65535")
    return m.group(1) or m.group(2) or "", port


def parse_http_endpoint(key: str, raw: Any) -> tuple[str, int] | None:
    """An optional ``http://HOST:PORT`` (empty: no HTTP listener). Only plain HTTP is served."""
    text = str(raw).strip()
    if not text:
        return None
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() != "http":
        raise ConfigError(f"Invalid value {text!r} for configuration {key}: expected http://HOST:PORT, e.g. "
                          "http://127.0.0.1:9644 (empty: no HTTP listener)")
    return parse_endpoint(key, rest.rstrip("/"))


def parse_protocol_map(key: str, raw: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in (p.strip() for p in str(raw).split(",") if p.strip()):
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip() or protocol.strip().upper() not in SECURITY_PROTOCOLS:
            raise ConfigError(f"Invalid value {item!r} for configuration {key}: expected LISTENER_NAME:PROTOCOL with "
                              f"PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}")
        out[name.strip().upper()] = protocol.strip().upper()
    return out


def check_listeners(values: dict[str, Any]) -> None:
    """Kafka's listener rules: every listener name has a security protocol; advertised listeners
    name existing listeners and never the non-routable 0.0.0.0."""
    protocols = values["listener.security.protocol.map"]
    for listener in values["listeners"]:
        if listener.name not in protocols:
            raise ConfigError(f"Invalid value for configuration listeners: listener {listener.name} has no security "
                              "protocol in listener.security.protocol.map")
    names = {listener.name for listener in values["listeners"]}
    for listener in values["advertised.listeners"]:
        if listener.name not in names:
            raise ConfigError(f"Invalid value for configuration advertised.listeners: {listener.name} is not one of "
                              f"the listeners ({', '.join(sorted(names))})")
        if listener.host in NON_ROUTABLE_HOSTS:
            raise ConfigError("Invalid value for configuration advertised.listeners: advertised.listeners cannot use "
                              f"the nonroutable meta-address {listener.host}; use a routable address or host name")


def check_inter_broker_listener(values: dict[str, Any]) -> None:
    """Kafka's rule: ``inter.broker.listener.name`` names one of the listeners, and is not set together
    with ``security.inter.broker.protocol``'s non-default value."""
    name = values.get("inter.broker.listener.name")
    if name is None:
        return
    names = [listener.name for listener in values["listeners"]]
    if name not in names:
        raise ConfigError(f"Invalid value {name!r} for configuration inter.broker.listener.name: must be a listener "
                          f"name defined in listeners; the configured listeners are {', '.join(names)}")
    if values.get("security.inter.broker.protocol", "PLAINTEXT") != "PLAINTEXT":
        raise ConfigError("Only one of inter.broker.listener.name and security.inter.broker.protocol should be set")


def check_tubemq_listeners(values: dict[str, Any]) -> None:
    """TubeMQ clients need the master and the broker service: both listeners or neither, on two ports."""
    master, broker = values["tubemq.master.listener"], values["tubemq.broker.listener"]
    if (master is None) != (broker is None):
        raise ConfigError("Invalid value for configuration tubemq.master.listener / tubemq.broker.listener: TubeMQ "
                          "clients need both services; set both listeners (e.g. localhost:8715 and localhost:8123) "
                          "or neither")
    if master is not None and master[1] and master[1] == broker[1]:
        raise ConfigError(f"Invalid value for configuration tubemq.broker.listener: port {broker[1]} is "
                          "tubemq.master.listener's too")
