"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554) over the credential store.

The client salts and hashes the password itself (AlterUserScramCredentials carries the salt, the
iteration count and SaltedPassword); the broker derives and stores StoredKey and ServerKey. Errors are
Kafka's: RESOURCE_NOT_FOUND, DUPLICATE_RESOURCE, UNSUPPORTED_SASL_MECHANISM, UNACCEPTABLE_CREDENTIAL.
Authorization (ALTER / DESCRIBE on the cluster) is the authorizer's, not this module's.
"""

from __future__ import annotations

from collections import Counter

from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    ApiKey,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from tidelog.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.security.authorizer import NO_AUTHORIZER, Authorizer
from tidelog.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_CODES,
    MECHANISM_TYPES,
    MIN_ITERATIONS,
    credential_from_salted_password,
)
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import handles

Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
Info = DescribeUserScramCredentialsResponse.CredentialInfo
AlterResult = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
_TWICE = "A user credential cannot be altered twice in the same request"
_CLUSTER_REFUSED = "Cluster authorization failed."


def _java_string_hash(text: str) -> int:
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():  # UTF-16 code units, as Java's String
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def kafka_order(names: list[str], peak: int | None = None) -> list[str]:
    """``names`` (distinct, in insertion order) in the order Kafka's ``java.util.HashMap`` iterates them:
    by bucket (the spread String hash modulo the table size), then by insertion. Kafka answers these
    APIs in that order; answering in the same one keeps the wire comparison with Kafka meaningful."""
    size = 16
    while (peak if peak is not None else len(names)) > size * 3 // 4:
        size *= 2

    def bucket(name: str) -> int:
        h = _java_string_hash(name)
        return (h ^ (h >> 16)) & (size - 1)

    return sorted(names, key=bucket)  # sorted() is stable: insertion order within a bucket


class ScramCredentialHandlers:
    def __init__(self, credentials, authorizer: Authorizer = NO_AUTHORIZER) -> None:
        self.credentials = credentials  # tidelog.cluster.credential_store.CredentialStore
        self.authorizer = authorizer

    @handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0)
    def describe(self, ctx: RequestContext,
                 request: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
        if not self.authorizer.authorize(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
            return DescribeUserScramCredentialsResponse(
                error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), error_message=_CLUSTER_REFUSED, results=[])
        users = self.credentials.users()
        asked = [u.name for u in request.users or []]
        names = list(dict.fromkeys(asked)) if asked else sorted(users)
        counts = Counter(asked)
        results = []
        for name in kafka_order(names):
            if counts[name] > 1:
                results.append(Result(user=name, error_code=int(ErrorCode.DUPLICATE_RESOURCE),
                                      error_message="Cannot describe SCRAM credentials for the same user twice in a "
                                                    f"single request: {name}", credential_infos=[]))
            elif name not in users:
                results.append(Result(user=name, error_code=int(ErrorCode.RESOURCE_NOT_FOUND),
                                      error_message=f"Attempt to describe a user credential that does not exist: "
                                                    f"{name}", credential_infos=[]))
            else:
                infos = [Info(mechanism=MECHANISM_CODES[m], iterations=c.iterations)
                         for m, c in sorted(users[name].items())]
                results.append(Result(user=name, error_code=0, error_message=None, credential_infos=infos))
        return DescribeUserScramCredentialsResponse(error_code=0, error_message=None, results=results)

    @handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0)
    def alter(self, ctx: RequestContext,
              request: AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse:
        """Kafka's rules: a user named twice in one request (in any mix of deletions and upsertions, any
        mechanisms) is refused with DUPLICATE_RESOURCE and none of its changes apply; a user's first
        error is the one reported; results list the deletions, then the upsertions, then the errors.
        Without ALTER on the cluster every user named gets CLUSTER_AUTHORIZATION_FAILED."""
        if not self.authorizer.authorize(ctx, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
            named = [d.name for d in request.deletions or []] + [u.name for u in request.upsertions or []]
            return AlterUserScramCredentialsResponse(results=[
                AlterResult(user=name, error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                            error_message=_CLUSTER_REFUSED) for name in dict.fromkeys(named)])
        existing = self.credentials.users()
        deletions: dict[str, tuple[str, str]] = {}
        upsertions: dict[str, tuple[str, str, object]] = {}
        errors: dict[str, tuple[ErrorCode, str]] = {}
        peak = {"deletions": 0, "upsertions": 0}

        def check(name: str, mechanism_code: int) -> tuple[ErrorCode, str] | None:
            if not name:
                return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
            if mechanism_code not in MECHANISM_TYPES:
                return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
            return None

        for d in request.deletions:
            if d.name in errors:
                continue
            if deletions.pop(d.name, None) is not None:
                errors[d.name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
                continue
            error = check(d.name, d.mechanism)
            if error is None and MECHANISM_TYPES[d.mechanism] not in existing.get(d.name, {}):
                error = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
            if error is not None:
                errors[d.name] = error
            else:
                deletions[d.name] = (d.name, MECHANISM_TYPES[d.mechanism])
                peak["deletions"] = max(peak["deletions"], len(deletions))
        for u in request.upsertions:
            if u.name in errors:
                continue
            if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
                errors[u.name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
                continue
            error = check(u.name, u.mechanism)
            if error is None and u.iterations < MIN_ITERATIONS:
                error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif error is None and u.iterations > MAX_ITERATIONS:
                error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            if error is not None:
                errors[u.name] = error
                continue
            mechanism = MECHANISM_TYPES[u.mechanism]
            upsertions[u.name] = (u.name, mechanism, credential_from_salted_password(
                mechanism, bytes(u.salted_password), bytes(u.salt), u.iterations))
            peak["upsertions"] = max(peak["upsertions"], len(upsertions))
        self.credentials.alter(list(upsertions.values()), list(deletions.values()))
        results = [AlterResult(user=name, error_code=0, error_message=None)
                   for name in kafka_order(list(deletions), peak["deletions"])]
        results += [AlterResult(user=name, error_code=0, error_message=None)
                    for name in kafka_order(list(upsertions), peak["upsertions"])]
        results += [AlterResult(user=name, error_code=int(code), error_message=message)
                    for name in kafka_order(list(errors)) for code, message in [errors[name]]]
        return AlterUserScramCredentialsResponse(results=results)


__all__ = ["ScramCredentialHandlers", "kafka_order"]
