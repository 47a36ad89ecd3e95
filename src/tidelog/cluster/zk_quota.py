"""Client quotas in ZooKeeper, in Kafka's ZooKeeper-era layout (``AdminZkClient``; names sanitised with
:func:`~tidelog.cluster.client_quota.sanitize`, ``<default>`` for a default)::

    /config/users/<user>                      {"version":1,"config":{"producer_byte_rate":"1024",...}}
    /config/users/<user>/clients/<client-id>  the same shape
    /config/clients/<client-id>               the same shape
    /config/ips/<ip>                          connection_creation_rate (stored, not enforced)
    /config/changes/config_change_<seq>       {"version":2,"entity_path":"users/<user>/clients/<client-id>"}

A user's znode is shared: SCRAM credentials (``SCRAM-SHA-256``, ``SCRAM-SHA-512``) live in the same
config map, so a quota change reads the znode and rewrites it with every key it does not own kept.
Integer quotas are written as Kafka writes them (``"1024"``), the others as decimals (``"12.5"``).
Every change also leaves a sequential change notification, as Kafka's tools do, for brokers that
follow ``/config/changes``; Tidelog's brokers watch the config znodes themselves.
Used by :class:`~tidelog.cluster.zk_store.ZooKeeperStore`, on its thread rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from tidelog.cluster import zk_data as zk
from tidelog.cluster.client_quota import (
    CLIENT_ID,
    CLIENT_QUOTA_KEYS,
    DEFAULT_NAME,
    IP,
    IP_QUOTA_KEYS,
    USER,
    ClientQuotas,
    Entity,
    desanitize,
    sanitize,
)

CONFIG_USERS = "/config/users"
CONFIG_CLIENTS = "/config/clients"
CONFIG_IPS = "/config/ips"
CONFIG_CHANGES = "/config/changes"
CHANGE_PREFIX = f"{CONFIG_CHANGES}/config_change_"
_KEYS = {**CLIENT_QUOTA_KEYS, **IP_QUOTA_KEYS}


def _name(name: str | None) -> str:
    return DEFAULT_NAME if name is None else sanitize(name)


def _entity_name(znode: str) -> str | None:
    return None if znode == DEFAULT_NAME else desanitize(znode)


def entity_path(entity: Entity) -> str:
    """``users/alice/clients/app``: the path under /config (also the change notification's)."""
    names = dict(entity)
    if IP in names:
        return f"ips/{_name(names[IP])}"
    if USER in names and CLIENT_ID in names:
        return f"users/{_name(names[USER])}/clients/{_name(names[CLIENT_ID])}"
    if USER in names:
        return f"users/{_name(names[USER])}"
    return f"clients/{_name(names[CLIENT_ID])}"


def _quotas(config: dict[str, str]) -> dict[str, float]:
    out = {}
    for key, value in config.items():
        if key in _KEYS:
            try:
                out[key] = float(value)
            except ValueError:
                pass
    return out


def read_client_quotas(client: KazooClient, watch: Callable) -> dict[Entity, dict[str, float]]:
    """Every quota entity under /config, leaving watches on the znodes and their children."""
    def config(path: str) -> dict[str, str]:
        try:
            return zk.decode_config(client.get(path, watch=watch)[0])
        except NoNodeError:
            return {}

    def children(path: str) -> list[str]:
        if not client.exists(path, watch=watch):
            return []
        try:
            return client.get_children(path, watch=watch)
        except NoNodeError:
            return []

    found: dict[Entity, dict[str, float]] = {}

    def add(entity: dict[str, str | None], path: str) -> None:
        values = _quotas(config(path))
        if values:
            found[tuple(sorted(entity.items()))] = values

    for user in children(CONFIG_USERS):
        add({USER: _entity_name(user)}, f"{CONFIG_USERS}/{user}")
        for client_id in children(f"{CONFIG_USERS}/{user}/clients"):
            add({USER: _entity_name(user), CLIENT_ID: _entity_name(client_id)},
                f"{CONFIG_USERS}/{user}/clients/{client_id}")
    for client_id in children(CONFIG_CLIENTS):
        add({CLIENT_ID: _entity_name(client_id)}, f"{CONFIG_CLIENTS}/{client_id}")
    for ip in children(CONFIG_IPS):
        add({IP: _entity_name(ip)}, f"{CONFIG_IPS}/{ip}")
    return found


def _text(key: str, value: float) -> str:
    return str(int(value)) if _KEYS.get(key) in ("long", "int") else repr(float(value))


def write_client_quotas(client: KazooClient, tx, old: ClientQuotas, new: ClientQuotas) -> None:
    """Add to the transaction ``tx`` the znode writes (and change notifications) that turn ``old``'s
    quotas into ``new``'s, keeping every other key of the znodes (SCRAM credentials)."""
    created: set[str] = set()
    for entity in sorted(set(old) | set(new), key=entity_path):
        if old.get(entity) == new.get(entity):
            continue
        relative = entity_path(entity)
        path = f"/config/{relative}"
        try:
            raw, _ = client.get(path)
            exists = True
        except NoNodeError:
            raw, exists = None, False
        config = {k: v for k, v in zk.decode_config(raw).items() if k not in _KEYS}
        config.update({k: _text(k, v) for k, v in sorted(new.get(entity, {}).items())})
        if exists:
            tx.set_data(path, zk.encode_config(config))
        else:
            parts = path.strip("/").split("/")
            for depth in range(1, len(parts)):  # parents, data-less as Kafka's createRecursive makes them
                parent = "/" + "/".join(parts[:depth])
                if parent not in created and not client.exists(parent):
                    tx.create(parent)
                    created.add(parent)
            tx.create(path, zk.encode_config(config))
            created.add(path)
        if CONFIG_CHANGES not in created and not client.exists(CONFIG_CHANGES):
            tx.create(CONFIG_CHANGES)
            created.add(CONFIG_CHANGES)
        tx.create(CHANGE_PREFIX, json.dumps({"version": 2, "entity_path": relative}).encode(), sequence=True)


__all__ = ["CONFIG_CHANGES", "CONFIG_CLIENTS", "CONFIG_IPS", "CONFIG_USERS", "entity_path", "read_client_quotas",
           "write_client_quotas"]
