"""Share groups (KIP-932) in the web console's JSON API (docs/console.md), against a real broker with
``share.version=1`` and confluent-kafka's ShareConsumer holding records: the group in the list, its members
and assignment, the share start offset, end offset and lag per partition, the in-flight records this broker
leads; resetting its start offsets and deleting it while empty, refused (409) while it has members. And
the same group's page in headless Chromium (the fixtures of test_console_browser.py)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer

from tests.integration.console_http import call, ok
from tests.integration.kafka_io import create_topic, produce, wait_for
from tests.integration.test_console_browser import chromium, page  # noqa: F401  (the browser fixtures)
from tidelog.protocol.messages import IncrementalAlterConfigsRequest
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("console_share")]

BROKER_OVERRIDES = {"share.version": "1", "console.read.only": "false", "console.sample.interval.ms": "300"}
GROUP_CONFIG = 32


def _group_configs(bootstrap: str, group: str, **configs: str) -> None:
    with WireClient.connect(bootstrap) as wire:
        C = IncrementalAlterConfigsRequest
        r = wire.request(C(resources=[C.AlterConfigsResource(resource_type=GROUP_CONFIG, resource_name=group, configs=[
            C.AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v) for k, v in configs.items()])]), 1)
        assert r.responses[0].error_code == 0, r.responses[0]


def _listed(broker, group: str) -> dict | None:
    return next((g for g in ok(broker, "GET", "/groups")["groups"] if g["group_id"] == group), None)


def test_a_share_group_shows_members_offsets_lag_and_in_flight_records(broker) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, group, n = f"console-share-{suffix}", f"console-share-g-{suffix}", 10
    create_topic(broker, topic, 1)
    _group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest",
                   share_record_lock_duration_ms="60000")
    produce(broker, topic, [f"v{i}" for i in range(n)], config={"linger.ms": 200})

    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": "holder",
                              "share.acknowledgement.mode": "explicit"})
    try:
        consumer.subscribe([topic])
        held: list = []
        wait_for(lambda: held, 60, "records acquired by the share consumer",
                 poll=lambda: held.extend(m for m in consumer.poll(1.0) if m.error() is None))
        got = len(held)

        listed = _listed(broker, group)
        assert listed is not None and listed["type"] == "share" and listed["state"] == "Stable", listed
        described = ok(broker, "GET", f"/groups/{group}")
        assert described["type"] == "share" and described["state"] == "Stable"
        (member,) = described["members"]
        assert member["client_id"] == "holder" and member["client_host"]
        assert member["assignment"] == [{"topic": topic, "partitions": [0]}]
        assert member["subscribed_topics"] == [topic]
        (part,) = described["offsets"]
        assert (part["topic"], part["partition"], part["start_offset"], part["end_offset"]) == (topic, 0, 0, n)
        assert part["member_ids"] == [member["member_id"]]
        assert part["in_flight"]["acquired"] == got, part
        assert part["in_flight"]["delivery_complete"] == 0
        assert part["lag"] == n and described["lag"] == n  # nothing delivery-complete yet

        # Accept offsets 0-3 (the start offset moves past them) and, if held, 6 (complete past the start).
        accepted = [m for m in held if m.offset() < 4 or m.offset() == 6]
        assert {m.offset() for m in accepted} >= {0, 1, 2, 3}
        for m in accepted:
            consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        consumer.commit_sync()
        past_start = sum(1 for m in accepted if m.offset() >= 4)

        def settled() -> dict:
            return ok(broker, "GET", f"/groups/{group}")["offsets"][0]

        wait_for(lambda: settled()["start_offset"] == 4, 60, "the share start offset moved to 4")
        part = settled()
        assert part["in_flight"]["acquired"] == got - len(accepted), part
        assert part["in_flight"]["delivery_complete"] == past_start
        assert part["in_flight"]["window_start"] == 4
        assert part["lag"] == n - 4 - past_start  # KIP-1226: from the start to the end, not yet complete
        assert _listed(broker, group)["lag"] == n - 4 - past_start

        # While the group has a member: no reset, no delete.
        status, answer = call(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "earliest"})
        assert status == 409 and answer["code"] == "NON_EMPTY_GROUP", answer
        status, answer = call(broker, "DELETE", f"/groups/{group}")
        assert status == 409 and answer["code"] == "NON_EMPTY_GROUP", answer
    finally:
        consumer.close()

    # The member left: what it held is released (its share session ended with the group's last one, so the
    # leader drops the window and reads the state again at the next fetch: no in-flight figures, nothing held).
    wait_for(lambda: (_listed(broker, group) or {}).get("state") == "Empty", 60, "the share group is empty")
    wait_for(lambda: settled()["in_flight"] is None, 60, "the left member's window dropped")
    part = settled()
    assert part["start_offset"] == 4 and part["lag"] == n - 4, part
    assert ok(broker, "GET", f"/groups/{group}")["members"] == []

    preview = ok(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "earliest", "dry_run": True})
    assert preview["offsets"] == [{"topic": topic, "partition": 0, "previous_offset": 4, "offset": 0}]
    assert settled()["start_offset"] == 4, "a dry run changes nothing"
    ok(broker, "POST", f"/groups/{group}/reset-offsets", {"to": "offset", "offset": 2, "topic": topic})
    wait_for(lambda: settled()["start_offset"] == 2, 60, "the share start offset reset to 2")
    assert settled()["lag"] == n - 2, "from the new start offset (no window of the old one counted)"

    assert ok(broker, "DELETE", f"/groups/{group}") == {"group_id": group, "deleted": True}
    assert _listed(broker, group) is None
    status, answer = call(broker, "GET", f"/groups/{group}")
    assert status == 404 and answer["code"] == "GROUP_ID_NOT_FOUND", answer
    status, answer = call(broker, "DELETE", f"/groups/{group}")
    assert status == 404 and answer["code"] == "GROUP_ID_NOT_FOUND", answer


def test_a_share_groups_page_shows_its_in_flight_records_and_deletes_it(broker, page) -> None:  # noqa: F811
    from playwright.sync_api import expect

    suffix = uuid.uuid4().hex[:8]
    topic, group = f"ui-share-{suffix}", f"ui-share-g-{suffix}"
    create_topic(broker, topic, 1)
    _group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest",
                   share_record_lock_duration_ms="60000")
    produce(broker, topic, [f"v{i}" for i in range(6)], config={"linger.ms": 200})
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    try:
        consumer.subscribe([topic])
        held: list = []
        wait_for(lambda: held, 60, "records acquired by the share consumer",
                 poll=lambda: held.extend(m for m in consumer.poll(1.0) if m.error() is None))
        page.goto(broker.http_url + "#/groups")
        row = page.get_by_test_id("groups").locator("tr", has_text=group)
        expect(row).to_contain_text("share")
        expect(row).to_contain_text("Stable")
        row.get_by_text(group).click()
        expect(page.get_by_test_id("group-title")).to_have_text(group)
        expect(page.get_by_test_id("members").locator("tbody tr")).to_have_count(1)
        cells = page.get_by_test_id("share-table").locator("tbody tr").first.locator("td")
        expect(cells.nth(2)).to_have_text("0")  # start offset
        expect(cells.nth(3)).to_have_text("6")  # end offset
        expect(cells.nth(4)).to_have_text("6")  # lag
        expect(cells.nth(5)).to_have_text(str(len(held)))  # acquired
        expect(page.get_by_test_id("lag-chart")).to_have_count(0)
    finally:
        consumer.close()

    expect(page.locator(".title-row .badge")).to_have_text("Empty")
    page.get_by_test_id("delete-group").click()
    dialog = page.locator("dialog#confirm")
    dialog.wait_for(state="visible")
    page.get_by_test_id("confirm-ok").click()
    expect(page).to_have_url(broker.http_url + "#/groups")
    expect(page.get_by_test_id("groups").locator("tr", has_text=group)).to_have_count(0)
    assert _listed(broker, group) is None
