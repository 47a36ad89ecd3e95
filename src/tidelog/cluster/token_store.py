"""Where delegation tokens live (their :class:`~tidelog.security.delegation_token.TokenInformation`, never
their HMACs: every broker recomputes those from ``delegation.token.secret.key``).

* A single node keeps them in ``<data dir>/tidelog-delegation-tokens.json`` (written atomically, read at
  start), beside the metadata and SCRAM-credential files::

      {"version": 1, "tokens": {"<token id>": {<Kafka's token JSON, below>}}}

* A cluster keeps them in ZooKeeper in Kafka's ZooKeeper-era layout (``DelegationTokenManagerZk``):
  znode ``/delegation_token/tokens/<token id>`` holding Kafka's token JSON; every broker watches the
  tokens (children and data) and re-reads them on a change. (Kafka's brokers also wrote a change
  notification under ``/delegation_token/token_changes``; the watches make it unnecessary here.)::

      {"version": 3, "owner": "User%3Aalice", "tokenRequester": "User%3Aalice", "renewers": ["User%3Abob"],
       "issueTimestamp": 1700000000000, "maxTimestamp": 1700604800000, "expiryTimestamp": 1700086400000,
       "tokenId": "Tl3TrGdoQbygAQgSMdA8Kw"}

  Principals are ``Type:name`` sanitized as Kafka's ``Sanitizer`` does.

Lookups (SCRAM authentications, describe) read an in-memory map and never wait for ZooKeeper: a worker
thread re-reads the tokens when a watch fires or the session comes back. Writes (create, renew, expire:
rare admin calls) are blocking ZooKeeper calls, as the SCRAM credential store's are.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tidelog.cluster.client_quota import desanitize, sanitize
from tidelog.cluster.zk_watched_children import WatchedChildren
from tidelog.security.delegation_token import TokenInformation
from tidelog.security.principal import KafkaPrincipal

log = logging.getLogger(__name__)

TOKENS_FILE = "tidelog-delegation-tokens.json"
FORMAT_VERSION = 1
#: Kafka's DelegationTokenManagerZk.CurrentVersion (version 3 added the requester).
TOKEN_JSON_VERSION = 3

TOKEN_ROOT = "/delegation_token"
TOKENS_PATH = f"{TOKEN_ROOT}/tokens"


def token_to_json(info: TokenInformation) -> dict[str, Any]:
    return {"version": TOKEN_JSON_VERSION, "owner": sanitize(str(info.owner)),
            "tokenRequester": sanitize(str(info.token_requester)),
            "renewers": [sanitize(str(r)) for r in info.renewers], "issueTimestamp": info.issue_timestamp,
            "maxTimestamp": info.max_timestamp, "expiryTimestamp": info.expiry_timestamp, "tokenId": info.token_id}


def token_from_json(raw: dict[str, Any]) -> TokenInformation:
    version = raw["version"]
    if not 0 < version <= TOKEN_JSON_VERSION:
        raise ValueError(f"unsupported delegation token version {version!r}")
    owner = KafkaPrincipal.parse(desanitize(raw["owner"]))
    requester = KafkaPrincipal.parse(desanitize(raw["tokenRequester"])) if version >= 3 else owner
    return TokenInformation(str(raw["tokenId"]), owner, requester,
                            tuple(KafkaPrincipal.parse(desanitize(r)) for r in raw["renewers"]),
                            int(raw["issueTimestamp"]), int(raw["maxTimestamp"]), int(raw["expiryTimestamp"]))


def _parse_token(data: bytes) -> TokenInformation | None:
    return token_from_json(json.loads(data.decode("utf-8"))) if data else None


class EmbeddedTokenStore:
    """The tokens of a single node, in a JSON file in its data dir. Loop-only."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / TOKENS_FILE
        self._tokens: dict[str, TokenInformation] | None = None

    def tokens(self) -> dict[str, TokenInformation]:
        if self._tokens is None:
            try:
                raw = json.loads(self.path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                raw = {"version": FORMAT_VERSION, "tokens": {}}
            if raw.get("version") != FORMAT_VERSION:
                raise ValueError(f"{self.path}: unsupported delegation tokens format {raw.get('version')!r}")
            self._tokens = {tid: token_from_json(t) for tid, t in raw.get("tokens", {}).items()}
        return self._tokens

    def put(self, token: TokenInformation) -> None:
        self._write({**self.tokens(), token.token_id: token})

    def remove(self, token_id: str) -> None:
        tokens = dict(self.tokens())
        if tokens.pop(token_id, None) is not None:
            self._write(tokens)

    def _write(self, tokens: dict[str, TokenInformation]) -> None:
        data = {"version": FORMAT_VERSION, "tokens": {tid: token_to_json(t) for tid, t in sorted(tokens.items())}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._tokens = tokens

    def close(self) -> None:
        pass


class ZooKeeperTokenStore:
    """The tokens of a cluster, in Kafka's ``/delegation_token`` znodes. ``client`` returns the broker's
    connected kazoo client (the metadata store's). :meth:`watch` (at start, once the store is open) reads
    every token and keeps the map current (watches on the tokens' parent and on each token)."""

    def __init__(self, client: Callable[[], Any]) -> None:
        self._client = client
        self._tokens: dict[str, TokenInformation] = {}
        self._children = WatchedChildren(client, TOKENS_PATH, _parse_token, self._read, what="delegation tokens",
                                         thread_name="tidelog-zk-tokens")

    def watch(self) -> None:
        self._children.watch()

    def close(self) -> None:
        self._children.close()

    def _read(self, tokens: dict[str, TokenInformation]) -> None:  # worker thread (or start-up)
        self._tokens = tokens

    def tokens(self) -> dict[str, TokenInformation]:
        return self._tokens

    def put(self, token: TokenInformation) -> None:
        from kazoo.exceptions import NodeExistsError

        zkc = self._client()
        path = f"{TOKENS_PATH}/{token.token_id}"
        data = json.dumps(token_to_json(token)).encode()
        try:
            zkc.create(path, data, makepath=True)
        except NodeExistsError:
            zkc.set(path, data)
        self._tokens = {**self._tokens, token.token_id: token}  # seen here at once; the watch confirms it

    def remove(self, token_id: str) -> None:
        from kazoo.exceptions import NoNodeError

        try:
            self._client().delete(f"{TOKENS_PATH}/{token_id}")
        except NoNodeError:
            pass
        self._tokens = {tid: t for tid, t in self._tokens.items() if tid != token_id}


__all__ = ["TOKENS_FILE", "EmbeddedTokenStore", "ZooKeeperTokenStore", "token_from_json", "token_to_json"]
