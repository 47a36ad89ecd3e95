"""The embedded SCRAM credential file: salted credentials only, private, re-read when changed."""

from __future__ import annotations

import json
import os

from tidelog.cluster.credential_store import EmbeddedCredentialStore
from tidelog.security.scram import credential_from_password


def test_alter_persists_salted_credentials_only(tmp_path):
    store = EmbeddedCredentialStore(tmp_path)
    cred = credential_from_password("SCRAM-SHA-512", "hunter2")
    store.alter([("alice", "SCRAM-SHA-512", cred)], [])
    text = store.path.read_text()
    assert "hunter2" not in text
    assert json.loads(text)["users"]["alice"]["SCRAM-SHA-512"] == cred.to_text()
    assert os.stat(store.path).st_mode & 0o777 == 0o600
    assert EmbeddedCredentialStore(tmp_path).get("alice", "SCRAM-SHA-512") == cred


def test_deleting_the_last_mechanism_removes_the_user(tmp_path):
    store = EmbeddedCredentialStore(tmp_path)
    store.alter([("bob", "SCRAM-SHA-256", credential_from_password("SCRAM-SHA-256", "x"))], [])
    store.alter([], [("bob", "SCRAM-SHA-256")])
    assert store.users() == {}


def test_a_change_by_another_writer_is_seen(tmp_path):
    reader = EmbeddedCredentialStore(tmp_path)
    assert reader.get("carol", "SCRAM-SHA-256") is None
    cred = credential_from_password("SCRAM-SHA-256", "x")
    EmbeddedCredentialStore(tmp_path).alter([("carol", "SCRAM-SHA-256", cred)], [])
    assert reader.get("carol", "SCRAM-SHA-256") == cred
