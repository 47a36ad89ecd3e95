"""TubeMQ secrets in the data dir: owner-only, re-read when another process (the CLI) changes them,
apart from the SCRAM credentials (which never hold a password)."""

from __future__ import annotations

from pathlib import Path

from tidelog.cli.main import main
from tidelog.cluster.credential_store import EmbeddedCredentialStore
from tidelog.cluster.tubemq_secret_store import TubeSecretStore


def test_secrets_are_owner_only_and_seen_by_a_running_reader(tmp_path: Path) -> None:
    reader = TubeSecretStore(tmp_path)
    assert reader.get("alice") is None
    TubeSecretStore(tmp_path).alter({"alice": "a-secret", "bob": "b-secret"}, [])
    assert (reader.get("alice"), reader.users()) == ("a-secret", ["alice", "bob"])
    assert reader.path.stat().st_mode & 0o777 == 0o600
    TubeSecretStore(tmp_path).alter({}, ["alice"])
    assert (reader.get("alice"), reader.get("bob")) == (None, "b-secret")


def test_the_cli_writes_and_deletes_a_secret_and_no_scram_credential(tmp_path: Path, capsys) -> None:
    assert main(["users", "add", "carol", "--tubemq", "--password", "c-secret", "--data-dir", str(tmp_path)]) == 0
    assert TubeSecretStore(tmp_path).get("carol") == "c-secret"
    assert EmbeddedCredentialStore(tmp_path).users() == {}  # no SCRAM credential for a TubeMQ secret
    assert main(["users", "add", "dave", "--password", "d-password", "--mechanism", "SCRAM-SHA-256",
                 "--data-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["users", "list", "--data-dir", str(tmp_path)]) == 0
    listed = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert listed == [["carol", "TUBEMQ", "-"], ["dave", "SCRAM-SHA-256", "4096"]]
    assert main(["users", "delete", "carol", "--tubemq", "--data-dir", str(tmp_path)]) == 0
    assert TubeSecretStore(tmp_path).get("carol") is None
    assert main(["users", "delete", "carol", "--tubemq", "--data-dir", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert "c-secret" not in out.out + out.err
    assert "tidelog users delete: no such TubeMQ secret: user carol" in out.err
