"""SASL/PLAIN (RFC 4616). A user listed in the listener's PLAIN JAAS entry (``user_<name>="<password>"``,
Kafka's ``PlainLoginModule`` options, read by Kafka's ``PlainServerCallbackHandler``) is checked against
that password; any other user against the SCRAM credential store: the broker keeps no passwords there,
so a PLAIN password is verified by deriving the user's SCRAM StoredKey from it (SCRAM-SHA-512 when the
user has one, else SCRAM-SHA-256). An unknown user costs the same key derivation as a known one.
Messages are Kafka's (PlainSaslServer). Pure: no I/O.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from tidelog.security.scram import (
    MIN_ITERATIONS,
    AuthenticationError,
    ScramCredential,
    credential_from_password,
    password_matches,
)

#: The SCRAM credentials PLAIN tries, in order of preference.
PLAIN_VERIFIERS = ("SCRAM-SHA-512", "SCRAM-SHA-256")


class PlainServer:
    """One PLAIN exchange: a single client message, an empty reply."""

    mechanism = "PLAIN"

    def __init__(self, lookup, jaas_users: Mapping[str, str] | None = None) -> None:
        self._lookup = lookup  # (user, mechanism) -> ScramCredential | None
        self._jaas_users = jaas_users or {}  # user -> password, from the listener's JAAS entry
        self.user: str | None = None
        self.complete = False

    def step(self, message: bytes) -> bytes:
        if self.complete:
            raise AuthenticationError("Unexpected SASL/PLAIN message after the exchange completed")
        tokens = message.split(b"\x00")
        if len(tokens) != 3:
            raise AuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
        try:
            authzid, user, password = (t.decode("utf-8") for t in tokens)
        except UnicodeDecodeError:
            raise AuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        if not user:
            raise AuthenticationError("Authentication failed: username not specified")
        if not password:
            raise AuthenticationError("Authentication failed: password not specified")
        if authzid and authzid != user:
            raise AuthenticationError("Authentication failed: Client requested an authorization id that is "
                                      "different from username")
        expected = self._jaas_users.get(user)
        if expected is not None:
            if not hmac.compare_digest(expected.encode(), password.encode()):
                raise AuthenticationError("Authentication failed: Invalid username or password")
            self.user = user
            self.complete = True
            return b""
        found: tuple[str, ScramCredential] | None = None
        for mechanism in PLAIN_VERIFIERS:
            credential = self._lookup(user, mechanism)
            if credential is not None:
                found = (mechanism, credential)
                break
        if found is None:  # the same work as a known user, then the same answer
            credential_from_password(PLAIN_VERIFIERS[0], password, MIN_ITERATIONS, salt=b"\x00" * 32)
            raise AuthenticationError("Authentication failed: Invalid username or password")
        if not password_matches(found[0], found[1], password):
            raise AuthenticationError("Authentication failed: Invalid username or password")
        self.user = user
        self.complete = True
        return b""


__all__ = ["PlainServer"]
