"""SCRAM credentials in ZooKeeper, in Kafka's ZooKeeper-era format: ``/config/users/<user>`` holding
``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=N"}}``, a change
notification under ``/config/changes``, and the other keys of the znode (a user's quotas, written by the
quota manager) kept as they are. About 10 s, most of it ZooKeeper's start."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from tests.integration.zookeeper import start_zookeeper
from tidelog.cli.zookeeper import ZooKeeperProcess
from tidelog.cluster.credential_store import ZooKeeperCredentialStore
from tidelog.security.scram import ScramCredential, credential_from_password, password_matches

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("zk-credentials")]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KazooClient]:
    zk: ZooKeeperProcess = start_zookeeper(tmp_path_factory.mktemp("zk-credentials"))
    try:
        kazoo = KazooClient(hosts=zk.connect, timeout=10)
        kazoo.start(timeout=30)
        yield kazoo
        kazoo.stop()
        kazoo.close()
    finally:
        zk.stop()


def test_credentials_are_written_in_kafkas_format_and_keep_other_keys(client):
    client.create("/config/users/alice", json.dumps(
        {"version": 1, "config": {"producer_byte_rate": "1024"}}).encode(), makepath=True)
    store = ZooKeeperCredentialStore(lambda: client)
    cred = credential_from_password("SCRAM-SHA-256", "alice-pw", 4096)
    store.alter([("alice", "SCRAM-SHA-256", cred)], [])
    raw = json.loads(client.get("/config/users/alice")[0])
    assert raw == {"version": 1, "config": {"producer_byte_rate": "1024", "SCRAM-SHA-256": cred.to_text()}}
    assert ScramCredential.from_text(raw["config"]["SCRAM-SHA-256"]) == store.get("alice", "SCRAM-SHA-256")
    assert password_matches("SCRAM-SHA-256", store.get("alice", "SCRAM-SHA-256"), "alice-pw")
    changes = [json.loads(client.get(f"/config/changes/{c}")[0]) for c in client.get_children("/config/changes")]
    assert {"version": 2, "entity_path": "users/alice"} in changes
    store.alter([], [("alice", "SCRAM-SHA-256")])
    assert json.loads(client.get("/config/users/alice")[0])["config"] == {"producer_byte_rate": "1024"}
    assert store.users() == {}


def test_users_lists_only_users_with_credentials(client):
    store = ZooKeeperCredentialStore(lambda: client)
    client.create("/config/users/quota-only", json.dumps({"version": 1, "config": {"consumer_byte_rate": "1"}})
                  .encode(), makepath=True)
    cred = credential_from_password("SCRAM-SHA-512", "bob-pw")
    store.alter([("bob", "SCRAM-SHA-512", cred)], [])
    assert store.users() == {"bob": {"SCRAM-SHA-512": cred}}
    assert store.get("nobody", "SCRAM-SHA-512") is None
