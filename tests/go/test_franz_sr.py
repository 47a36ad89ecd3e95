"""franz-go's schema registry client (``pkg/sr``) against Tidelog's registry, end to end through the
broker (``franz-sr`` in tests/go/schemas.go): for Avro, JSON Schema and Protobuf, registration (the
same schema twice is one id), an allowed and a refused evolution (the compatibility endpoint, then a
refused registration: 409), records produced with the serde's wire format to a topic that validates
schema ids (``confluent.value.schema.validation=true``: a record without the framing is refused) and
consumed back, each decoded with the schema its id names."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.go.driver import GO_BROKER_OVERRIDES, GoClients
from tidelog.testing import BrokerProcess

BROKER_OVERRIDES = GO_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)


def validated_topic(broker: BrokerProcess, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics([NewTopic(topic, 1, 1, config={"confluent.value.schema.validation": "true"})])
    futures[topic].result(60)


@pytest.mark.parametrize("kind", ["avro", "json", "protobuf"])
def test_franz_go_sr_evolves_produces_and_consumes(go: GoClients, broker: BrokerProcess, kind: str) -> None:
    assert broker.schema_registry_url is not None
    topic = f"franz-sr-{kind}"
    validated_topic(broker, topic)
    lines, proc = go.run("franz-sr", registry=broker.schema_registry_url, topic=topic, type=kind, timeout=120)
    steps: dict[str, list[dict]] = {}
    for line in lines:
        steps.setdefault(line["step"], []).append(line)

    assert steps["set-compatibility"][0] == {"step": "set-compatibility", "level": "BACKWARD", "error": ""}
    first = steps["register-v1"][0]
    assert first["version"] == 1 and first["id"] > 0
    assert (first["again_id"], first["again_version"]) == (first["id"], 1)  # the same schema: one id, no version

    allowed, refused = steps["check-allowed"][0], steps["check-refused"][0]
    assert refused["compatible"] is False and refused["error"] == ""
    assert refused["messages"], "verbose=true names why"
    assert steps["register-refused"][0]["code"] == 409
    assert allowed["compatible"] is True and allowed["error"] == ""
    assert len(steps["set-compatibility"]) == 1  # version 2 is registered at BACKWARD, for every type
    if kind == "protobuf":  # Confluent's name for the difference and where it is
        assert any('errorType:"FIELD_SCALAR_KIND_CHANGED"' in m and "#/User/1" in m for m in refused["messages"])

    second = steps["register-v2"][0]
    assert second["version"] == 2 and second["versions"] == [1, 2] and second["id"] > first["id"]

    produced = steps["produce"]
    assert [p["error"] for p in produced] == ["", ""]
    assert [p["offset"] for p in produced] == [0, 1]
    plain = steps["produce-plain"][0]["error"]
    assert "INVALID_RECORD" in plain or "invalid" in plain.lower(), plain

    consumed = steps["consume"]
    assert [(c["offset"], c["schema_id"], c["error"]) for c in consumed] == [
        (0, first["id"], ""), (1, second["id"], "")]
    values = [c["value"] for c in consumed]
    if kind == "protobuf":
        assert values == [{"index": [0], "name": "ada"}, {"index": [0], "name": "grace", "age": 36}]
        assert "int32 age = 2;" in consumed[1]["schema"]
    else:
        assert values == [{"name": "ada"}, {"name": "grace", "age": 36}]
        if kind == "avro":
            assert [f["name"] for f in json.loads(consumed[1]["schema"])["fields"]] == ["name", "age"]
    assert proc.returncode == 0
