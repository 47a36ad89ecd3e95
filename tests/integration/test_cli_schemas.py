"""``tidelog schemas list|get|register|check|delete`` as ``python -m tidelog`` subprocesses against a real
``tidelog serve``'s schema registry (docs/schema-registry.md): what they print, their exit codes, and
Confluent's refusals passed through. What the CLI did is checked with confluent-kafka's
SchemaRegistryClient, never with the CLI's own code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from tidelog.testing import BrokerProcess

pytestmark = pytest.mark.xdist_group("cli_schemas")


def record(*fields: dict) -> str:
    return json.dumps({"type": "record", "name": "User", "namespace": "example", "fields": list(fields)})


NAME = {"name": "name", "type": "string"}
AGE_DEFAULT = {"name": "age", "type": "int", "default": 0}
EMAIL = {"name": "email", "type": "string"}


def schemas(b: BrokerProcess | None, *args: str, stdin: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    url = ["--registry-url", b.schema_registry_url] if b is not None and b.schema_registry_url else []
    return subprocess.run([sys.executable, "-m", "tidelog", "schemas", *args, *url], input=stdin,
                          capture_output=True, text=True, timeout=60, env=dict(os.environ, **(env or {})))


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_register_list_get_check_delete(broker: BrokerProcess, tmp_path: Path) -> None:
    registry = SchemaRegistryClient({"url": broker.schema_registry_url})
    v1 = write(tmp_path / "v1.avsc", record(NAME))
    done = schemas(broker, "register", "cli-users-value", v1)
    assert done.returncode == 0, done.stderr
    first_id = registry.get_latest_version("cli-users-value").schema_id
    assert done.stdout == f"cli-users-value version 1 id {first_id}\n"
    again = schemas(broker, "register", "cli-users-value", "-", stdin=record(NAME))
    assert again.stdout == done.stdout  # the same schema: no new version

    v2 = write(tmp_path / "v2.avsc", record(NAME, AGE_DEFAULT))
    checked = schemas(broker, "check", "cli-users-value", v2)
    assert (checked.returncode, checked.stdout) == (0, "compatible\n"), checked.stderr
    bad = write(tmp_path / "bad.avsc", record(NAME, EMAIL))
    refused = schemas(broker, "check", "cli-users-value", bad)
    assert refused.returncode == 3, refused.stderr
    assert refused.stdout.startswith("incompatible\n") and "email" in refused.stdout
    registered_bad = schemas(broker, "register", "cli-users-value", bad)
    assert registered_bad.returncode == 1 and registered_bad.stdout == ""
    assert registered_bad.stderr.startswith("tidelog schemas register: ") and "(error 409)" in registered_bad.stderr
    assert len(registered_bad.stderr.splitlines()) == 1

    assert schemas(broker, "register", "cli-users-value", v2).stdout.startswith("cli-users-value version 2 id ")
    second_id = registry.get_version("cli-users-value", 2).schema_id  # (get_latest_version is cached)
    json_schema = write(tmp_path / "order.json", json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}}))
    assert schemas(broker, "register", "cli-orders-value", json_schema, "--type", "json").returncode == 0
    assert registry.get_latest_version("cli-orders-value").schema.schema_type == "JSON"

    listed = schemas(broker, "list", "--prefix", "cli-")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert rows[0] == ["SUBJECT", "VERSIONS", "LATEST_ID", "TYPE"]
    assert sorted(rows[1:]) == sorted([["cli-users-value", "1,2", str(second_id), "AVRO"],
                                       ["cli-orders-value", "1", str(registry.get_latest_version(
                                           "cli-orders-value").schema_id), "JSON"]])
    versions = schemas(broker, "list", "cli-users-value")
    assert [line.split() for line in versions.stdout.splitlines()] == [
        ["VERSION", "ID", "TYPE"], ["1", str(first_id), "AVRO"], ["2", str(second_id), "AVRO"]]

    got = schemas(broker, "get", "cli-users-value", "--version", "1")
    assert json.loads(got.stdout) == json.loads(record(NAME))
    by_id = schemas(broker, "get", "--id", str(second_id), "--json")
    assert json.loads(json.loads(by_id.stdout)["schema"]) == json.loads(record(NAME, AGE_DEFAULT))
    missing = schemas(broker, "get", "no-such-subject")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == "tidelog schemas get: Subject 'no-such-subject' not found. (error 40401)\n"

    deleted = schemas(broker, "delete", "cli-users-value", "--version", "1")
    assert deleted.stdout == "cli-users-value: deleted softly version 1\n", deleted.stderr
    assert registry.get_versions("cli-users-value") == [2]
    assert schemas(broker, "delete", "cli-users-value").stdout == "cli-users-value: deleted softly version 2\n"
    assert "cli-users-value" not in registry.get_subjects()
    with_deleted = schemas(broker, "list", "--prefix", "cli-users", "--deleted")
    assert [line.split()[:2] for line in with_deleted.stdout.splitlines()[1:]] == [["cli-users-value", "1,2"]]
    gone = schemas(broker, "delete", "cli-users-value", "--permanent")
    assert gone.stdout == "cli-users-value: deleted permanently versions 1,2\n", gone.stderr
    assert schemas(broker, "list", "--prefix", "cli-users", "--deleted").stdout.splitlines()[1:] == []


def test_usage_and_connection_errors(tmp_path: Path) -> None:
    no_registry = schemas(None, "list", "--registry-url", "http://127.0.0.1:1/")
    assert no_registry.returncode == 1
    assert no_registry.stderr.startswith("tidelog schemas list: cannot reach the schema registry at http://127.0.0.1:1/")
    env_url = schemas(None, "list", env={"TIDELOG_SCHEMA_REGISTRY_URL": "http://127.0.0.1:1/sr"})
    assert "http://127.0.0.1:1/sr/" in env_url.stderr
    both = schemas(None, "get", "s", "--id", "1")
    assert both.returncode == 2 and "one of them" in both.stderr
    bad_ref = schemas(None, "register", "s", write(tmp_path / "s.avsc", '"string"'), "--reference", "oops")
    assert bad_ref.returncode == 2 and "NAME=SUBJECT:VERSION" in bad_ref.stderr
    unreadable = schemas(None, "register", "s", str(tmp_path / "missing.avsc"))
    assert unreadable.returncode == 1 and "cannot read" in unreadable.stderr
    assert schemas(None, "list", "--bootstrap-server", "localhost:9092").returncode == 2
