"""Who may use the schema registry (tidelog.web.schema_registry_access) with the real authorizer and real
SCRAM credentials: basic auth parsing and checking (401 for every malformed or wrong credential), the
remembered credential forgotten when the user's credential changes, SUBJECT ACLs (literal, prefixed,
DENY over ALLOW, super users) and CLUSTER ACLs for the global settings."""

from __future__ import annotations

import asyncio
import base64

import pytest
from aiohttp.test_utils import make_mocked_request

from tidelog.schema_registry.errors import RegistryError
from tidelog.security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from tidelog.security.authorizer import Authorizer
from tidelog.security.principal import ANONYMOUS, KafkaPrincipal
from tidelog.security.scram import credential_from_password
from tidelog.web.schema_registry_access import Caller, RegistryAccess

Op, Res = AclOperation, ResourceType


def binding(res: ResourceType, name: str, op: AclOperation, principal: str = "User:alice",
            pattern: PatternType = PatternType.LITERAL,
            permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(res, name, pattern, principal, "*", op, permission)


def request(authorization: str | None):
    return make_mocked_request("GET", "/subjects", headers={} if authorization is None else {
        "Authorization": authorization})


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_basic_auth_is_checked_against_the_scram_credentials() -> None:
    users = {"alice": credential_from_password("SCRAM-SHA-256", "alice-secret")}
    access = RegistryAccess(True, lambda user, mechanism: users.get(user) if mechanism == "SCRAM-SHA-256" else None,
                            Authorizer(lambda: frozenset()))
    caller = asyncio.run(access.caller(request(basic("alice", "alice-secret"))))
    assert caller.principal == KafkaPrincipal("User", "alice")
    for bad in (None, "", "Basic", "Basic !!!", "Bearer x", basic("alice", "wrong"), basic("nobody", "alice-secret"),
                "Basic " + base64.b64encode(b"no-colon").decode(), basic("alice", ""), basic("", "alice-secret")):
        with pytest.raises(RegistryError) as e:
            asyncio.run(access.caller(request(bad)))
        assert (e.value.status, e.value.error_code) == (401, 401), bad
    # remembered, then forgotten when alice's credential changes
    users["alice"] = credential_from_password("SCRAM-SHA-256", "alice-new")
    with pytest.raises(RegistryError):
        asyncio.run(access.caller(request(basic("alice", "alice-secret"))))
    assert asyncio.run(access.caller(request(basic("alice", "alice-new")))).principal.name == "alice"
    del users["alice"]
    with pytest.raises(RegistryError):
        asyncio.run(access.caller(request(basic("alice", "alice-new"))))


def test_without_authentication_every_caller_is_anonymous() -> None:
    access = RegistryAccess(False, lambda user, mechanism: None, Authorizer(lambda: frozenset()))
    assert asyncio.run(access.caller(request(None))).principal == ANONYMOUS


def test_subject_and_cluster_acls() -> None:
    acls = frozenset({
        binding(Res.SUBJECT, "orders-value", Op.WRITE),
        binding(Res.SUBJECT, "pay-", Op.READ, pattern=PatternType.PREFIXED),
        binding(Res.SUBJECT, "pay-secret-value", Op.READ, permission=AclPermissionType.DENY),
        binding(Res.TOPIC, "orders-value", Op.DELETE),  # a topic of that name gives nothing on the subject
        binding(Res.CLUSTER, CLUSTER_NAME, Op.DESCRIBE_CONFIGS),
    })
    access = RegistryAccess(True, lambda user, mechanism: None, Authorizer(lambda: acls, super_users=["User:admin"]))
    alice = Caller(KafkaPrincipal("User", "alice"), "127.0.0.1")
    assert access.allows(alice, Op.WRITE, "orders-value")
    assert access.allows(alice, Op.DESCRIBE, "orders-value")  # WRITE implies DESCRIBE
    assert not access.allows(alice, Op.READ, "orders-value")
    assert not access.allows(alice, Op.DELETE, "orders-value")
    assert access.allows(alice, Op.READ, "pay-in-value")
    assert not access.allows(alice, Op.READ, "pay-secret-value")  # DENY wins over the prefixed ALLOW
    assert access.allows(alice, Op.DESCRIBE_CONFIGS, None) and not access.allows(alice, Op.ALTER_CONFIGS, None)
    with pytest.raises(RegistryError) as e:
        access.check(alice, Op.DELETE, "orders-value")
    assert (e.value.status, e.value.error_code, e.value.message) == (
        403, 40301, "User is denied operation Delete on Subject: orders-value")
    with pytest.raises(RegistryError) as e:
        access.check(alice, Op.ALTER_CONFIGS, None)
    assert e.value.message == "User is denied operation AlterConfigs on Cluster: kafka-cluster"
    admin = Caller(KafkaPrincipal("User", "admin"), "127.0.0.1")
    assert access.allows(admin, Op.DELETE, "anything") and access.allows(admin, Op.ALTER_CONFIGS, None)
