"""SaslHandshake and SaslAuthenticate on a PLAINTEXT listener (both brokers: ILLEGAL_SASL_STATE), and
DescribeUserScramCredentials / AlterUserScramCredentials (KIP-554): valid changes, and each refusal.
Each user has one mechanism at a time while users are described: Kafka lists a user's mechanisms in an
order that changes from run to run (a HashMap keyed by an enum)."""

from __future__ import annotations

import time

from tests.oracle.wire.program import Program, Session
from tidelog.protocol.messages import (
    AlterUserScramCredentialsRequest,
    DescribeUserScramCredentialsRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)

Upsert = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
Delete = AlterUserScramCredentialsRequest.ScramCredentialDeletion
User = DescribeUserScramCredentialsRequest.UserName
SHA256, SHA512 = 1, 2


def _upsert(name: str, mechanism: int = SHA256, iterations: int = 4096, salt: bytes = b"s" * 16,
            salted: bytes = b"p" * 32) -> Upsert:
    return Upsert(name=name, mechanism=mechanism, iterations=iterations, salt=salt, salted_password=salted)


def _until_users(program: Program, label: str, present: set[str], absent: set[str], timeout: float = 15.0) -> None:
    """Until DescribeUserScramCredentials lists ``present`` and none of ``absent``: Kafka answers an
    AlterUserScramCredentials once the change is in its metadata log and applies it to its broker a
    moment later, so a Describe right after may still see the old users (Tidelog applies it first)."""
    version = program.top(DescribeUserScramCredentialsRequest.API_KEY)

    def run(session: Session) -> None:
        deadline = time.monotonic() + timeout
        while True:
            answer = session.call(DescribeUserScramCredentialsRequest(users=None), version)
            names = {r.user for r in answer.results or []}
            if present <= names and not names & absent:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"SCRAM users on {session.bootstrap} never became {present} without "
                                     f"{absent}: {names}")
            time.sleep(0.1)

    program.action(f"scram-users-{label}", run)


def add(program: Program) -> None:
    program.each_version(SaslHandshakeRequest.API_KEY, "plaintext-listener",
                         lambda v: SaslHandshakeRequest(mechanism="PLAIN"))
    program.each_version(SaslAuthenticateRequest.API_KEY, "plaintext-listener",
                         lambda v: SaslAuthenticateRequest(auth_bytes=b"\x00u\x00p"))
    alter, describe = AlterUserScramCredentialsRequest.API_KEY, DescribeUserScramCredentialsRequest.API_KEY
    for v in program.versions(alter):
        program.request("twice", v, AlterUserScramCredentialsRequest(
            upsertions=[_upsert("diff-alice"), _upsert("diff-alice", SHA512, 8192), _upsert("diff-bob")]))
        program.request("create", v, AlterUserScramCredentialsRequest(
            deletions=[Delete(name="diff-bob", mechanism=SHA256)],
            upsertions=[_upsert("diff-alice", SHA512, 8192), _upsert("diff-carol"), _upsert("diff-bob", SHA512)]))
        program.request("refusals", v, AlterUserScramCredentialsRequest(
            deletions=[Delete(name="diff-nobody", mechanism=SHA256), Delete(name="diff-x", mechanism=9)],
            upsertions=[_upsert("diff-few", iterations=100), _upsert("diff-many", iterations=20000),
                        _upsert("diff-dup"), _upsert("diff-dup"), _upsert("", SHA256)]))
    _until_users(program, "created", {"diff-alice", "diff-bob", "diff-carol"}, set())
    for v in program.versions(describe):
        program.request("named", v, DescribeUserScramCredentialsRequest(
            users=[User(name="diff-alice"), User(name="diff-bob"), User(name="diff-unknown")]))
        program.request("duplicate", v, DescribeUserScramCredentialsRequest(
            users=[User(name="diff-alice"), User(name="diff-alice")]))
    for v in program.versions(alter):
        program.request("delete", v, AlterUserScramCredentialsRequest(
            deletions=[Delete(name="diff-bob", mechanism=SHA256), Delete(name="diff-carol", mechanism=SHA256)]))
    _until_users(program, "deleted", {"diff-alice"}, {"diff-bob", "diff-carol"})
    for v in program.versions(describe):
        program.request("after-delete", v, DescribeUserScramCredentialsRequest(users=None))
    # Both mechanisms of one user in one request (what kafka-configs.sh --add-config / --delete-config
    # 'SCRAM-SHA-256=[...],SCRAM-SHA-512=[...]' sends): Kafka refuses the user as named twice, whatever
    # the mechanisms (DUPLICATE_RESOURCE), and changes nothing of it. Last: the user keeps two mechanisms.
    for v in program.versions(alter):
        program.request("one-mechanism-each", v, AlterUserScramCredentialsRequest(upsertions=[_upsert("diff-erin")]))
        program.request("second-mechanism", v, AlterUserScramCredentialsRequest(
            upsertions=[_upsert("diff-erin", SHA512)]))
    _until_users(program, "two-mechanisms", {"diff-erin"}, set())
    for v in program.versions(alter):
        program.request("both-mechanisms-deleted", v, AlterUserScramCredentialsRequest(
            deletions=[Delete(name="diff-erin", mechanism=SHA256), Delete(name="diff-erin", mechanism=SHA512)]))
        program.request("delete-one-add-other", v, AlterUserScramCredentialsRequest(
            deletions=[Delete(name="diff-erin", mechanism=SHA256)], upsertions=[_upsert("diff-erin", SHA512)]))


__all__ = ["add"]
