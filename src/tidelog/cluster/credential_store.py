"""Where SCRAM credentials live (never passwords: salt, iterations, StoredKey, ServerKey).

* A single node keeps them in ``<data dir>/tidelog-credentials.json`` (written atomically), a file of
  its own beside the metadata file so that ``tidelog users add --data-dir DIR`` can create the first
  admin user before the broker ever starts (as Kafka's ``kafka-storage format --add-scram`` does)::

      {"version": 1, "users": {"alice": {"SCRAM-SHA-256": "salt=...,stored_key=...,server_key=...,iterations=4096"}}}

* A cluster keeps them in ZooKeeper, in Kafka's format: znode ``/config/users/<user>`` holding
  ``{"version": 1, "config": {"SCRAM-SHA-256": "salt=...,...", ...}}``, with a change notification under
  ``/config/changes``. The same znode's config map holds the user's quotas
  (``producer_byte_rate`` ...): writes read, modify and write back preserving every key they do not own.

Not thread-safe; the embedded store is loop-only; the ZooKeeper one answers lookups from a cache kept by
a worker thread and writes (``alter``) with blocking ZooKeeper calls.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from tidelog.cluster.zk_watched_children import WatchedChildren
from tidelog.security.scram import MECHANISMS, ScramCredential

log = logging.getLogger(__name__)

CREDENTIALS_FILE = "tidelog-credentials.json"
FORMAT_VERSION = 1

#: (user, mechanism, credential) to add or replace; (user, mechanism) to remove.
Upsertion = tuple[str, str, ScramCredential]
Deletion = tuple[str, str]


class CredentialStore(Protocol):
    def get(self, user: str, mechanism: str) -> ScramCredential | None: ...

    def users(self) -> dict[str, dict[str, ScramCredential]]: ...

    def alter(self, upsertions: Iterable[Upsertion], deletions: Iterable[Deletion]) -> None: ...


class EmbeddedCredentialStore:
    """The credentials of a single node, in a JSON file in its data dir (read at first use, and again
    when the file changed, so an offline ``tidelog users add`` is seen)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / CREDENTIALS_FILE
        self._users: dict[str, dict[str, ScramCredential]] = {}
        self._mtime: int | None = None

    def _load(self) -> dict[str, dict[str, ScramCredential]]:
        try:
            mtime = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            self._users, self._mtime = {}, None
            return self._users
        if mtime != self._mtime:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if raw.get("version") != FORMAT_VERSION:
                raise ValueError(f"{self.path}: unsupported credentials format {raw.get('version')!r}")
            self._users = {user: {m: ScramCredential.from_text(text) for m, text in creds.items() if m in MECHANISMS}
                           for user, creds in raw.get("users", {}).items()}
            self._mtime = mtime
        return self._users

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._load().get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {u: dict(c) for u, c in self._load().items()}

    def alter(self, upsertions: Iterable[Upsertion], deletions: Iterable[Deletion]) -> None:
        users = self.users()
        for user, mechanism in deletions:
            users.get(user, {}).pop(mechanism, None)
        for user, mechanism, credential in upsertions:
            users.setdefault(user, {})[mechanism] = credential
        users = {u: c for u, c in users.items() if c}
        data = {"version": FORMAT_VERSION,
                "users": {u: {m: c.to_text() for m, c in sorted(creds.items())} for u, creds in sorted(users.items())}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # salted keys: owner only
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._users, self._mtime = users, self.path.stat().st_mtime_ns


USERS_PATH = "/config/users"
CHANGES_PATH = "/config/changes"


def _parse_config(data: bytes) -> dict[str, str]:
    """A ``/config/users/<user>`` znode's config map (empty for an empty znode)."""
    raw = json.loads(data.decode("utf-8")) if data else {}
    return dict(raw.get("config", {}))


class ZooKeeperCredentialStore:
    """The credentials of a cluster, in Kafka's ``/config/users/<user>`` znodes. ``client`` returns the
    broker's connected kazoo client (the metadata store's).

    Once :meth:`watch` has run (the broker calls it right after opening the metadata store), lookups
    (``get``, ``users``: SASL authentications, the console's logins) read a cache and never wait for
    ZooKeeper: a worker thread re-reads ``/config/users`` whenever a watch fires or the session comes
    back, so a slow or paused ZooKeeper never holds up the event loop (it only delays changes)."""

    def __init__(self, client: Callable[[], Any]) -> None:
        self._client = client
        self._cache: dict[str, dict[str, str]] | None = None  # user -> its config map; None: not watching
        self._children = WatchedChildren(client, USERS_PATH, _parse_config, self._read_all, what="SCRAM users",
                                         thread_name="tidelog-zk-credentials")

    def watch(self) -> None:
        """Read every user now (blocking: start-up) and keep the cache current from then on."""
        self._children.watch()

    def close(self) -> None:
        self._children.close()

    def _read_all(self, users: dict[str, dict[str, str]]) -> None:  # worker thread (or start-up)
        self._cache = users

    def _read(self, user: str) -> tuple[dict[str, str], int]:
        from kazoo.exceptions import NoNodeError

        try:
            data, stat = self._client().get(f"{USERS_PATH}/{user}")
        except NoNodeError:
            return {}, -1
        return _parse_config(data), stat.version

    def _config(self, user: str) -> dict[str, str]:
        cache = self._cache
        return cache.get(user, {}) if cache is not None else self._read(user)[0]

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        text = self._config(user).get(mechanism)
        return ScramCredential.from_text(text) if text else None

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        from kazoo.exceptions import NoNodeError

        cache = self._cache
        if cache is not None:
            configs = dict(cache)
        else:
            try:
                configs = {user: self._read(user)[0] for user in self._client().get_children(USERS_PATH)}
            except NoNodeError:
                return {}
        out = {}
        for user, config in configs.items():
            creds = {m: ScramCredential.from_text(v) for m, v in config.items() if m in MECHANISMS}
            if creds:
                out[user] = creds
        return out

    def alter(self, upsertions: Iterable[Upsertion], deletions: Iterable[Deletion]) -> None:
        changes: dict[str, list[tuple[str, ScramCredential | None]]] = {}
        for user, mechanism in deletions:
            changes.setdefault(user, []).append((mechanism, None))
        for user, mechanism, credential in upsertions:
            changes.setdefault(user, []).append((mechanism, credential))
        client = self._client()
        for user, edits in changes.items():
            config, version = self._read(user)  # other keys (quotas) are kept as they are
            for mechanism, credential in edits:
                if credential is None:
                    config.pop(mechanism, None)
                else:
                    config[mechanism] = credential.to_text()
            data = json.dumps({"version": 1, "config": config}).encode()
            path = f"{USERS_PATH}/{user}"
            if version < 0:
                client.create(path, data, makepath=True)
            else:
                client.set(path, data, version=version)
            if self._cache is not None:  # this broker sees its own change at once; the watch confirms it
                self._cache = {**self._cache, user: dict(config)}
            client.create(f"{CHANGES_PATH}/config_change_", json.dumps(
                {"version": 2, "entity_path": f"users/{user}"}).encode(), sequence=True, makepath=True)


__all__ = ["CREDENTIALS_FILE", "CredentialStore", "EmbeddedCredentialStore", "ZooKeeperCredentialStore"]
