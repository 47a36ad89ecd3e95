"""Who may use the schema registry's REST API (docs/schema-registry.md, "Authentication and authorization").

* Authentication: as the console's (``console.authentication``, by default ``sasl`` when the broker has an
  authorizer): with ``sasl`` every request carries HTTP basic auth with a SASL user's name and password,
  checked against the broker's SCRAM credential store as SASL/PLAIN checks them
  (:class:`~tidelog.security.plain.PlainServer`: constant-time, the same work for an unknown user);
  without it the answer is 401 with Confluent's body and a ``WWW-Authenticate: Basic`` challenge. With
  ``none`` every request is ``User:ANONYMOUS``. A credential that checked out is remembered (a digest of
  the password, bound to the user's stored key: a changed or deleted user is checked again) so that a
  client sending it on every request does not pay PBKDF2 each time.
* Authorization: the broker's authorizer, on the resource type ``SUBJECT`` (Tidelog's own:
  :data:`~tidelog.security.acl.ResourceType.SUBJECT`) for what concerns one subject, and on the CLUSTER
  for the global config and mode. Without an authorizer everything is allowed.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from tidelog.schema_registry.errors import RegistryError
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import Authorizer
from tidelog.security.plain import PLAIN_VERIFIERS, PlainServer
from tidelog.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from tidelog.security.scram import AuthenticationError, ScramCredential

#: ``lookup(user, mechanism)``: the user's SCRAM credential (the broker's credential store's ``get``).
Lookup = Callable[[str, str], ScramCredential | None]
MAX_FIELD = 1024
MAX_REMEMBERED = 10_000
REALM = 'Basic realm="tidelog schema registry"'

#: Operation names as Confluent's messages print them.
_NAMES = {AclOperation.READ: "Read", AclOperation.WRITE: "Write", AclOperation.DELETE: "Delete",
          AclOperation.DESCRIBE: "Describe", AclOperation.DESCRIBE_CONFIGS: "DescribeConfigs",
          AclOperation.ALTER_CONFIGS: "AlterConfigs"}


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks (the authorizer's :class:`~tidelog.security.authorizer.Requester`)."""

    principal: KafkaPrincipal
    client_host: str


def unauthorized(message: str = "Unauthorized") -> RegistryError:
    return RegistryError(401, 401, message)


def forbidden(operation: AclOperation, resource_type: ResourceType, name: str) -> RegistryError:
    what = "Subject" if resource_type == ResourceType.SUBJECT else "Cluster"
    return RegistryError(403, 40301, f"User is denied operation {_NAMES.get(operation, operation.name)} "
                                     f"on {what}: {name}")


class RegistryAccess:
    def __init__(self, authenticate: bool, lookup: Lookup, authorizer: Authorizer) -> None:
        self.authenticate = authenticate
        self._lookup = lookup
        self.authorizer = authorizer
        self._remembered: dict[tuple[str, bytes], bytes] = {}  # (user, password digest) -> stored key

    async def caller(self, request: web.Request) -> Caller:
        """The request's caller; a missing or wrong credential raises 401."""
        host = request.remote or ""
        if not self.authenticate:
            return Caller(ANONYMOUS, host)
        header = request.headers.get("Authorization", "")
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic" or not encoded.strip():
            raise unauthorized()
        try:
            user, colon, password = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise unauthorized() from None
        if (not colon or not user or not password or len(user) > MAX_FIELD or len(password) > MAX_FIELD
                or "\x00" in user or "\x00" in password):
            raise unauthorized()
        found = {m: self._lookup(user, m) for m in PLAIN_VERIFIERS}
        stored = next((c.stored_key for c in found.values() if c is not None), None)
        digest = hashlib.sha256(password.encode()).digest()
        remembered = self._remembered.get((user, digest))
        if stored is None or remembered is None or not hmac.compare_digest(remembered, stored):
            plain = PlainServer(lambda u, m: found.get(m))
            try:  # PBKDF2 in a worker thread, off the loop
                await asyncio.to_thread(plain.step, b"\x00" + user.encode() + b"\x00" + password.encode())
            except AuthenticationError:
                raise unauthorized() from None
            if len(self._remembered) >= MAX_REMEMBERED:
                self._remembered.clear()
            assert stored is not None
            self._remembered[(user, digest)] = stored
        return Caller(KafkaPrincipal(USER_TYPE, user), host)

    def allows(self, caller: Caller, operation: AclOperation, subject: str | None) -> bool:
        """May ``caller`` perform ``operation`` on ``subject`` (None: the registry's global settings)?"""
        if subject is None:
            return self.authorizer.authorize(caller, operation, ResourceType.CLUSTER, CLUSTER_NAME)
        return self.authorizer.authorize(caller, operation, ResourceType.SUBJECT, subject)

    def check(self, caller: Caller, operation: AclOperation, subject: str | None) -> None:
        if not self.allows(caller, operation, subject):
            raise forbidden(operation, ResourceType.SUBJECT if subject is not None else ResourceType.CLUSTER,
                            subject if subject is not None else CLUSTER_NAME)


#: Everything allowed to everyone: the registry without authentication or authorizer (and unit tests).
def open_access() -> RegistryAccess:
    from tidelog.security.authorizer import NO_AUTHORIZER

    return RegistryAccess(False, lambda user, mechanism: None, NO_AUTHORIZER)


__all__ = ["REALM", "Caller", "RegistryAccess", "forbidden", "open_access", "unauthorized"]
