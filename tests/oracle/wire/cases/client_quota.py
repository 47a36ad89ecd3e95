"""AlterClientQuotas and DescribeClientQuotas: validation (entity types and combinations, keys, values,
duplicates, validate_only), the answers read back, and DescribeClientQuotas' filters.

Each version alters its own entities (``diff-q-v<N>-...``) so that versions do not see each other's
quotas; describes match one entity at a time (Kafka builds the entry list from a hash map, so the order
of several entries carries no meaning). The values are far above anything the program sends, so no
later request is throttled, and every quota is removed at the end of the family.
"""

from __future__ import annotations

import time

from tests.oracle.wire.program import Program, Session
from tidelog.protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest

A, D = AlterClientQuotasRequest, DescribeClientQuotasRequest
ALTER = A.API_KEY
DESCRIBE = D.API_KEY
EXACT, DEFAULT, SPECIFIED = 0, 1, 2
BIG = 1e12


def alter(entity: list[tuple[str, str | None]], ops: list[tuple[str, float | None]], *,
          validate_only: bool = False) -> AlterClientQuotasRequest:
    return A(validate_only=validate_only, entries=[A.EntryData(
        entity=[A.EntityData(entity_type=t, entity_name=n) for t, n in entity],
        ops=[A.OpData(key=k, value=v if v is not None else 0.0, remove=v is None) for k, v in ops])])


def describe(components: list[tuple[str, int, str | None]], strict: bool = True) -> DescribeClientQuotasRequest:
    return D(components=[D.ComponentData(entity_type=t, match_type=m, match=n) for t, m, n in components],
             strict=strict)


def add(program: Program) -> None:
    for v in program.versions(ALTER):
        user, client = f"diff-q-v{v}-user", f"diff-q-v{v}-client"
        cases = {
            "user": alter([("user", user)], [("producer_byte_rate", BIG), ("request_percentage", 1000.0)]),
            "user-client": alter([("user", user), ("client-id", client)], [("consumer_byte_rate", BIG)]),
            "client": alter([("client-id", client)], [("controller_mutation_rate", BIG)]),
            "validate-only": alter([("client-id", f"{client}-vo")], [("producer_byte_rate", BIG)], validate_only=True),
            "negative": alter([("user", user)], [("producer_byte_rate", -1.0)]),
            "zero": alter([("user", user)], [("producer_byte_rate", 0.0)]),
            "fractional-long": alter([("user", user)], [("producer_byte_rate", 1.5)]),
            "unknown-key": alter([("user", user)], [("no_such_rate", 1.0)]),
            "ip-key-on-user": alter([("user", user)], [("connection_creation_rate", 1.0)]),
            "unknown-type": alter([("group", "g")], [("producer_byte_rate", BIG)]),
            "empty-entity": alter([], [("producer_byte_rate", BIG)]),
            "empty-name": alter([("user", "")], [("producer_byte_rate", BIG)]),
            "ip-with-user": alter([("ip", "10.0.0.1"), ("user", user)], [("connection_creation_rate", 1.0)]),
            "duplicate-key": alter([("user", user)], [("producer_byte_rate", BIG), ("producer_byte_rate", None)]),
            "remove-missing": alter([("client-id", f"{client}-none")], [("producer_byte_rate", None)]),
        }
        for case, request in cases.items():
            program.request(case, v, request)
        _read_back(program, f"after-v{v}", [("user", EXACT, user)], strict=True)
        _read_back(program, f"after-v{v}-pair", [("user", EXACT, user), ("client-id", EXACT, client)], strict=True)
        _read_back(program, f"after-v{v}-validate-only", [("client-id", EXACT, f"{client}-vo")], strict=True)
    top = program.versions(ALTER)[-1] if program.versions(ALTER) else None
    if top is None:
        return
    user, client = f"diff-q-v{top}-user", f"diff-q-v{top}-client"
    filters = {
        "exact-user-strict": ([("user", EXACT, user)], True),
        "exact-client-strict": ([("client-id", EXACT, client)], True),
        "default-user": ([("user", DEFAULT, None)], False),
        "no-such-user": ([("user", EXACT, "diff-q-nobody")], False),
        "empty-type": ([("", SPECIFIED, None)], False),
        "unknown-type": ([("group", SPECIFIED, None)], False),
        "twice": ([("user", SPECIFIED, None), ("user", EXACT, user)], False),
        "exact-null": ([("user", EXACT, None)], False),
        "default-with-match": ([("user", DEFAULT, "x")], False),
        "specified-with-match": ([("user", SPECIFIED, "x")], False),
        "unknown-match-type": ([("user", 7, None)], False),
        "ip-and-user": ([("ip", SPECIFIED, None), ("user", SPECIFIED, None)], False),
    }
    for v in program.versions(DESCRIBE):
        for case, (components, strict) in filters.items():
            program.request(case, v, describe(components, strict))
    for v in program.versions(ALTER):
        user, client = f"diff-q-v{v}-user", f"diff-q-v{v}-client"
        program.request(f"cleanup-v{v}-user", v, alter([("user", user)], [("producer_byte_rate", None),
                                                                          ("request_percentage", None)]), compare=False)
        program.request(f"cleanup-v{v}-pair", v, alter([("user", user), ("client-id", client)],
                                                       [("consumer_byte_rate", None)]), compare=False)
        program.request(f"cleanup-v{v}-client", v, alter([("client-id", client)], [("controller_mutation_rate", None)]),
                        compare=False)


def _read_back(program: Program, case: str, components: list[tuple[str, int, str | None]], strict: bool) -> None:
    version = program.top(DESCRIBE)
    request = describe(components, strict)

    def settle(session: Session, interval: float = 0.05, tries: int = 40) -> None:
        # Kafka's broker applies a quota change when the controller's record reaches it, a moment after
        # AlterClientQuotas is answered: read until two answers in a row agree (not behaviour under test).
        last = session.call(request, version)
        for _ in range(tries):
            time.sleep(interval)
            answer = session.call(request, version)
            if answer == last:
                return
            last = answer

    program.action(f"settle-quotas-{case}", settle)
    program.request(case, version, request)


__all__ = ["add"]
