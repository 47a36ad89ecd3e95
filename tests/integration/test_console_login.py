"""The console's login (``console.authentication=sasl``) against a real broker with an authorizer: SCRAM
users created offline with ``tidelog users add --data-dir``, logins checked against them, the session
cookie's flags, 401s without a session, each session's requests judged by the ACLs as its own user
(alice sees the topic her ACL grants, bob does not), the Users and ACLs pages for a user who may describe
the cluster, transactions only for a user who may describe the transactional id, logout. One broker for the module (~10 s in all)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from http.cookies import SimpleCookie
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.integration.acl_matrix import grant
from tests.integration.kafka_io import create_topic
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("console_login")]

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
#: ANONYMOUS (the plaintext Kafka listener) is a super user only to set the test up; console sessions run
#: as the logged-in users, who are not.
SECURED = {"authorizer.class.name": STANDARD, "allow.everyone.if.no.acl.found": "false",
           "super.users": "User:admin;User:ANONYMOUS", "connections.max.reauth.ms": "600000",
           "console.sample.interval.ms": "200"}
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
ALICE_TOPIC = "alice-orders"
FAILED = {"error": "Authentication failed: Invalid username or password", "code": "SASL_AUTHENTICATION_FAILED"}


class Http:
    """The JSON API with a cookie jar of one cookie (what a browser would send back)."""

    def __init__(self, broker: BrokerProcess) -> None:
        assert broker.http_url is not None
        self.base = broker.http_url
        self.cookie: str | None = None
        self.set_cookie: str | None = None

    def call(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None) -> tuple[int, Any]:
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        if self.cookie:
            headers["Cookie"] = self.cookie
        request = urllib.request.Request(self.base + "api/v1" + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                status, payload, set_cookie = r.status, r.read(), r.headers.get("Set-Cookie")
        except urllib.error.HTTPError as e:
            status, payload, set_cookie = e.code, e.read(), e.headers.get("Set-Cookie")
        self.set_cookie = set_cookie
        return status, json.loads(payload)

    def login(self, user: str, password: str | None = None) -> Any:
        status, answer = self.call("POST", "/login", {"username": user, "password": password or PASSWORDS[user]})
        assert status == 200, (status, answer)
        jar = SimpleCookie(self.set_cookie)
        self.cookie = f"tidelog_session={jar['tidelog_session'].value}"
        return answer


# The module's broker (tests/fixtures.py): the users are written into its data dir before it starts.
BROKER_OVERRIDES = SECURED
BROKER_USERS = PASSWORDS


def on_broker_started(b: BrokerProcess) -> None:
    create_topic(b.bootstrap, ALICE_TOPIC)
    create_topic(b.bootstrap, "shared-nobody")
    with WireClient.connect(b.bootstrap) as client:
        grant(client, "User:alice", [(ResourceType.TOPIC, ALICE_TOPIC, AclOperation.DESCRIBE),
                                     (ResourceType.TOPIC, ALICE_TOPIC, AclOperation.DESCRIBE_CONFIGS)])


def test_without_a_session_the_api_answers_401_and_the_app_still_loads(broker: BrokerProcess) -> None:
    http = Http(broker)
    status, info = http.call("GET", "/console")
    assert status == 200
    assert info["authentication"] == "sasl"  # the default with an authorizer
    assert info["principal"] is None and info["cluster_operations"] == []
    for path in ("/topics", "/cluster", "/groups", "/users", "/acls", f"/topics/{ALICE_TOPIC}"):
        status, answer = http.call("GET", path)
        assert status == 401, (path, status, answer)
        assert answer["code"] == "AUTHENTICATION_REQUIRED" and "Log in" in answer["error"]
    status, answer = http.call("POST", "/topics", {"name": "x"})
    assert (status, answer["code"]) == (401, "AUTHENTICATION_REQUIRED")
    http.cookie = "tidelog_session=made-up-token"
    assert http.call("GET", "/topics")[0] == 401
    with urllib.request.urlopen(broker.http_url, timeout=10) as r:  # the login page itself needs no session
        assert r.status == 200 and b"app.js" in r.read()


def test_a_wrong_password_and_an_unknown_user_get_the_same_answer(broker: BrokerProcess) -> None:
    http = Http(broker)
    answers = [http.call("POST", "/login", {"username": u, "password": p})
               for u, p in (("alice", "wrong"), ("nobody", "alice-secret"), ("alice", "bob-secret"))]
    assert answers == [(401, FAILED)] * 3
    assert http.set_cookie is None
    assert http.call("POST", "/login", {"username": "alice"})[0] == 400
    assert http.call("POST", "/login", {"username": "alice", "password": 7})[0] == 400
    status, answer = http.call("POST", "/login", raw=b"{not json")
    assert (status, answer["code"]) == (400, "MALFORMED_JSON")
    assert http.call("POST", "/login", {"username": "alice\x00x", "password": "alice-secret"}) == (401, FAILED)


def test_login_sets_a_strict_http_only_session_cookie(broker: BrokerProcess) -> None:
    http = Http(broker)
    answer = http.login("alice")
    assert answer == {"principal": "User:alice", "expires_in_ms": 600_000}  # connections.max.reauth.ms
    morsel = SimpleCookie(http.set_cookie)["tidelog_session"]
    assert morsel["httponly"] is True and morsel["samesite"] == "Strict" and morsel["path"] == "/"
    assert morsel["max-age"] == "600"
    assert len(morsel.value) >= 40  # 256 random bits
    other = Http(broker)
    other.login("alice")
    assert other.cookie != http.cookie  # a new token for each login
    status, info = http.call("GET", "/console")
    assert status == 200 and info["principal"] == "User:alice"


def test_each_session_runs_as_its_user_under_the_acls(broker: BrokerProcess) -> None:
    alice, bob = Http(broker), Http(broker)
    alice.login("alice")
    bob.login("bob")
    status, answer = alice.call("GET", "/topics")
    assert status == 200 and [t["name"] for t in answer["topics"]] == [ALICE_TOPIC]
    status, answer = bob.call("GET", "/topics")
    assert status == 200 and answer["topics"] == []
    status, answer = alice.call("GET", f"/topics/{ALICE_TOPIC}/configs")
    assert status == 200 and any(c["name"] == "retention.ms" for c in answer["configs"])
    status, answer = bob.call("GET", f"/topics/{ALICE_TOPIC}/configs")
    assert (status, answer["code"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    status, answer = alice.call("GET", f"/topics/{ALICE_TOPIC}")
    assert status == 200 and answer["name"] == ALICE_TOPIC
    for path in (f"/topics/{ALICE_TOPIC}", "/topics/shared-nobody"):
        status, answer = bob.call("GET", path)
        assert (status, answer["code"]) == (403, "TOPIC_AUTHORIZATION_FAILED"), path
    # Reading messages needs READ, which alice has not been granted (DESCRIBE only): refused, not read.
    status, answer = alice.call("GET", f"/topics/{ALICE_TOPIC}/partitions/0/messages")
    assert (status, answer["code"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    with WireClient.connect(broker.bootstrap) as client:
        grant(client, "User:alice", [(ResourceType.TOPIC, ALICE_TOPIC, AclOperation.READ)])
    status, answer = alice.call("GET", f"/topics/{ALICE_TOPIC}/partitions/0/messages")
    assert status == 200 and answer["messages"] == []
    status, answer = bob.call("GET", f"/topics/{ALICE_TOPIC}/partitions/0/messages")
    assert (status, answer["code"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
    overview = alice.call("GET", "/cluster")[1]  # the overview counts what alice may see
    assert overview["topics"] == 1 and overview["log_dirs"] is None
    assert bob.call("GET", "/cluster")[1]["topics"] == 0


def test_sampled_figures_show_only_what_the_user_may_describe(broker: BrokerProcess) -> None:
    alice, bob, admin = Http(broker), Http(broker), Http(broker)
    for http, user in ((alice, "alice"), (bob, "bob"), (admin, "admin")):
        http.login(user)
    deadline = time.monotonic() + 10
    while not admin.call("GET", "/cluster/rates")[1]["samples"] and time.monotonic() < deadline:
        time.sleep(0.2)
    seen = {user: set().union(*(s["topics"] for s in http.call("GET", "/cluster/rates")[1]["samples"]))
            for user, http in (("alice", alice), ("bob", bob), ("admin", admin))}
    assert seen["alice"] == {ALICE_TOPIC} and seen["bob"] == set()
    assert seen["admin"] >= {ALICE_TOPIC, "shared-nobody"}
    status, answer = bob.call("GET", "/groups/alice-group/lag-history")
    assert (status, answer["code"]) == (403, "GROUP_AUTHORIZATION_FAILED")
    status, answer = admin.call("GET", "/groups/alice-group/lag-history")
    assert status == 200 and answer["points"] == []


def test_users_and_acls_pages_for_a_user_who_may_describe_the_cluster(broker: BrokerProcess) -> None:
    admin, alice = Http(broker), Http(broker)
    admin.login("admin")
    alice.login("alice")
    assert "DESCRIBE" in admin.call("GET", "/console")[1]["cluster_operations"]
    assert alice.call("GET", "/console")[1]["cluster_operations"] == []
    status, answer = admin.call("GET", "/users")
    assert status == 200
    assert {u["user"]: sorted(c["mechanism"] for c in u["credentials"]) for u in answer["users"]} == {
        u: ["SCRAM-SHA-256", "SCRAM-SHA-512"] for u in PASSWORDS}
    assert "secret" not in json.dumps(answer) and "salt" not in json.dumps(answer)
    status, answer = admin.call("GET", "/acls")
    assert status == 200 and answer["authorizer"] is True
    assert {(a["principal"], a["operation"], a["resource_type"], a["resource_name"], a["permission"])
            for a in answer["acls"]} >= {("User:alice", "DESCRIBE", "TOPIC", ALICE_TOPIC, "ALLOW")}
    for path in ("/users", "/acls"):
        status, answer = alice.call("GET", path)
        assert (status, answer["code"]) == (403, "CLUSTER_AUTHORIZATION_FAILED"), path


def test_transactions_need_describe_on_the_transactional_id(broker: BrokerProcess) -> None:
    """ListTransactions leaves out the ids a user may not describe; DescribeTransactions refuses them (403),
    and leaves out the partitions of topics the user may not describe, as Kafka does."""
    txn_id = "alice-txn"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id})  # as ANONYMOUS
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce(ALICE_TOPIC, b"a", partition=0)
    producer.produce("shared-nobody", b"b", partition=0)
    assert producer.flush(10) == 0
    try:
        admin, alice, bob = Http(broker), Http(broker), Http(broker)
        for http, user in ((admin, "admin"), (alice, "alice"), (bob, "bob")):
            http.login(user)
        with WireClient.connect(broker.bootstrap) as client:
            grant(client, "User:alice", [(ResourceType.TRANSACTIONAL_ID, txn_id, AclOperation.DESCRIBE)])
        status, answer = bob.call("GET", "/transactions")
        assert status == 200 and txn_id not in [t["transactional_id"] for t in answer["transactions"]]
        status, answer = bob.call("GET", f"/transactions/{txn_id}")
        assert (status, answer["code"]) == (403, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
        status, answer = alice.call("GET", "/transactions")
        assert status == 200 and [(t["transactional_id"], t["state"]) for t in answer["transactions"]] == [
            (txn_id, "Ongoing")]
        status, answer = alice.call("GET", f"/transactions/{txn_id}")
        assert status == 200 and answer["partitions"] == [{"topic": ALICE_TOPIC, "partition": 0}]
        status, answer = admin.call("GET", f"/transactions/{txn_id}")
        assert status == 200 and answer["partitions"] == [{"topic": ALICE_TOPIC, "partition": 0},
                                                          {"topic": "shared-nobody", "partition": 0}]
    finally:
        producer.abort_transaction(20)


def test_logout_ends_the_session(broker: BrokerProcess) -> None:
    http = Http(broker)
    http.login("bob")
    assert http.call("GET", "/topics")[0] == 200
    status, answer = http.call("POST", "/logout", {})
    assert (status, answer) == (200, {"logged_out": True})
    assert SimpleCookie(http.set_cookie)["tidelog_session"].value == ""  # the browser drops it
    status, answer = http.call("GET", "/topics")  # the old token no longer works, even when replayed
    assert (status, answer["code"]) == (401, "AUTHENTICATION_REQUIRED")
    assert http.call("GET", "/console")[1]["principal"] is None
