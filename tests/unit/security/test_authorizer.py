"""The authorizer's semantics (Kafka's StandardAuthorizer): super users, DENY over ALLOW, implied
operations, wildcard principal/host/resource, prefixes, the no-ACL default, authorizeByResourceType,
and the ACL filters of DescribeAcls/DeleteAcls."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    authorized_operations,
    invalid_acl_reason,
)
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.security.principal import KafkaPrincipal

Op, Perm, Pat, Res = AclOperation, AclPermissionType, PatternType, ResourceType
ALLOW, DENY = Perm.ALLOW, Perm.DENY


@dataclass
class Who:
    principal: KafkaPrincipal
    client_host: str = "127.0.0.1"


ALICE = Who(KafkaPrincipal("User", "alice"))
BOB = Who(KafkaPrincipal("User", "bob"))


def acl(op: Op, perm: Perm = ALLOW, name: str = "orders", *, res: Res = Res.TOPIC, pat: Pat = Pat.LITERAL,
        principal: str = "User:alice", host: str = "*") -> AclBinding:
    return AclBinding(res, name, pat, principal, host, op, perm)


def authorizer(*acls: AclBinding, **kw) -> Authorizer:
    frozen = frozenset(acls)
    return Authorizer(lambda: frozen, **kw)


def test_without_acls_the_default_refuses_unless_allow_everyone_if_no_acl_found() -> None:
    assert not authorizer().authorize(ALICE, Op.READ, Res.TOPIC, "orders")
    assert authorizer(allow_everyone_if_no_acl_found=True).authorize(ALICE, Op.READ, Res.TOPIC, "orders")


def test_an_acl_on_the_resource_for_someone_else_turns_the_default_off() -> None:
    auth = authorizer(acl(Op.READ, principal="User:bob"), allow_everyone_if_no_acl_found=True)
    assert not auth.authorize(ALICE, Op.READ, Res.TOPIC, "orders")
    assert auth.authorize(BOB, Op.READ, Res.TOPIC, "orders")
    assert auth.authorize(ALICE, Op.READ, Res.TOPIC, "payments")  # no ACL covers it


def test_super_users_may_do_everything() -> None:
    auth = authorizer(acl(Op.ALL, DENY, principal="User:*"), super_users=["User:alice"])
    assert auth.authorize(ALICE, Op.DELETE, Res.TOPIC, "orders")
    assert not auth.authorize(BOB, Op.DELETE, Res.TOPIC, "orders")


def test_deny_beats_allow() -> None:
    auth = authorizer(acl(Op.READ), acl(Op.READ, DENY, host="127.0.0.1"))
    assert not auth.authorize(ALICE, Op.READ, Res.TOPIC, "orders")
    assert auth.authorize(Who(ALICE.principal, "10.0.0.1"), Op.READ, Res.TOPIC, "orders")


@pytest.mark.parametrize("granted", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE])
def test_describe_is_implied_by_read_write_delete_alter(granted: Op) -> None:
    assert authorizer(acl(granted)).authorize(ALICE, Op.DESCRIBE, Res.TOPIC, "orders")


def test_describe_configs_is_implied_by_alter_configs_and_nothing_else_is_implied() -> None:
    auth = authorizer(acl(Op.ALTER_CONFIGS))
    assert auth.authorize(ALICE, Op.DESCRIBE_CONFIGS, Res.TOPIC, "orders")
    assert not auth.authorize(ALICE, Op.DESCRIBE, Res.TOPIC, "orders")
    assert not authorizer(acl(Op.READ)).authorize(ALICE, Op.WRITE, Res.TOPIC, "orders")
    assert not authorizer(acl(Op.CREATE)).authorize(ALICE, Op.DESCRIBE, Res.TOPIC, "orders")


def test_a_deny_implies_nothing_but_deny_all_denies_everything() -> None:
    auth = authorizer(acl(Op.ALL), acl(Op.READ, DENY))
    assert not auth.authorize(ALICE, Op.READ, Res.TOPIC, "orders")
    assert auth.authorize(ALICE, Op.DESCRIBE, Res.TOPIC, "orders")
    assert not authorizer(acl(Op.ALL), acl(Op.ALL, DENY)).authorize(ALICE, Op.DESCRIBE, Res.TOPIC, "orders")


def test_wildcards_principal_host_and_resource_name() -> None:
    auth = authorizer(acl(Op.READ, name="*", principal="User:*"))
    assert auth.authorize(BOB, Op.READ, Res.TOPIC, "anything")
    assert auth.authorize(Who(KafkaPrincipal("Group", "x"), "::1"), Op.READ, Res.TOPIC, "x")
    assert not auth.authorize(BOB, Op.READ, Res.GROUP, "anything")


def test_host_acls_match_the_client_address_only() -> None:
    auth = authorizer(acl(Op.WRITE, host="127.0.0.1"))
    assert auth.authorize(ALICE, Op.WRITE, Res.TOPIC, "orders")
    assert not auth.authorize(Who(ALICE.principal, "127.0.0.2"), Op.WRITE, Res.TOPIC, "orders")


def test_prefixed_patterns_cover_names_starting_with_the_prefix() -> None:
    auth = authorizer(acl(Op.READ, name="ord", pat=Pat.PREFIXED), acl(Op.READ, DENY, name="orders-secret",
                                                                       pat=Pat.PREFIXED))
    assert auth.authorize(ALICE, Op.READ, Res.TOPIC, "orders")
    assert auth.authorize(ALICE, Op.READ, Res.TOPIC, "ord")
    assert not auth.authorize(ALICE, Op.READ, Res.TOPIC, "or")
    assert not auth.authorize(ALICE, Op.READ, Res.TOPIC, "orders-secret-1")


def test_a_literal_pattern_named_like_a_prefix_covers_only_that_name() -> None:
    auth = authorizer(acl(Op.READ, name="ord"))
    assert not auth.authorize(ALICE, Op.READ, Res.TOPIC, "orders")


def test_authorized_operations_report_what_the_acls_allow() -> None:
    auth = authorizer(acl(Op.READ), acl(Op.ALTER_CONFIGS))
    assert auth.authorized_operations(ALICE, Res.TOPIC, "orders") == authorized_operations(
        [Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS])
    assert auth.authorized_operations(BOB, Res.TOPIC, "orders") == 0


def test_authorize_by_resource_type() -> None:
    assert authorizer(acl(Op.WRITE, name="t", pat=Pat.PREFIXED)).authorize_by_resource_type(ALICE, Op.WRITE, Res.TOPIC)
    assert not authorizer(acl(Op.READ)).authorize_by_resource_type(ALICE, Op.WRITE, Res.TOPIC)
    # a DENY prefix covering the only ALLOW takes it back; a wildcard DENY takes back everything
    assert not authorizer(acl(Op.WRITE, name="orders"), acl(Op.WRITE, DENY, name="ord", pat=Pat.PREFIXED)
                          ).authorize_by_resource_type(ALICE, Op.WRITE, Res.TOPIC)
    assert not authorizer(acl(Op.WRITE, name="*"), acl(Op.WRITE, DENY, name="*")
                          ).authorize_by_resource_type(ALICE, Op.WRITE, Res.TOPIC)
    assert authorizer(acl(Op.WRITE, name="orders"), acl(Op.WRITE, DENY, name="payments")
                      ).authorize_by_resource_type(ALICE, Op.WRITE, Res.TOPIC)


def test_no_authorizer_allows_everything_and_says_it_is_disabled() -> None:
    assert NO_AUTHORIZER.authorize(ALICE, Op.DELETE, Res.CLUSTER, "kafka-cluster")
    assert not NO_AUTHORIZER.enabled


def test_filters_match_as_kafkas() -> None:
    literal, prefixed, wildcard = acl(Op.READ), acl(Op.READ, name="ord", pat=Pat.PREFIXED), acl(Op.READ, name="*")
    every = [literal, prefixed, wildcard]
    assert [a for a in every if AclBindingFilter().matches(a)] == every
    assert [a for a in every if AclBindingFilter(name="orders").matches(a)] == [literal]
    assert [a for a in every if AclBindingFilter(name="orders", pattern_type=Pat.MATCH).matches(a)] == every
    assert [a for a in every if AclBindingFilter(name="ord", pattern_type=Pat.PREFIXED).matches(a)] == [prefixed]
    assert not AclBindingFilter(principal="User:bob").matches(literal)
    assert not AclBindingFilter(operation=Op.WRITE).matches(literal)
    assert AclBindingFilter(resource_type=Res.TOPIC, permission=ALLOW, host="*").matches(literal)
    assert AclBindingFilter(resource_type=Res.UNKNOWN).unknown_reason


@pytest.mark.parametrize(("binding", "reason"), [
    (acl(Op.ANY), "Invalid operation"),
    (acl(Op.READ, Perm.ANY), "Invalid permissionType"),
    (acl(Op.READ, pat=Pat.MATCH), "Invalid patternType"),
    (acl(Op.READ, res=Res.ANY), "Invalid resourceType"),
    (acl(Op.READ, name=""), "empty resource name"),
    (acl(Op.ALTER, res=Res.CLUSTER, name="other"), "kafka-cluster"),
    (acl(Op.READ, principal="alice"), "principal"),
])
def test_create_acl_validation(binding: AclBinding, reason: str) -> None:
    assert reason in (invalid_acl_reason(binding) or "")


_ops = st.sampled_from([Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.ALTER_CONFIGS,
                        Op.DESCRIBE_CONFIGS, Op.ALL])
_acls = st.builds(acl, _ops, st.sampled_from([ALLOW, DENY]), st.sampled_from(["orders", "ord", "*", "pay"]),
                  pat=st.sampled_from([Pat.LITERAL, Pat.PREFIXED]),
                  principal=st.sampled_from(["User:alice", "User:bob", "User:*"]),
                  host=st.sampled_from(["*", "127.0.0.1", "10.0.0.1"]))


@given(st.lists(_acls, max_size=6), _ops.filter(lambda o: o != Op.ALL), st.sampled_from(["orders", "pay", "x"]))
def test_adding_a_matching_deny_never_grants_and_adding_an_allow_never_refuses_more(acls, op, name) -> None:
    before = authorizer(*acls).authorize(ALICE, op, Res.TOPIC, name)
    deny = acl(op, DENY, name)
    allow = acl(op, ALLOW, name)
    assert not authorizer(*acls, deny).authorize(ALICE, op, Res.TOPIC, name)
    assert authorizer(*acls, allow).authorize(ALICE, op, Res.TOPIC, name) or any(
        a.permission == DENY for a in acls)
    if before:  # ACLs for someone else never take a grant away
        assert authorizer(*acls, acl(Op.ALL, DENY, name, principal="User:bob")).authorize(ALICE, op, Res.TOPIC, name)


_patterns = st.builds(acl, _ops, st.sampled_from([ALLOW, DENY]),
                      st.sampled_from(["", "o", "or", "orders", "*", "pay", "orders-1", "x"]).filter(bool),
                      res=st.sampled_from([Res.TOPIC, Res.GROUP]), pat=st.sampled_from([Pat.LITERAL, Pat.PREFIXED]))


@given(st.frozensets(_patterns, max_size=12), st.sampled_from([Res.TOPIC, Res.GROUP]),
       st.sampled_from(["orders", "orders-1", "o", "*", "pay", "zzz"]))
def test_the_index_finds_exactly_the_acls_whose_pattern_covers_the_resource(acls, res, name) -> None:
    from tidelog.security.authorizer import _AclIndex

    covering = _AclIndex(acls).covering(res, name)
    assert sorted(covering, key=str) == sorted((a for a in acls if a.applies_to(res, name)), key=str)
