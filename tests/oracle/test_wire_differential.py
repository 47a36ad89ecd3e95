"""The wire-level differential suite: the same raw requests to Apache Kafka and to Tidelog.

One program (tests/oracle/wire/cases: every API both brokers serve except the transactional ones,
at every version both serve, with ordinary and edge-case inputs) runs against a real Kafka broker
and a real ``tidelog serve`` started with the same overrides. Each compared response is normalised
(tests/oracle/wire/normalisation.py) and compared field by field; a difference must be listed in
docs/compat.md ("Differences on the wire"), and every row listed there must still be found, so the
document and the brokers stay in step. docs/compat.md says how it all works.

The program runs once (~1 min on 2 cores against both brokers; docs/compat.md has the figures), in
one test, so that pytest-xdist cannot split it over two workers. Set ``TIDELOG_WIRE_DUMP=path`` to write both brokers' normalised responses as JSON.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass

import pytest

from tests.oracle import compat
from tests.oracle.fixtures import SHARED_OVERRIDES
from tests.oracle.wire import cases
from tests.oracle.wire.cases.generated import TRANSACTIONAL
from tests.oracle.wire.difference import Difference, differences
from tests.oracle.wire.normalisation import RULES
from tests.oracle.wire.program import Program, Session
from tidelog.protocol.api_keys import API_REGISTRY
from tidelog.protocol.messages import ApiVersionsRequest
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("oracle-wire")]


@pytest.fixture(scope="module")
def broker_overrides() -> dict[str, str]:
    """Both brokers at their defaults for feature levels: share groups on, share.version 2 finalized on a
    new cluster in both (Kafka 4.4's format, Tidelog's broker config default)."""
    return dict(SHARED_OVERRIDES)


def api_ranges(bootstrap: str) -> dict[int, tuple[int, int]]:
    """What the broker advertises: api key -> (min, max) version."""
    with WireClient.connect(bootstrap) as client:
        answer = client.request(ApiVersionsRequest(client_software_name="diff", client_software_version="1"), 3)
    assert answer.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}


@dataclass(frozen=True)
class Outcome:
    program: Program
    kafka: Session
    tidelog: Session
    found: list[Difference]


@pytest.fixture(scope="module")
def outcome(kafka_broker, tidelog_broker) -> Outcome:
    program = cases.build(api_ranges(kafka_broker.bootstrap), api_ranges(tidelog_broker.bootstrap))
    kafka = program.run(Session(kafka_broker.bootstrap))
    tidelog = program.run(Session(tidelog_broker.bootstrap))
    found: list[Difference] = []
    for key in program.compared_keys():
        found += differences(key, kafka.results.get(key), tidelog.results.get(key))
    dump = os.environ.get("TIDELOG_WIRE_DUMP")
    if dump:
        with open(dump, "w") as f:
            json.dump({"kafka": kafka.results, "tidelog": tidelog.results,
                       "differences": [vars(d) for d in found]}, f, indent=1, default=str)
    return Outcome(program, kafka, tidelog, found)


def _known(difference: Difference) -> compat.WireDifference | None:
    for row in compat.wire_differences():
        if row.matches(difference.step, difference.path, difference.kafka, difference.tidelog):
            return row
    return None


def _by_api(found: list[Difference]) -> str:
    groups: dict[str, list[Difference]] = defaultdict(list)
    for d in found:
        groups[d.step.split(":")[0]].append(d)
    lines = []
    for api, items in sorted(groups.items()):
        lines.append(f"{api}: {len(items)}")
        lines += [f"  {d}" for d in sorted(items)[:40]]
        if len(items) > 40:
            lines.append(f"  ... and {len(items) - 40} more")
    return "\n".join(lines)


def unlisted_differences(outcome: Outcome) -> str | None:
    unknown = [d for d in outcome.found if _known(d) is None]
    if unknown:
        return (f"{len(unknown)} differences from Kafka not listed in docs/compat.md "
                f"(fix Tidelog, or list them with their reason):\n{_by_api(unknown)}")
    return None


def stale_rows(outcome: Outcome) -> str | None:
    stale = [row.id for row in compat.wire_differences()
             if not any(row.matches(d.step, d.path, d.kafka, d.tidelog) for d in outcome.found)]
    if stale:
        return f"docs/compat.md lists wire differences the suite no longer finds (remove them): {stale}"
    return None


def uncovered_versions(outcome: Outcome) -> str | None:
    """Every non-transactional API both brokers serve, at every version both serve, has a compared
    step; Kafka's APIs Tidelog does not serve are the ones docs/compat.md lists."""
    program = outcome.program
    compared = defaultdict(set)
    for key in program.compared_keys():
        api, _, version = key.partition("@v")
        compared[api.split(":")[0]].add(int(version))
    missing = {}
    for api, entry in API_REGISTRY.items():
        if api in TRANSACTIONAL:
            continue
        wanted = set(program.versions(api))
        if wanted - compared[entry.name]:
            missing[entry.name] = sorted(wanted - compared[entry.name])
    if missing:
        return f"versions with no compared step: {missing}"
    unserved = sorted(API_REGISTRY[a].name if a in API_REGISTRY else str(a)
                      for a in program.kafka_ranges if a not in program.tidelog_ranges and a not in TRANSACTIONAL)
    if sorted(compat.unserved_apis()) != unserved:
        return f"docs/compat.md's list of Kafka APIs Tidelog does not serve is out of date: Kafka's are {unserved}"
    return None


def failed_on_kafka(outcome: Outcome) -> str | None:
    """The program is right for Kafka: no step went unsent or timed out there."""
    broken = {k: v for k, v in outcome.kafka.results.items() if isinstance(v, dict) and (
        "<not sent>" in v or v.get("<connection>") == "no response in time")}
    return f"steps that failed on Kafka (a mistake in the program): {broken}" if broken else None


def test_kafka_and_tidelog_answer_alike(outcome: Outcome) -> None:
    """One test (not one per check), so that pytest-xdist never sets the brokers and the program up
    twice: every difference is listed in docs/compat.md, every listed one still occurs, every API and
    version is compared, and the program ran cleanly on Kafka."""
    problems = [p for check in (failed_on_kafka, uncovered_versions, unlisted_differences, stale_rows)
                if (p := check(outcome)) is not None]
    assert not problems, "\n\n".join(problems)


def test_normalisation_rules_match_compat_md() -> None:
    assert [r.name for r in RULES] == list(compat.load()[2])
