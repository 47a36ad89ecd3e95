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


class ScramCredentialHandlers:
    def __init__(self, credentials) -> None:
        self.credentials = credentials  # tidelog.cluster.credential_store.CredentialStore

    @handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0)
    def describe(self, ctx: RequestContext,
                 request: DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse:
        users = self.credentials.users()
        asked = [u.name for u in request.users or []]
        if not asked:
            names = sorted(users)
        else:
            names = list(dict.fromkeys(asked))
        counts = Counter(asked)
        results = []
        for name in names:
            if counts[name] > 1:
                results.append(Result(user=name, error_code=int(ErrorCode.DUPLICATE_RESOURCE),
                                      error_message="Cannot describe SCRAM credentials for the same user twice in a "
                                                    "single request", credential_infos=[]))
            elif name not in users:
                results.append(Result(user=name, error_code=int(ErrorCode.RESOURCE_NOT_FOUND),
                                      error_message="Attempt to describe a user credential that does not exist",
                                      credential_infos=[]))
            else:
                infos = [Info(mechanism=MECHANISM_CODES[m], iterations=c.iterations)
                         for m, c in sorted(users[name].items())]
                results.append(Result(user=name, error_code=0, error_message=None, credential_infos=infos))
        return DescribeUserScramCredentialsResponse(error_code=0, error_message=None, results=results)

    @handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0)
    def alter(self, ctx: RequestContext,
              request: AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse:
        existing = self.credentials.users()
        keys = Counter([(d.name, d.mechanism) for d in request.deletions]
                       + [(u.name, u.mechanism) for u in request.upsertions])
        errors: dict[str, tuple[ErrorCode, str]] = {}
        order = list(dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions]))

        def refuse(user: str, code: ErrorCode, message: str) -> None:
            errors.setdefault(user, (code, message))

        deletions, upsertions = [], []
        for d in request.deletions:
            mechanism = MECHANISM_TYPES.get(d.mechanism)
            if not d.name:
                refuse(d.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
            elif mechanism is None:
                refuse(d.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
            elif keys[(d.name, d.mechanism)] > 1:
                refuse(d.name, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the "
                                                             "same request")
            elif mechanism not in existing.get(d.name, {}):
                refuse(d.name, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not "
                                                             "exist")
            else:
                deletions.append((d.name, mechanism))
        for u in request.upsertions:
            mechanism = MECHANISM_TYPES.get(u.mechanism)
            if not u.name:
                refuse(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
            elif mechanism is None:
                refuse(u.name, ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
            elif keys[(u.name, u.mechanism)] > 1:
                refuse(u.name, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the "
                                                             "same request")
            elif u.iterations < MIN_ITERATIONS:
                refuse(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif u.iterations > MAX_ITERATIONS:
                refuse(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            elif not u.salt or not u.salted_password:
                refuse(u.name, ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty")
            else:
                upsertions.append((u.name, mechanism, credential_from_salted_password(
                    mechanism, bytes(u.salted_password), bytes(u.salt), u.iterations)))
        # A user with any refused change keeps its credentials as they were (Kafka answers per user).
        self.credentials.alter([u for u in upsertions if u[0] not in errors],
                               [d for d in deletions if d[0] not in errors])
        results = []
        for user in order:
            code, message = errors.get(user, (ErrorCode.NONE, None))
            results.append(AlterResult(user=user, error_code=int(code), error_message=message))
        return AlterUserScramCredentialsResponse(results=results)


__all__ = ["ScramCredentialHandlers"]
