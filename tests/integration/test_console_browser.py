"""The web console end to end, in headless Chromium (Debian's ``chromium``, driven by Playwright; Playwright's
own browsers are never downloaded) against a real broker and real Kafka clients: create a topic in the UI,
produce with confluent-kafka, browse the messages, watch a group's lag grow and shrink, reset its offsets
through the UI with its confirmation, follow a transaction from Ongoing to CompleteCommit.

On failure the page's screenshot and HTML are saved under ``test-artifacts/console/`` (git-ignored) and
the path printed.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests import toolchain
from tests.integration.console_http import add_user, ok
from tests.integration.kafka_io import create_topic, produce, wait_for
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("console_browser")]

BROKER_OVERRIDES = {"console.read.only": "false", "console.sample.interval.ms": "300", "telemetry.enable": "true"}
ARTEFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
TIMEOUT_MS = 15_000


def _chromium() -> str | None:
    for candidate in (os.environ.get("TIDELOG_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    path = _chromium()
    toolchain.require("chromium", path is not None,
                      "Debian's chromium is not installed (make test installs it: tools/debian_test_deps.sh)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        toolchain.require("playwright", False, "the playwright package is not installed (pip install -e '.[dev]')")
        raise
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium, request: pytest.FixtureRequest):
    """A fresh browser page; if the test fails, its screenshot and HTML go to test-artifacts/console/."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    failed_before = request.session.testsfailed
    yield page
    try:
        if request.session.testsfailed > failed_before or errors:
            ARTEFACTS.mkdir(parents=True, exist_ok=True)
            stem = ARTEFACTS / request.node.name.replace("/", "_")
            page.screenshot(path=str(stem) + ".png", full_page=True)
            Path(str(stem) + ".html").write_text(page.content(), encoding="utf-8")
            print(f"\nconsole test artefacts: {stem}.png, {stem}.html")
    finally:
        context.close()
    assert not errors, f"JavaScript errors in the page: {errors}"


def _confirm(page, expect_text: str | None = None) -> None:
    dialog = page.locator("dialog#confirm")
    dialog.wait_for(state="visible")
    if expect_text is not None:
        assert expect_text in dialog.inner_text()
    page.get_by_test_id("confirm-ok").click()
    dialog.wait_for(state="hidden")


def test_create_a_topic_produce_with_a_client_and_browse_the_messages(broker, page):
    from playwright.sync_api import expect

    name = f"ui-{uuid.uuid4().hex[:8]}"
    page.goto(broker.http_url)
    expect(page.get_by_test_id("topic-count")).to_have_text(str(ok(broker, "GET", "/cluster")["topics"]))
    page.locator("#nav a[data-page=topics]").click()
    page.get_by_test_id("new-topic-name").fill(name)
    page.get_by_test_id("new-topic-partitions").fill("2")
    page.get_by_test_id("new-topic-configs").fill("retention.ms=3600000")
    page.get_by_test_id("create-topic-submit").click()
    _confirm(page, name)
    expect(page.get_by_test_id("topic-title")).to_have_text(name)
    assert ok(broker, "GET", f"/topics/{name}")["partitions"] == 2
    expect(page.get_by_test_id("partitions").locator("tbody tr")).to_have_count(2)

    # A real client writes; the UI reads.
    produce(broker, name, [json.dumps({"order": i, "item": "tea"}) for i in range(5)], partition=1)
    page.get_by_test_id("tab-messages").click()
    page.get_by_test_id("browse-partition").select_option("1")
    page.get_by_test_id("browse-mode").select_option("offset")
    page.get_by_test_id("browse-offset").fill("1")
    page.get_by_test_id("browse-load").click()
    rows = page.get_by_test_id("messages").locator("tbody tr")
    expect(rows).to_have_count(4)
    expect(page.get_by_test_id("browse-summary")).to_contain_text("4 message(s) from offset 1")
    assert '"order": 1' in rows.nth(0).inner_text() and "json" in rows.nth(0).inner_text()
    page.get_by_test_id("browse-format").select_option("hex")
    page.get_by_test_id("browse-load").click()
    expect(rows.nth(0)).to_contain_text(b'{"order": 1'.hex())

    # Produce through the UI (after its confirmation); a client reads it back.
    page.get_by_test_id("tab-produce").click()
    page.get_by_test_id("produce-key").fill("from-ui")
    page.get_by_test_id("produce-value").fill("hello from the browser")
    page.get_by_test_id("produce-headers").fill("source=console")
    page.get_by_test_id("produce-submit").click()
    _confirm(page, f"{name}-0")
    expect(page.get_by_test_id("produce-result")).to_contain_text("offset 0 of partition 0")
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"r-{name}", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(name, 0, 0)])
        message = None
        deadline = time.monotonic() + 20
        while message is None and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            message = m if m is not None and not m.error() else None
    finally:
        consumer.close()
    assert message is not None and (message.key(), message.value()) == (b"from-ui", b"hello from the browser")
    assert message.headers() == [("source", b"console")]

    # Cancelling a confirmation changes nothing; confirming deletes.
    page.get_by_test_id("delete-topic").click()
    page.locator("dialog#confirm").wait_for(state="visible")
    page.get_by_test_id("confirm-cancel").click()
    assert ok(broker, "GET", f"/topics/{name}")["name"] == name
    page.get_by_test_id("delete-topic").click()
    _confirm(page, "cannot be undone")
    expect(page).to_have_url(broker.http_url + "#/topics")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    wait_for(lambda: name not in admin.list_topics(timeout=10).topics, 10, "the topic to be deleted")


