"""CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and DescribeDelegationToken on the
suite's PLAINTEXT listener: both brokers refuse token requests in clear text
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) before anything else: before the owner's CREATE_TOKENS check,
the renewers' principal type and whether tokens are enabled at all; Create answers the owner (the
requester's own when none is named) and the requester with -1 timestamps, an empty id and HMAC."""

from __future__ import annotations

from tests.oracle.wire.program import Program
from tidelog.protocol.messages import (
    CreateDelegationTokenRequest,
    DescribeDelegationTokenRequest,
    ExpireDelegationTokenRequest,
    RenewDelegationTokenRequest,
)

Renewer = CreateDelegationTokenRequest.CreatableRenewers
Owner = DescribeDelegationTokenRequest.DescribeDelegationTokenOwner


def add(program: Program) -> None:
    create = CreateDelegationTokenRequest.API_KEY
    program.each_version(create, "plaintext-self", lambda v: CreateDelegationTokenRequest(
        renewers=[Renewer(principal_type="User", principal_name="diff-renewer")], max_lifetime_ms=-1))
    program.each_version(create, "plaintext-bad-renewer", lambda v: CreateDelegationTokenRequest(
        renewers=[Renewer(principal_type="Group", principal_name="g")], max_lifetime_ms=3_600_000))
    for v in program.versions(create):
        if v >= 3:  # the owner fields (KIP-373)
            program.request("plaintext-other-owner", v, CreateDelegationTokenRequest(
                owner_principal_type="User", owner_principal_name="diff-owner", renewers=[], max_lifetime_ms=-1))
    program.each_version(RenewDelegationTokenRequest.API_KEY, "plaintext", lambda v: RenewDelegationTokenRequest(
        hmac=b"\x01" * 64, renew_period_ms=-1))
    program.each_version(ExpireDelegationTokenRequest.API_KEY, "plaintext", lambda v: ExpireDelegationTokenRequest(
        hmac=b"\x01" * 64, expiry_time_period_ms=-1))
    describe = DescribeDelegationTokenRequest.API_KEY
    program.each_version(describe, "plaintext-all", lambda v: DescribeDelegationTokenRequest(owners=None))
    program.each_version(describe, "plaintext-none", lambda v: DescribeDelegationTokenRequest(owners=[]))
    program.each_version(describe, "plaintext-owner", lambda v: DescribeDelegationTokenRequest(
        owners=[Owner(principal_type="User", principal_name="diff-owner")]))


__all__ = ["add"]
