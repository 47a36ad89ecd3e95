"""The client side of SASL, for a broker that connects to another broker (inter-broker listeners):
PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802/7677, as Kafka's ``ScramSaslClient``), and Kafka's
JAAS text (``sasl.jaas.config``) that carries the credentials.

:func:`sasl_client` returns an object whose :meth:`step` takes the server's last token (``b""`` at
first) and returns the next one to send, or None once the exchange is over (SCRAM checks the server's
signature in its final message, so a broker that does not know the password cannot pass for one).
Pure: no I/O.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from tidelog.security.scram import MECHANISMS, AuthenticationError, salted_password

#: The login modules whose ``username``/``password`` options are a client's credentials.
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
CLIENT_MECHANISMS = tuple(LOGIN_MODULES)

_JAAS = re.compile(r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)(?P<options>.*?);?\s*$",
                   re.DOTALL)
_OPTION = re.compile(r'\s*(?P<key>[\w.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))')


@dataclass(frozen=True, slots=True)
class JaasEntry:
    login_module: str
    options: dict[str, str]


def parse_jaas_config(text: str) -> JaasEntry:
    """One entry of Kafka's ``sasl.jaas.config``: ``<LoginModule class> <flag> key="value" ...;``.
    Raises ValueError (without the option values: they hold passwords)."""
    m = _JAAS.match(text)
    if m is None:
        raise ValueError("sasl.jaas.config must be '<LoginModule class> required key=\"value\" ...;'")
    options: dict[str, str] = {}
    rest = m.group("options")
    pos = 0
    while pos < len(rest) and rest[pos:].strip():
        o = _OPTION.match(rest, pos)
        if o is None:
            raise ValueError("sasl.jaas.config: cannot read the options after the login module (key=\"value\" ...)")
        quoted = o.group("quoted")
        options[o.group("key")] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else o.group("bare")
        pos = o.end()
    return JaasEntry(m.group("module"), options)


def jaas_credentials(text: str, mechanism: str) -> tuple[str, str]:
    """(username, password) from a JAAS entry for ``mechanism``'s login module. Raises ValueError."""
    entry = parse_jaas_config(text)
    expected = LOGIN_MODULES.get(mechanism)
    if expected is None:
        raise ValueError(f"SASL mechanism {mechanism} is not supported between brokers (use one of "
                         f"{', '.join(CLIENT_MECHANISMS)})")
    if entry.login_module != expected:
        raise ValueError(f"sasl.jaas.config for {mechanism} must use {expected}, not {entry.login_module}")
    user, password = entry.options.get("username"), entry.options.get("password")
    if not user or password is None:
        raise ValueError(f"sasl.jaas.config for {mechanism} needs username and password options")
    return user, password


class PlainClient:
    def __init__(self, user: str, password: str) -> None:
        self._message = b"\x00" + user.encode() + b"\x00" + password.encode()
        self._sent = False

    def step(self, _server: bytes) -> bytes | None:
        if self._sent:
            return None
        self._sent = True
        return self._message


def _saslname(user: str) -> str:
    return user.replace("=", "=3D").replace(",", "=2C")


class ScramClient:
    """One SCRAM exchange: client-first, (server-first) client-final, (server-final) verified."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None,
                 tokenauth: bool = False) -> None:
        """``tokenauth``: authenticate with a delegation token (user: its id, password: its HMAC in base64)."""
        self.mechanism, self._hash = mechanism, MECHANISMS[mechanism]
        self._password = password
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._bare = f"n={_saslname(user)},r={self._nonce}" + (",tokenauth=true" if tokenauth else "")
        self._state = "first"
        self._server_signature = b""

    def step(self, server: bytes) -> bytes | None:
        if self._state == "first":
            self._state = "final"
            return ("n,," + self._bare).encode()
        if self._state == "final":
            self._state = "verify"
            return self._client_final(server.decode("utf-8", "replace"))
        if self._state == "verify":
            self._verify(server.decode("utf-8", "replace"))
            self._state = "done"
            return None
        raise AuthenticationError("unexpected SCRAM message after the exchange completed")

    def _client_final(self, server_first: str) -> bytes:
        attrs = dict(item.split("=", 1) for item in server_first.split(",") if "=" in item)
        nonce, salt, iterations = attrs.get("r", ""), attrs.get("s"), attrs.get("i")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce) or salt is None or iterations is None:
            raise AuthenticationError("invalid SCRAM server first message")
        salted = salted_password(self.mechanism, self._password, base64.b64decode(salt), int(iterations))
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
        auth_message = f"{self._bare},{server_first},{without_proof}".encode()
        client_key = hmac.new(salted, b"Client Key", self._hash).digest()
        stored_key = hashlib.new(self._hash, client_key).digest()
        signature = hmac.new(stored_key, auth_message, self._hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        server_key = hmac.new(salted, b"Server Key", self._hash).digest()
        self._server_signature = hmac.new(server_key, auth_message, self._hash).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify(self, server_final: str) -> None:
        attrs = dict(item.split("=", 1) for item in server_final.split(",") if "=" in item)
        if "e" in attrs:
            raise AuthenticationError(f"SCRAM authentication failed: {attrs['e']}")
        if not hmac.compare_digest(base64.b64decode(attrs.get("v", "")), self._server_signature):
            raise AuthenticationError("SCRAM server signature does not match: the server does not know the password")


def sasl_client(mechanism: str, user: str, password: str, tokenauth: bool = False) -> PlainClient | ScramClient:
    if mechanism == "PLAIN":
        return PlainClient(user, password)
    if mechanism in MECHANISMS:
        return ScramClient(mechanism, user, password, tokenauth=tokenauth)
    raise ValueError(f"SASL mechanism {mechanism} is not supported between brokers")


__all__ = ["CLIENT_MECHANISMS", "LOGIN_MODULES", "JaasEntry", "PlainClient", "ScramClient", "jaas_credentials",
           "parse_jaas_config", "sasl_client"]
