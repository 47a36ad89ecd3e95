"""The schema registry's authentication and authorization (docs/schema-registry.md) on a real broker with
an authorizer and SCRAM users: HTTP basic auth with the SASL users' passwords (401 without or with a wrong
one), ACLs on subjects (resource type SUBJECT, Tidelog's own) and on the cluster for the global settings
(403 without, allowed with), subject listings filtered to what a user may see; confluent-kafka's
SchemaRegistryClient with ``basic.auth.user.info`` and ``tidelog schemas --user-info``. One broker."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from tests.integration.acl_matrix import describe_acls, grant
from tidelog.security.acl import AclOperation, ResourceType
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("schema_registry_auth")]

BROKER_OVERRIDES = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    "allow.everyone.if.no.acl.found": "false", "super.users": "User:admin;User:ANONYMOUS"}
BROKER_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
AVRO = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})


def registry(broker: BrokerProcess, user: str | None = None, password: str | None = None) -> SchemaRegistryClient:
    conf: dict[str, Any] = {"url": broker.schema_registry_url}
    if user is not None:
        conf["basic.auth.user.info"] = f"{user}:{password or BROKER_USERS[user]}"
    return SchemaRegistryClient(conf)


def http(broker: BrokerProcess, method: str, path: str, authorization: str | None = None,
         body: Any = None) -> tuple[int, dict[str, str], Any]:
    assert broker.schema_registry_url is not None
    headers = {"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE}
    if authorization is not None:
        headers["Authorization"] = authorization
    request = urllib.request.Request(broker.schema_registry_url.rstrip("/") + path, method=method, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def acls(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", "acls", *args, "--bootstrap-server", broker.bootstrap],
                          capture_output=True, text=True, timeout=60)


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def refused(call) -> tuple[int, int]:
    with pytest.raises(SchemaRegistryError) as e:
        call()
    return e.value.http_status_code, e.value.error_code


def test_basic_auth_is_required(broker: BrokerProcess) -> None:
    status, headers, body = http(broker, "GET", "/subjects")
    assert (status, body) == (401, {"error_code": 401, "message": "Unauthorized"})
    assert headers["WWW-Authenticate"].startswith("Basic ")
    assert http(broker, "GET", "/subjects", basic("alice", "wrong"))[0] == 401
    assert http(broker, "GET", "/subjects", basic("nobody", "alice-secret"))[0] == 401
    assert http(broker, "GET", "/subjects", "Basic !!!")[0] == 401
    assert http(broker, "GET", "/subjects", "Bearer abc")[0] == 401
    assert refused(lambda: registry(broker).get_subjects()) == (401, 401)
    assert refused(lambda: registry(broker, "alice", "wrong").get_subjects()) == (401, 401)
    status, _, types = http(broker, "GET", "/schemas/types", basic("bob", "bob-secret"))  # no ACL needed
    assert status == 200 and sorted(types) == ["AVRO", "JSON", "PROTOBUF"]


def test_a_changed_password_is_checked_again(broker: BrokerProcess) -> None:
    """The registry remembers a credential that checked out; a new password for the user ends that."""
    old, new = basic("carol", "carol-old"), basic("carol", "carol-new")
    assert http(broker, "GET", "/schemas/types", old)[0] == 401  # no such user yet
    add = ["tidelog", "users", "add", "carol", "--bootstrap-server", broker.bootstrap]
    done = subprocess.run([sys.executable, "-m", *add, "--password", "carol-old"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert wait_for_status(broker, old, 200)
    assert http(broker, "GET", "/schemas/types", old)[0] == 200  # remembered now
    done = subprocess.run([sys.executable, "-m", *add, "--password", "carol-new"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert wait_for_status(broker, new, 200)
    assert http(broker, "GET", "/schemas/types", old)[0] == 401


def wait_for_status(broker: BrokerProcess, authorization: str, status: int, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if http(broker, "GET", "/schemas/types", authorization)[0] == status:
            return True
        time.sleep(0.1)
    return False


def test_acls_on_subjects(broker: BrokerProcess) -> None:
    admin, alice, bob = registry(broker, "admin"), registry(broker, "alice"), registry(broker, "bob")
    admin_id = admin.register_schema("admin-orders-value", Schema(AVRO, "AVRO"))

    # alice has no ACL yet: 403 for a subject, nothing listed
    assert refused(lambda: alice.register_schema("alice-orders-value", Schema(AVRO, "AVRO"))) == (403, 40301)
    status, _, body = http(broker, "POST", "/subjects/alice-orders-value/versions",
                           basic("alice", "alice-secret"), {"schema": AVRO})
    assert (status, body) == (403, {"error_code": 40301,
                                    "message": "User is denied operation Write on Subject: alice-orders-value"})
    assert alice.get_subjects() == []
    assert refused(lambda: alice.get_schema(admin_id)) == (403, 40301)

    added = acls(broker, "add", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "Read",
                 "--subject", "alice-orders-value")
    assert added.returncode == 0, added.stderr
    assert added.stdout.splitlines() == [
        "Added ALLOW User:alice from * WRITE on SUBJECT alice-orders-value (LITERAL)",
        "Added ALLOW User:alice from * READ on SUBJECT alice-orders-value (LITERAL)"]
    schema_id = alice.register_schema("alice-orders-value", Schema(AVRO, "AVRO"))
    assert schema_id == admin_id  # the same schema: its one global id
    assert alice.get_latest_version("alice-orders-value").version == 1
    assert alice.get_subjects() == ["alice-orders-value"]  # admin-orders-value is not hers to see
    assert json.loads(alice.get_schema(schema_id).schema_str) == json.loads(AVRO)  # via a subject she may read
    assert sorted(admin.get_subjects()) == ["admin-orders-value", "alice-orders-value"]
    # WRITE does not give DELETE; nor the subject's config; nor the global one (the CLUSTER's)
    assert refused(lambda: alice.delete_subject("alice-orders-value")) == (403, 40301)
    assert refused(lambda: alice.set_compatibility("alice-orders-value", "NONE")) == (403, 40301)
    assert refused(lambda: alice.get_compatibility()) == (403, 40301)
    # bob: none of it
    assert refused(lambda: bob.get_latest_version("alice-orders-value")) == (403, 40301)
    assert bob.get_subjects() == []

    with WireClient.connect(broker.bootstrap) as wire:
        grant(wire, "User:bob", [(ResourceType.SUBJECT, "alice-orders-value", AclOperation.DELETE),
                                 (ResourceType.CLUSTER, "kafka-cluster", AclOperation.DESCRIBE_CONFIGS)])
    assert bob.get_compatibility() == "BACKWARD"
    assert bob.delete_subject("alice-orders-value") == [1]
    assert alice.get_subjects() == []

    # tidelog acls lists SUBJECT ACLs by name beside the others, and removes them
    listed = acls(broker, "list", "--principal", "User:alice")
    assert [line.split() for line in listed.stdout.splitlines()[1:]] == [
        ["SUBJECT", "alice-orders-value", "LITERAL", "User:alice", "*", "READ", "ALLOW"],
        ["SUBJECT", "alice-orders-value", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"]], listed.stderr
    everything = acls(broker, "list")
    assert sorted(line.split()[0] for line in everything.stdout.splitlines()[1:]) == [
        "CLUSTER", "SUBJECT", "SUBJECT", "SUBJECT"], everything.stdout
    removed = acls(broker, "remove", "--allow-principal", "User:alice", "--operation", "Write",
                   "--subject", "alice-orders-value")
    assert removed.returncode == 0, removed.stderr
    assert "Removed ALLOW User:alice from * WRITE on SUBJECT alice-orders-value (LITERAL)" in removed.stdout
    with WireClient.connect(broker.bootstrap) as wire:
        assert [a[:6:5] for a in describe_acls(wire, "User:alice")] == [("SUBJECT", "READ")]

    # the CLI with --user-info
    cli = subprocess.run([sys.executable, "-m", "tidelog", "schemas", "list", "--registry-url",
                          broker.schema_registry_url, "--user-info", "admin:admin-secret"],
                         capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert [line.split()[0] for line in cli.stdout.splitlines()] == ["SUBJECT", "admin-orders-value"]
    denied = subprocess.run([sys.executable, "-m", "tidelog", "schemas", "get", "admin-orders-value",
                             "--registry-url", broker.schema_registry_url, "--user-info", "bob:bob-secret"],
                            capture_output=True, text=True, timeout=60)
    assert denied.returncode == 1
    assert denied.stderr == ("tidelog schemas get: User is denied operation Read on Subject: admin-orders-value "
                             "(error 40301)\n")


def test_the_console_schemas_page_shows_what_the_user_may_read(broker: BrokerProcess) -> None:
    admin = registry(broker, "admin")
    admin.register_schema("console-a-value", Schema(AVRO, "AVRO"))
    admin.register_schema("console-b-value", Schema(AVRO, "AVRO"))
    with WireClient.connect(broker.bootstrap) as wire:
        grant(wire, "User:alice", [(ResourceType.SUBJECT, "console-a-value", AclOperation.READ)])
    assert broker.http_url is not None
    login = urllib.request.Request(broker.http_url + "api/v1/login", method="POST",
                                   data=json.dumps({"username": "alice", "password": "alice-secret"}).encode(),
                                   headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(login, timeout=30) as response:
        cookie = response.headers["Set-Cookie"].split(";")[0]

    def console(path: str) -> tuple[int, Any]:
        request = urllib.request.Request(broker.http_url + "api/v1" + path, headers={"Cookie": cookie})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    status, body = console("/schemas")
    assert status == 200 and [s["subject"] for s in body["subjects"]] == ["console-a-value"]
    assert console("/schemas/console-a-value")[0] == 200
    status, body = console("/schemas/console-b-value")
    assert (status, body["code"]) == (403, "SUBJECT_AUTHORIZATION_FAILED")
    assert console("/schemas/console-b-value/diff?from=1&to=1")[0] == 403
    try:  # without the session cookie
        with urllib.request.urlopen(broker.http_url + "api/v1/schemas", timeout=30) as r:
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    assert status == 401
