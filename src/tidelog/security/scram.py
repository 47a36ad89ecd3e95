"""SCRAM (RFC 5802, with SHA-256 and SHA-512 as RFC 7677 and Kafka use them): salted credentials and the
server side of one authentication exchange.

A credential is what the broker stores instead of a password: the salt, the iteration count, StoredKey
= H(HMAC(SaltedPassword, "Client Key")) and ServerKey = HMAC(SaltedPassword, "Server Key"). Kafka's
text form of it (the ZooKeeper ``/config/users/<user>`` entry) is
``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``.

:class:`ScramServer` runs one exchange: client-first -> server-first, client-final -> server-final.
An unknown user gets a made-up credential (a salt derived from the user name and a per-broker secret,
so the same name always sees the same salt) and fails at the proof, exactly as a wrong password does:
the reply to the first message does not tell whether the user exists. With the ``tokenauth=true``
extension (delegation tokens, :mod:`tidelog.security.delegation_token`) the user is a token id, the
credential the one derived from the token's HMAC, and the authenticated user the token's owner; an
unknown or expired token fails at the proof in the same way. Pure: no I/O.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

#: Kafka's mechanism names -> hash names.
MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: Kafka's ScramMechanism bounds on iterations (AlterUserScramCredentials refuses others).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
#: Kafka's ScramMechanism type codes, as DescribeUserScramCredentials / AlterUserScramCredentials carry them.
MECHANISM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
MECHANISM_CODES = {name: code for code, name in MECHANISM_TYPES.items()}


#: What the broker's log says about a client whose final message repeats its own nonce (see
#: :meth:`ScramServer._client_final`).
OLD_LIBRDKAFKA_NONCE = (
    "the client sent its nonce twice in the final message (r=client nonce + server nonce, which already starts "
    "with the client nonce): librdkafka before 2.6.1 does this (confluentinc/librdkafka#4895), e.g. Debian 12's "
    "kcat (librdkafka 2.0.2) and any application linked to an older librdkafka; Apache Kafka 4.x refuses these "
    "clients too: upgrade the client's librdkafka to 2.6.1 or later")


class AuthenticationError(Exception):
    """The client failed to authenticate; the message is what the client is told (no secrets in it).
    ``detail``, when set, is for the broker's log only (why, beyond what the client may be told)."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_text(self) -> str:
        """Kafka's form: ``salt=...,stored_key=...,server_key=...,iterations=...`` (base64 values)."""
        b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
        return (f"salt={b64(self.salt)},stored_key={b64(self.stored_key)},server_key={b64(self.server_key)},"
                f"iterations={self.iterations}")

    @classmethod
    def from_text(cls, text: str) -> ScramCredential:
        fields = dict(item.split("=", 1) for item in text.split(",") if "=" in item)
        try:
            return cls(base64.b64decode(fields["salt"]), base64.b64decode(fields["stored_key"]),
                       base64.b64decode(fields["server_key"]), int(fields["iterations"]))
        except (KeyError, ValueError) as e:
            raise ValueError(f"not a SCRAM credential: missing or bad {e}") from None


def _hmac(hash_name: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hash_name).digest()


def salted_password(mechanism: str, password: str | bytes, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) of RFC 5802: PBKDF2 with the mechanism's HMAC."""
    pw = password.encode() if isinstance(password, str) else password
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism], pw, salt, iterations)


