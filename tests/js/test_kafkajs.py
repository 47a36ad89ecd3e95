"""JavaScript clients against a real ``tidelog serve``: kafkajs on its own (admin, producer, a consumer
group; the API versions it negotiates are recorded in docs/compat.md), and
``@kafkajs/confluent-schema-registry`` with kafkajs end to end through the broker and its built-in
registry: Avro and JSON Schema registered, an allowed and a refused evolution each, records encoded with
the client's wire format to a topic that validates schema ids (``confluent.value.schema.validation``; a
plain record refused) and decoded back by a fresh client from the id each carries.

The scripts (smoke.js, schemas.js) print one JSON line per step; the assertions are here."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.fixtures import FAST_GROUPS
from tidelog.testing import BrokerProcess

HERE = Path(__file__).resolve().parent
#: the module's broker (tests/fixtures.py): a classic group's first rebalance after 300 ms
BROKER_OVERRIDES = {"group.initial.rebalance.delay.ms": "300", **FAST_GROUPS}


def run(node_modules: Path, script: str, **options: str) -> dict[str, list[dict]]:
    """Run ``script`` to completion (exit 0); its JSON lines by step."""
    command = ["node", str(HERE / script)]
    for name, value in options.items():
        command += [f"--{name}", value]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "NODE_PATH": str(node_modules)})
    assert proc.returncode == 0, f"{script} exited {proc.returncode}:\n{proc.stderr}"
    steps: dict[str, list[dict]] = {}
    for line in proc.stdout.splitlines():
        item = json.loads(line)
        steps.setdefault(item["step"], []).append(item)
    return steps


def test_kafkajs_produces_and_consumes_in_a_group(node_modules: Path, broker: BrokerProcess) -> None:
    count = 20
    steps = run(node_modules, "smoke.js", brokers=broker.bootstrap, topic="js-smoke", count=str(count))
    assert steps["created"] == [{"step": "created", "created": True, "partitions": 2}]
    assert [(r["partition"], r["errorCode"], r["baseOffset"]) for r in steps["produced"][0]["results"]] == [
        (0, 0, "0"), (1, 0, "0")]
    consumed = steps["consumed"]
    assert sorted((c["partition"], c["offset"]) for c in consumed) == sorted(
        (i % 2, i // 2) for i in range(count)), "every record once, in its partition's order"
    for c in consumed:
        i = int(c["key"][1:])
        assert (c["partition"], c["offset"], c["value"], c["header"]) == (i % 2, i // 2, f"v{i}", str(i))
    versions = steps["requests"][0]["versions"]
    # what kafkajs 2.2.4 negotiates with Tidelog (docs/compat.md): its highest versions of each API
    assert versions == {"ApiVersions": [2], "Metadata": [6], "CreateTopics": [3], "Produce": [7],
                        "GroupCoordinator": [2], "JoinGroup": [5], "SyncGroup": [3], "OffsetFetch": [4],
                        "ListOffsets": [3], "Fetch": [11], "OffsetCommit": [5], "LeaveGroup": [3]}


@pytest.mark.parametrize("kind", ["avro", "json"])
def test_confluent_schema_registry_client_end_to_end(node_modules: Path, broker: BrokerProcess, kind: str) -> None:
    assert broker.schema_registry_url is not None
    topic = f"js-sr-{kind}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"confluent.value.schema.validation": "true"})])[topic].result(60)
    steps = run(node_modules, "schemas.js", brokers=broker.bootstrap, registry=broker.schema_registry_url,
                topic=topic, type=kind)

    first = steps["register-v1"][0]
    assert first["again_id"] == first["id"] and first["compatibility"] == "BACKWARD"
    assert steps["check-allowed"][0]["compatible"] is True
    assert steps["check-refused"][0]["compatible"] is False
    refused = steps["register-refused"][0]
    assert refused["status"] == 409 and "incompatible" in refused["error"]
    second = steps["register-v2"][0]
    assert second["id"] > first["id"] and (second["latest"], second["latest_id"]) == (2, second["id"])

    assert [(p["schema_id"], p["offset"], p["error"]) for p in steps["produce"]] == [
        (first["id"], 0, ""), (second["id"], 1, "")]
    plain = steps["produce-plain"][0]
    assert plain["type"] == "INVALID_RECORD", plain
    assert [(c["offset"], c["schema_id"], c["value"]) for c in steps["consume"]] == [
        (0, first["id"], {"name": "ada"}), (1, second["id"], {"name": "grace", "age": 36})]
