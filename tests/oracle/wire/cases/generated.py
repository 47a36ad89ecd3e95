"""Generated from the codec alone: every API both brokers serve, at every version, with the
request every field of which has its schema default (an empty topic list, an empty group id, ...).

What a broker does with a request nobody filled in is the first edge case of every API: empty
lists must give empty answers, empty ids the right error code. Produce with its default acks=0
gets no answer (the step checks that the connection survives it instead), also in the versions
Kafka advertises without serving them. The transactional APIs are another engineer's work in
progress and are left out here, and so is the default InitProducerId's empty transactional id.
"""

from __future__ import annotations

from tests.oracle.wire.program import Program
from tidelog.protocol.api_keys import API_REGISTRY, ApiKey

#: APIs of transactions (in progress elsewhere): not compared by this suite yet.
TRANSACTIONAL = frozenset({
    ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN, ApiKey.WRITE_TXN_MARKERS,
    ApiKey.TXN_OFFSET_COMMIT, ApiKey.DESCRIBE_TRANSACTIONS, ApiKey.LIST_TRANSACTIONS, ApiKey.DESCRIBE_PRODUCERS,
})


def add(program: Program) -> None:
    for api, entry in sorted(API_REGISTRY.items()):
        if api in TRANSACTIONAL:
            continue
        for version in program.advertised_not_served(api) + program.versions(api):
            request = entry.request()
            if api == ApiKey.INIT_PRODUCER_ID:
                request.transactional_id = None  # the default "" is a transactional id (not ours to test)
            program.request("defaults", version, request, no_response=api == ApiKey.PRODUCE)


__all__ = ["TRANSACTIONAL", "add"]