def test_ordinary_data_shows_right_search_and_live_tail(broker, page):
    """A JSON-object header (Spring's spring_json_header_types) shows as JSON, not [object Object]; an
    integer beyond 2^53 keeps every digit; a NaN value does not break the page; all partitions in one view
    by timestamp; search by key and header; the live tail shows a message produced after it started; the
    overview and the header show the cluster id."""
    from playwright.sync_api import expect

    name = f"data-{uuid.uuid4().hex[:8]}"
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name, partitions=2)
    base = int(time.time() * 1000) - 60_000
    types = '{"contentType":"java.lang.String"}'
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(name, key=b"order-1", value=b'{"id": 9007199254740993}', partition=1, timestamp=base,
                     headers=[("spring_json_header_types", types.encode())])
    producer.produce(name, key=b"order-2", value=b"NaN", partition=0, timestamp=base + 1)
    producer.produce(name, key=b"other", value=b"plain", partition=1, timestamp=base + 2, headers=[("tenant", b"acme")])
    assert producer.flush(15) == 0

    page.goto(broker.http_url)
    cluster_id = ok(broker, "GET", "/cluster")["cluster_id"]
    expect(page.get_by_test_id("cluster-id")).to_have_text(cluster_id)
    expect(page.get_by_test_id("header-cluster-id")).to_have_text(cluster_id)
    page.goto(broker.http_url + f"#/topics/{name}")
    page.get_by_test_id("tab-messages").click()
    page.get_by_test_id("browse-load").click()  # all partitions, newest, merged by timestamp
    rows = page.get_by_test_id("messages").locator("tbody tr")
    expect(rows).to_have_count(3)
    expect(page.get_by_test_id("browse-summary")).to_contain_text("3 message(s) from 2 partition(s), by timestamp")
    assert [rows.nth(i).locator("td").nth(0).inner_text() for i in range(3)] == ["1", "0", "1"]  # partitions
    first = rows.nth(0).inner_text()
    assert "9007199254740993" in first and "9007199254740992" not in first
    assert "[object Object]" not in first and '"contentType":"java.lang.String"' in first.replace(" ", "")
    assert "NaN" in rows.nth(1).inner_text()

    page.get_by_test_id("search-in").select_option("key")
    page.get_by_test_id("search-text").fill("ORDER")
    page.get_by_test_id("browse-load").click()
    expect(rows).to_have_count(2)
    expect(page.get_by_test_id("browse-summary")).to_contain_text('key contains "ORDER"')
    page.get_by_test_id("search-in").select_option("header")
    page.get_by_test_id("search-text").fill("tenant=ACME")
    page.get_by_test_id("browse-load").click()
    expect(rows).to_have_count(1)
    expect(rows.nth(0)).to_contain_text("plain")

    page.get_by_test_id("search-text").fill("")
    page.get_by_test_id("browse-live").check()
    page.get_by_test_id("browse-load").click()
    expect(page.get_by_test_id("live-status")).to_be_visible()
    expect(rows).to_have_count(3)
    produce(broker, name, ["arrived later"], partition=0)
    expect(rows).to_have_count(4)
    expect(rows.nth(3)).to_contain_text("arrived later")


