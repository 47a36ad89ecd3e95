"""Where TubeMQ secrets live: the passwords TubeMQ clients sign with (docs/security.md, "TubeMQ secrets").

TubeMQ's client signs with HMAC-SHA1 keyed by the plain password, so the broker must hold that key;
unlike SCRAM credentials it is password-equivalent. It is kept apart from the SCRAM credentials, only
for users given one (``tidelog users add NAME --tubemq --data-dir DIR``), in
``<data dir>/tidelog-tubemq-secrets.json`` (mode 0600, written atomically, re-read when it changes)::

    {"version": 1, "secrets": {"alice": "..."}}

A single node only: a cluster's brokers do not share this file (docs/tubemq.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SECRETS_FILE = "tidelog-tubemq-secrets.json"
FORMAT_VERSION = 1


class TubeSecretStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / SECRETS_FILE
        self._secrets: dict[str, str] = {}
        self._mtime: int | None = None

    def _load(self) -> dict[str, str]:
        try:
            mtime = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            self._secrets, self._mtime = {}, None
            return self._secrets
        if mtime != self._mtime:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if raw.get("version") != FORMAT_VERSION:
                raise ValueError(f"{self.path}: unsupported TubeMQ secrets format {raw.get('version')!r}")
            self._secrets = {str(u): str(s) for u, s in raw.get("secrets", {}).items()}
            self._mtime = mtime
        return self._secrets

    def get(self, user: str) -> str | None:
        return self._load().get(user)

    def users(self) -> list[str]:
        return sorted(self._load())

    def alter(self, upsertions: dict[str, str], deletions: list[str]) -> None:
        secrets = dict(self._load())
        for user in deletions:
            secrets.pop(user, None)
        secrets.update(upsertions)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # password-equivalent: owner only
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": FORMAT_VERSION, "secrets": dict(sorted(secrets.items()))}, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._secrets, self._mtime = secrets, self.path.stat().st_mtime_ns


__all__ = ["SECRETS_FILE", "TubeSecretStore"]
