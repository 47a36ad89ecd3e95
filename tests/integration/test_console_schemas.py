"""The console's Schemas page (docs/schema-registry.md) against a real broker: subjects registered with
confluent-kafka's SchemaRegistryClient, listed by the console's JSON API with their versions, a subject's
versions and a line diff between two of them; then the same in headless Chromium (the browser fixtures
of test_console_browser.py): the nav link, the subjects table, a version's text and the diff."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from tests.integration.console_http import call, ok
from tests.integration.test_console_browser import chromium, page  # noqa: F401 (fixtures)
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("console_schemas")]

V1 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}
V2 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"},
                                                    {"name": "age", "type": "int", "default": 0}]}


@pytest.fixture(scope="module")
def registered(broker: BrokerProcess) -> SchemaRegistryClient:
    registry = SchemaRegistryClient({"url": broker.schema_registry_url})
    registry.register_schema("users-value", Schema(json.dumps(V1), "AVRO"))
    registry.register_schema("users-value", Schema(json.dumps(V2), "AVRO"))
    registry.register_schema("orders-value", Schema(json.dumps({"type": "object"}), "JSON"))
    return registry


def test_subjects_versions_and_a_diff_in_the_json_api(broker: BrokerProcess, registered: SchemaRegistryClient) -> None:
    subjects = {s["subject"]: s for s in ok(broker, "GET", "/schemas")["subjects"]}
    assert subjects["users-value"] == {"subject": "users-value", "versions": [1, 2], "type": "AVRO",
                                       "latest_id": registered.get_version("users-value", 2).schema_id,
                                       "compatibility": "BACKWARD"}
    assert subjects["orders-value"]["type"] == "JSON"

    users = ok(broker, "GET", "/schemas/users-value")
    assert [(v["version"], v["id"]) for v in users["versions"]] == [
        (v, registered.get_version("users-value", v).schema_id) for v in (1, 2)]
    assert json.loads(users["versions"][0]["text"]) == V1 and users["versions"][0]["text"].count("\n") > 3

    diff = ok(broker, "GET", "/schemas/users-value/diff?from=1&to=2")["diff"]
    assert diff[:2] == ["--- users-value version 1", "+++ users-value version 2"]
    added = [line for line in diff if line.startswith("+") and not line.startswith("+++")]
    assert any('"age"' in line for line in added) and not any(
        line.startswith("-") and not line.startswith("---") for line in diff[2:] if '"name"' in line)
    assert ok(broker, "GET", "/schemas/users-value/diff?from=2&to=2")["diff"] == []

    assert call(broker, "GET", "/schemas/no-such-value")[0] == 404
    assert call(broker, "GET", "/schemas/users-value/diff?from=1&to=9")[0] == 404
    assert call(broker, "GET", "/schemas/users-value/diff?from=1")[0] == 400


def test_the_schemas_page_shows_versions_and_a_diff(broker: BrokerProcess, registered: SchemaRegistryClient,
                                                    page) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page.goto(broker.http_url)
    page.locator("#nav a[data-page=schemas]").click()
    links = page.get_by_test_id("subjects").get_by_test_id("subject-link")
    expect(links).to_have_count(2)
    page.get_by_test_id("subjects").get_by_text("users-value").click()
    expect(page.get_by_test_id("subject-title")).to_have_text("users-value")
    expect(page.get_by_test_id("schema-versions").locator("tbody tr")).to_have_count(2)
    expect(page.get_by_test_id("schema-text")).to_contain_text('"age"')  # the latest version
    page.get_by_test_id("schema-version").select_option("1")
    expect(page.get_by_test_id("schema-text")).not_to_contain_text('"age"')
    diff = page.get_by_test_id("schema-diff")
    expect(diff.locator(".diff-add").filter(has_text='"age"')).to_have_count(1)
    expect(diff.locator(".diff-add")).to_have_count(5)  # "},", "{", the field's three lines
    expect(diff.locator(".diff-del")).to_have_count(0)
    page.get_by_test_id("diff-from").select_option("2")
    expect(diff).to_have_text("The two versions are the same text.")