def test_watch_a_groups_lag_grow_and_shrink_then_reset_it_in_the_ui(broker, page):
    from playwright.sync_api import expect

    name, group = f"lag-{uuid.uuid4().hex[:8]}", f"ui-group-{uuid.uuid4().hex[:8]}"
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name)
    produce(broker, name, [f"a{i}" for i in range(10)])
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([name])

    def drain(count: int) -> None:
        got = 0
        deadline = time.monotonic() + 30
        while got < count and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got += 1
                consumer.commit(m, asynchronous=False)
        assert got == count

    def last_sampled_lag() -> int | None:
        points = ok(broker, "GET", f"/groups/{group}/lag-history")["points"]
        return points[-1]["lag"] if points else None

    try:
        drain(10)
        page.goto(broker.http_url + "#/groups")
        page.get_by_test_id("groups").get_by_text(group).click()
        expect(page.get_by_test_id("group-title")).to_have_text(group)
        expect(page.get_by_test_id("group-lag")).to_have_text("0")
        expect(page.get_by_test_id("members").locator("tbody tr")).to_have_count(1)

        produce(broker, name, [f"b{i}" for i in range(25)])
        expect(page.get_by_test_id("group-lag")).to_have_text("25")
        expect(page.get_by_test_id("lag-table")).to_contain_text("25")
        wait_for(lambda: last_sampled_lag() == 25, 10, "the sampler to see the lag of 25")
        drain(25)
        expect(page.get_by_test_id("group-lag")).to_have_text("0")
        wait_for(lambda: last_sampled_lag() == 0, 10, "the sampler to see the lag gone")
        history = [p["lag"] for p in ok(broker, "GET", f"/groups/{group}/lag-history")["points"]]
        assert max(history) == 25
        assert page.get_by_test_id("lag-chart").locator("path.chart-line").count() == 1

        # While the consumer is in the group, the UI refuses a reset, as Kafka does.
        page.get_by_test_id("reset-submit").click()
        expect(page.get_by_test_id("error")).to_contain_text("NON_EMPTY_GROUP")
    finally:
        consumer.close()

    expect(page.locator(".title-row .badge")).to_have_text("Empty")
    page.get_by_test_id("reset-to").select_option("earliest")
    page.get_by_test_id("reset-submit").click()
    dialog = page.locator("dialog#confirm")
    dialog.wait_for(state="visible")
    expect(dialog.get_by_test_id("reset-plan").locator("tbody tr")).to_have_count(1)
    assert "35" in dialog.inner_text()  # from 35 ...
    page.get_by_test_id("confirm-ok").click()
    expect(page.get_by_test_id("reset-result")).to_have_text("Reset 1 partition(s).")
    expect(page.get_by_test_id("group-lag")).to_have_text("35")
    view = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        assert [tp.offset for tp in view.committed([TopicPartition(name, 0)], timeout=10)] == [0]
    finally:
        view.close()


def test_an_open_transaction_on_the_transactions_page_then_its_commit(broker, page):
    from playwright.sync_api import expect

    name, txn_id = f"txn-{uuid.uuid4().hex[:8]}", f"ui-txn-{uuid.uuid4().hex[:8]}"
    create_topic(AdminClient({"bootstrap.servers": broker.bootstrap}), name, partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id})
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce(name, b"a", partition=1)
    assert producer.flush(10) == 0
    page.goto(broker.http_url)
    page.locator("#nav a[data-page=transactions]").click()
    page.get_by_test_id("txn-state-filter").select_option("Ongoing")
    page.get_by_test_id("transactions").get_by_text(txn_id).click()
    expect(page.get_by_test_id("txn-title")).to_have_text(txn_id)
    expect(page.get_by_test_id("txn-state")).to_have_text("Ongoing")
    rows = page.get_by_test_id("txn-partitions").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.nth(0)).to_contain_text(name)
    producer.commit_transaction(20)
    expect(page.get_by_test_id("txn-state")).to_have_text("CompleteCommit")  # the page refreshes itself
    expect(page.get_by_test_id("txn-partitions-empty")).to_have_text("No open transaction.")
    page.locator(".crumbs a").click()
    row = page.get_by_test_id("transactions").locator("tbody tr", has_text=txn_id)
    expect(row).to_contain_text("CompleteCommit")
    page.get_by_test_id("txn-state-filter").select_option("Ongoing")
    expect(page.get_by_test_id("transactions-empty")).to_have_text("No Ongoing transactions.")