def credential_from_salted_password(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    h = MECHANISMS[mechanism]
    client_key = _hmac(h, salted, b"Client Key")
    return ScramCredential(salt, hashlib.new(h, client_key).digest(), _hmac(h, salted, b"Server Key"), iterations)


def credential_from_password(mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                             salt: bytes | None = None) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    return credential_from_salted_password(mechanism, salted_password(mechanism, password, salt, iterations),
                                           salt, iterations)


def password_matches(mechanism: str, credential: ScramCredential, password: str | bytes) -> bool:
    """Whether ``password`` is the one ``credential`` was made from (constant time in the comparison)."""
    candidate = credential_from_salted_password(
        mechanism, salted_password(mechanism, password, credential.salt, credential.iterations),
        credential.salt, credential.iterations)
    return hmac.compare_digest(candidate.stored_key, credential.stored_key)


def fake_credential(mechanism: str, user: str, secret: bytes) -> ScramCredential:
    """The credential shown to an unknown user: a stable salt, keys that match no proof."""
    h = MECHANISMS[mechanism]
    salt = _hmac(h, secret, b"salt:" + user.encode())[:32]
    return ScramCredential(salt, secrets.token_bytes(hashlib.new(h).digest_size),
                           secrets.token_bytes(hashlib.new(h).digest_size), MIN_ITERATIONS)


def _decode_saslname(name: str) -> str:
    """RFC 5802's saslname: ``=2C`` is ``,`` and ``=3D`` is ``=``; any other ``=`` is an error."""
    out, i = [], 0
    while i < len(name):
        if name[i] == "=":
            code = name[i + 1:i + 3]
            if code not in ("2C", "3D"):
                raise AuthenticationError("Invalid SCRAM client first message: invalid user name encoding")
            out.append("," if code == "2C" else "=")
            i += 3
        else:
            out.append(name[i])
            i += 1
    return "".join(out)


def _extensions(text: str) -> dict[str, str]:
    """The SCRAM extensions after ``r=nonce`` in the client-first message (RFC 5802 ``extensions``, which
    Kafka uses for ``tokenauth=true``): ``key=value`` pairs separated by commas."""
    out = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise AuthenticationError("Invalid SCRAM client first message: malformed extension")
        out[key] = value
    return out


@dataclass(frozen=True, slots=True)
class TokenCredential:
    """What a ``tokenauth`` exchange checks: the SCRAM credential derived from the token's HMAC, the
    token's owner (the session's user) and its expiry timestamp (ms)."""

    credential: ScramCredential
    owner: str
    expiry_timestamp: int


def _attributes(message: str, what: str) -> list[tuple[str, str]]:
    out = []
    for item in message.split(","):
        key, sep, value = item.partition("=")
        if not sep or len(key) != 1:
            raise AuthenticationError(f"Invalid SCRAM {what} message: malformed attribute")
        out.append((key, value))
    return out


class ScramServer:
    """The server side of one SCRAM exchange (one per authentication). :meth:`step` takes each client
    message and returns the reply; :attr:`user` is set once the exchange succeeded."""

    def __init__(self, mechanism: str, lookup, secret: bytes, nonce: str | None = None, token_lookup=None) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"{mechanism} is not a SCRAM mechanism")
        self.mechanism = mechanism
        self._hash = MECHANISMS[mechanism]
        self._lookup = lookup  # user -> ScramCredential | None
        # token id -> TokenCredential | None (None: delegation tokens are disabled)
        self._token_lookup = token_lookup
        self._token: TokenCredential | None = None
        self._secret = secret
        self._server_nonce = nonce or secrets.token_urlsafe(24)
        self._state = "client-first"
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._client_nonce = ""
        self._credential: ScramCredential | None = None
        self._known = False
        self.user: str | None = None
        #: Set once a ``tokenauth=true`` exchange succeeded: the user is the token's owner.
        self.token_authenticated = False
        self.token_expiry_ms: int | None = None

    @property
    def complete(self) -> bool:
        return self._state == "done"

    def step(self, message: bytes) -> bytes:
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationError("Invalid SCRAM message: not UTF-8") from None
        if self._state == "client-first":
            return self._client_first(text)
        if self._state == "client-final":
            return self._client_final(text)
        raise AuthenticationError("Unexpected SCRAM message after the exchange completed")

    def _client_first(self, text: str) -> bytes:
        # gs2-header: "n," or "y," (no channel binding; "p=" asks for it, which Kafka does not offer),
        # then an optional "a=authzid", then ",".
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y"):
            raise AuthenticationError("Invalid SCRAM client first message: channel binding is not supported")
        authzid = parts[1]
        if authzid and not authzid.startswith("a="):
            raise AuthenticationError("Invalid SCRAM client first message: malformed authorization id")
        bare = parts[2]
        head, sep, tail = bare.partition(",r=")
        attrs = [*_attributes(head, "client first"), ("r", tail.split(",", 1)[0])] if sep else []
        if len(attrs) != 2 or attrs[0][0] != "n" or not attrs[1][1]:
            raise AuthenticationError("Invalid SCRAM client first message: expected n=user,r=nonce")
        extensions = _extensions(tail.split(",", 1)[1] if "," in tail else "")
        user = _decode_saslname(attrs[0][1])
        if not user:
            raise AuthenticationError("Invalid SCRAM client first message: empty user name")
        if authzid and _decode_saslname(authzid[2:]) != user:
            raise AuthenticationError("Authentication failed: Client requested an authorization id that is "
                                      "different from username")
        if extensions.get("tokenauth", "").lower() == "true":  # Kafka's ScramExtensions.tokenAuthenticated
            # the user is a delegation token's id; the password, the token's HMAC in base64
            self._token = self._token_lookup(user) if self._token_lookup is not None else None
            credential = self._token.credential if self._token is not None else None
        else:
            credential = self._lookup(user)
        self._known = credential is not None
        self._credential = credential or fake_credential(self.mechanism, user, self._secret)
        self.user = None
        self._pending_user = user
        self._gs2_header = f"{parts[0]},{authzid},"
        self._client_first_bare = bare
        self._client_nonce = attrs[1][1]
        self._nonce = self._client_nonce + self._server_nonce
        salt = base64.b64encode(self._credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={self._credential.iterations}"
        self._state = "client-final"
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        self._state = "failed"
        attrs = _attributes(text, "client final")
        if len(attrs) < 3 or attrs[0][0] != "c" or attrs[1][0] != "r" or attrs[-1][0] != "p":
            raise AuthenticationError("Invalid SCRAM client final message: expected c=...,r=...,p=...")
        try:
            binding = base64.b64decode(attrs[0][1], validate=True)
            proof = base64.b64decode(attrs[-1][1], validate=True)
        except ValueError:
            raise AuthenticationError("Invalid SCRAM client final message: bad base64") from None
        if binding != self._gs2_header.encode():
            raise AuthenticationError("Invalid SCRAM client final message: channel binding does not match")
        if attrs[1][1] != self._nonce:
            # Kafka 4.x compares the nonces exactly (3.8.1-3.9 accepted any nonce ending with the right
            # one) and tells the client no more than for a wrong password; the log says which clients.
            repeated = attrs[1][1] == self._client_nonce + self._nonce
            raise AuthenticationError(self.failure_message(), OLD_LIBRDKAFKA_NONCE if repeated else
                                      "the nonce of the client's final message is not the one the server sent")
        assert self._credential is not None
        without_proof = text[: text.rindex(",p=")]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self._hash, self._credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise AuthenticationError(self.failure_message())
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        valid = hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), self._credential.stored_key)
        if not (valid and self._known):
            raise AuthenticationError(self.failure_message())
        if self._token is not None:
            self.user = self._token.owner
            self.token_authenticated = True
            self.token_expiry_ms = self._token.expiry_timestamp
        else:
            self.user = self._pending_user
        self._state = "done"
        server_signature = _hmac(self._hash, self._credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)

    def failure_message(self) -> str:
        return f"Authentication failed during authentication due to invalid credentials with SASL mechanism " \
               f"{self.mechanism}"


__all__ = [
    "MAX_ITERATIONS",
    "MECHANISMS",
    "MECHANISM_CODES",
    "MECHANISM_TYPES",
    "MIN_ITERATIONS",
    "OLD_LIBRDKAFKA_NONCE",
    "AuthenticationError",
    "ScramCredential",
    "ScramServer",
    "TokenCredential",
    "credential_from_password",
    "credential_from_salted_password",
    "fake_credential",
    "password_matches",
    "salted_password",
]
