"""The authorizer: may this principal, from this host, perform this operation on this resource?

Kafka's StandardAuthorizer semantics, over the ACL bindings the metadata store holds (handed in as a
callable, so the answer always follows the current metadata image):

* a principal listed in ``super.users`` may do everything;
* otherwise the ACLs whose pattern covers the resource are looked at (a LITERAL pattern of the same
  name or of the name ``*``, a PREFIXED pattern the name starts with). Of those, the ones for the
  principal or ``User:*``, from the client's address or ``*``, and for the operation (or ALL) decide:
  any DENY refuses, else any ALLOW permits. An ALLOW of READ, WRITE, DELETE or ALTER also permits
  DESCRIBE, and an ALLOW of ALTER_CONFIGS also permits DESCRIBE_CONFIGS (DENY implies nothing);
* when NO ACL covers the resource at all, ``allow.everyone.if.no.acl.found`` decides (default: refuse);
  when ACLs cover it but none grants, the answer is no.

:meth:`Authorizer.authorize_by_resource_type` answers "may the principal do this on SOME resource of
the type" (Kafka's default ``authorizeByResourceType``: InitProducerId of an idempotent producer asks
it about WRITE on topics). :data:`NO_AUTHORIZER` is the broker without ``authorizer.class.name``: it
allows everything and reports itself disabled (the ACL APIs then answer SECURITY_DISABLED).

Pure and synchronous: no I/O. Safe from any thread as long as the ACL source is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from tidelog.security.acl import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    authorized_operations,
    supported_operations,
)
from tidelog.security.principal import KafkaPrincipal

log = logging.getLogger("tidelog.authorizer")

_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                               AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


class Requester(Protocol):
    """Who asks: the request context of a handler (a principal and the client's address)."""

    @property
    def principal(self) -> KafkaPrincipal: ...

    @property
    def client_host(self) -> str: ...


def _grants(acl: AclBinding, operation: AclOperation) -> bool:
    """Whether ``acl``'s operation covers ``operation`` (ALL always; implications for ALLOW only)."""
    if acl.operation in (AclOperation.ALL, operation):
        return True
    if acl.permission != AclPermissionType.ALLOW:
        return False
    if operation == AclOperation.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    if operation == AclOperation.DESCRIBE_CONFIGS:
        return acl.operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


class Authorizer:
    """Answers authorization questions from the ACLs ``acls()`` returns (a frozenset, replaced whole
    when ACLs change: the per-resource-type index is rebuilt when its identity changes)."""

    enabled = True

    def __init__(self, acls: Callable[[], frozenset[AclBinding]], super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self._acls = acls
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._indexed: frozenset[AclBinding] | None = None
        self._by_index = _AclIndex(frozenset())

    # ------------------------------------------------------------------------------ questions

    def authorize(self, who: Requester, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        principal = str(who.principal)
        if principal in self.super_users:
            return True
        allowed = self._decide(principal, who.client_host, operation, resource_type, name)
        if not allowed:
            log.debug("Principal = %s is Denied operation = %s from host = %s on resource = %s:LITERAL:%s",
                      principal, operation.name, who.client_host, resource_type.name, name)
        return allowed

    def authorize_by_resource_type(self, who: Requester, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """Whether ``who`` may perform ``operation`` on at least one resource of ``resource_type``:
        a wildcard ALLOW, or an ALLOW pattern no DENY of a shorter-or-equal prefix (or the same
        literal) takes back; a wildcard DENY refuses everything."""
        if self.authorize(who, operation, resource_type, "hardcode"):
            return True
        principal, host = str(who.principal), who.client_host
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allow: list[AclBinding] = []
        wildcard_allow = False
        for acl in self._of_type(resource_type):
            if acl.host not in (WILDCARD, host) or acl.principal not in (principal, WILDCARD_PRINCIPAL):
                continue
            if acl.operation not in (operation, AclOperation.ALL):
                continue
            if acl.permission == AclPermissionType.DENY:
                if acl.pattern_type == PatternType.LITERAL and acl.name == WILDCARD:
                    return False
                (deny_literal if acl.pattern_type == PatternType.LITERAL else deny_prefixed).add(acl.name)
            elif acl.permission == AclPermissionType.ALLOW:
                if acl.pattern_type == PatternType.LITERAL and acl.name == WILDCARD:
                    wildcard_allow = True  # decided after the loop: a wildcard DENY still wins
                    continue
                allow.append(acl)
        if wildcard_allow:
            return True
        for acl in allow:
            if acl.pattern_type == PatternType.LITERAL and acl.name in deny_literal:
                continue
            if not any(acl.name[:i] in deny_prefixed for i in range(1, len(acl.name) + 1)):
                return True
        return False

    def authorized_operations(self, who: Requester, resource_type: ResourceType, name: str) -> int:
        """The authorized-operations bit set of a resource for ``who``."""
        return authorized_operations(op for op in supported_operations(resource_type)
                                     if self.authorize(who, op, resource_type, name))

    def acls(self, acl_filter: AclBindingFilter | None = None) -> list[AclBinding]:
        """The ACL bindings ``acl_filter`` matches (all without one)."""
        return [acl for acl in self._acls() if acl_filter is None or acl_filter.matches(acl)]

    # ------------------------------------------------------------------------------ internals

    def _decide(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                name: str) -> bool:
        covering = self._index().covering(resource_type, name)
        if not covering:
            return self.allow_everyone_if_no_acl_found
        allowed = False
        for acl in covering:
            if acl.principal not in (principal, WILDCARD_PRINCIPAL) or acl.host not in (WILDCARD, host):
                continue
            if not _grants(acl, operation):
                continue
            if acl.permission == AclPermissionType.DENY:
                return False
            allowed = allowed or acl.permission == AclPermissionType.ALLOW
        return allowed

    def _of_type(self, resource_type: ResourceType) -> tuple[AclBinding, ...]:
        return self._index().by_type.get(resource_type, ())

    def _index(self) -> _AclIndex:
        acls = self._acls()
        if acls is not self._indexed:
            self._by_index = _AclIndex(acls)
            self._indexed = acls
        return self._by_index


class _AclIndex:
    """The ACLs by resource type, by literal name and by prefix, so that finding the ACLs covering a
    resource costs a few dictionary lookups (one per prefix length in use), not a scan of every ACL."""

    def __init__(self, acls: frozenset[AclBinding]) -> None:
        by_type: dict[ResourceType, list[AclBinding]] = {}
        literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        prefixed: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        lengths: dict[ResourceType, set[int]] = {}
        for acl in acls:
            by_type.setdefault(acl.resource_type, []).append(acl)
            if acl.pattern_type == PatternType.LITERAL:
                literal.setdefault((acl.resource_type, acl.name), []).append(acl)
            elif acl.pattern_type == PatternType.PREFIXED:
                prefixed.setdefault((acl.resource_type, acl.name), []).append(acl)
                lengths.setdefault(acl.resource_type, set()).add(len(acl.name))
        self.by_type = {t: tuple(a) for t, a in by_type.items()}
        self._literal = {k: tuple(a) for k, a in literal.items()}
        self._prefixed = {k: tuple(a) for k, a in prefixed.items()}
        self._lengths = {t: sorted(ls) for t, ls in lengths.items()}

    def covering(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """Every ACL whose pattern covers the resource: its literal name, the ``*`` name, its prefixes."""
        found = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD:
            found += self._literal.get((resource_type, WILDCARD), ())
        for length in self._lengths.get(resource_type, ()):
            if length > len(name):
                break
            found += self._prefixed.get((resource_type, name[:length]), ())
        return found


class _NoAuthorizer(Authorizer):
    """No ``authorizer.class.name``: everything is allowed; the ACL APIs are disabled."""

    enabled = False

    def __init__(self) -> None:
        super().__init__(frozenset)

    def authorize(self, who: Requester, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return True

    def authorize_by_resource_type(self, who: Requester, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        return True


NO_AUTHORIZER: Authorizer = _NoAuthorizer()

__all__ = ["NO_AUTHORIZER", "Authorizer", "Requester"]