def test_a_clients_pushed_metrics_on_the_clients_page(broker, page):
    """Client telemetry (KIP-714): a subscription, a librdkafka producer pushing, its series in the UI."""
    from playwright.sync_api import expect

    from tidelog.protocol.messages import IncrementalAlterConfigsRequest as R
    from tidelog.testing.client import WireClient

    client_id = f"ui-telemetry-{uuid.uuid4().hex[:6]}"
    with WireClient.connect(broker.bootstrap) as c:
        (r,) = c.request(R(resources=[R.AlterConfigsResource(resource_type=16, resource_name="ui-sub", configs=[
            R.AlterableConfig(name="metrics", config_operation=0, value="org.apache.kafka.producer."),
            R.AlterableConfig(name="interval.ms", config_operation=0, value="1000")])]), 1).responses
        assert r.error_code == 0
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": client_id})
    try:
        page.goto(broker.http_url)
        page.locator("#nav a[data-page=clients]").click()
        expect(page.get_by_test_id("subscriptions")).to_contain_text("ui-sub")
        link = page.get_by_test_id("telemetry-clients").get_by_text(client_id)
        wait_for(lambda: producer.poll(0.2) is not None and link.count() > 0, 60, "the client on the Clients page",
                 interval=0.5)
        link.click()
        series = page.get_by_test_id("client-series")
        expect(series).to_contain_text("org.apache.kafka.producer.")
    finally:
        producer.flush(5)


def test_read_only_console_shows_a_banner_and_disables_changes(tmp_path, chromium):
    from playwright.sync_api import expect

    with BrokerProcess(tmp_path / "data", overrides={"auto.create.topics.enable": "true"}) as broker:
        produce(broker, "existing", ["a"])
        context = chromium.new_context()
        context.set_default_timeout(TIMEOUT_MS)
        try:
            page = context.new_page()
            page.goto(broker.http_url + "#/topics")
            expect(page.get_by_test_id("read-only-banner")).to_contain_text("console.read.only=false")
            expect(page.get_by_test_id("create-topic-submit")).to_be_disabled()
            page.get_by_test_id("topics").get_by_text("existing").click()
            expect(page.get_by_test_id("delete-topic")).to_be_disabled()
            page.get_by_test_id("tab-messages").click()
            page.get_by_test_id("browse-load").click()
            expect(page.get_by_test_id("messages").locator("tbody tr")).to_have_count(1)
        finally:
            context.close()


def test_log_in_as_a_sasl_user_see_the_users_page_and_log_out(tmp_path, page):
    """console.authentication=sasl (the default with an authorizer): the app shows the login page, refuses
    a wrong password with Kafka's message, logs in, shows the Users page to a super user, logs out; a user
    who may not describe the cluster gets neither the Users page nor the log dirs."""
    from playwright.sync_api import expect

    add_user(tmp_path, "admin", "admin-secret")
    add_user(tmp_path, "alice", "alice-secret")
    overrides = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:admin"}
    with BrokerProcess(tmp_path, overrides=overrides) as secured:
        page.goto(secured.http_url)
        expect(page.get_by_test_id("login-form")).to_be_visible()
        assert page.locator("#nav").is_hidden()
        page.get_by_test_id("login-user").fill("admin")
        page.get_by_test_id("login-password").fill("wrong")
        page.get_by_test_id("login-submit").click()
        expect(page.get_by_test_id("error")).to_contain_text("Authentication failed: Invalid username or password")
        expect(page.get_by_test_id("login-password")).to_have_value("")
        page.get_by_test_id("login-user").fill("admin")
        page.get_by_test_id("login-password").fill("admin-secret")
        page.get_by_test_id("login-submit").click()
        expect(page.get_by_test_id("principal")).to_have_text("User:admin")
        assert page.evaluate("document.cookie") == ""  # HttpOnly: the page's scripts cannot read the session
        page.locator("#nav a[data-page=users]").click()
        rows = page.get_by_test_id("users").locator("tbody tr")
        expect(rows).to_have_count(2)
        expect(rows.nth(1)).to_contain_text("alice")
        expect(rows.nth(1)).to_contain_text("SCRAM-SHA-256, SCRAM-SHA-512")
        page.locator("#nav a[data-page=acls]").click()
        expect(page.get_by_test_id("acls-empty")).to_have_text("No ACLs.")
        page.get_by_test_id("logout").click()
        expect(page.get_by_test_id("login-form")).to_be_visible()
        # alice may not describe the cluster: no Users or ACLs pages, and the overview says what it leaves out.
        page.get_by_test_id("login-user").fill("alice")
        page.get_by_test_id("login-password").fill("alice-secret")
        page.get_by_test_id("login-submit").click()
        expect(page.get_by_test_id("principal")).to_have_text("User:alice")
        expect(page.get_by_test_id("topic-count")).to_have_text("0")
        expect(page.get_by_text("Not shown: needs DESCRIBE on the cluster.")).to_be_visible()
        assert page.locator("#nav a[data-page=users]").count() == 0
