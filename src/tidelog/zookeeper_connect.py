"""``zookeeper.connect``: the ZooKeeper ensemble of a cluster and the chroot its znodes live under.

Kafka's format: ``host1:port1,host2:port2[/chroot/path]`` (the chroot, if any, once after the last
host; default port 2181). ``parse_zookeeper_connect`` validates it as a config value; the string
itself goes to the ZooKeeper client, which understands the chroot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tidelog.errors import ConfigError

DEFAULT_PORT = 2181


@dataclass(frozen=True, slots=True)
class ZooKeeperConnect:
    hosts: tuple[tuple[str, int], ...]
    chroot: str = ""  # "" or "/a/b"

    @property
    def hosts_text(self) -> str:
        return ",".join(f"{host}:{port}" for host, port in self.hosts)

    def __str__(self) -> str:
        return self.hosts_text + self.chroot


def parse_zookeeper_connect(key: str, raw: Any) -> ZooKeeperConnect | None:
    """None for an empty value (no cluster mode); ConfigError naming ``key`` for a malformed one."""
    text = str(raw).strip()
    if not text:
        return None

    def bad(why: str) -> ConfigError:
        return ConfigError(f"Invalid value {text!r} for configuration {key}: {why} "
                           "(expected host:port[,host:port...][/chroot])")

    hosts_text, slash, chroot = text.partition("/")
    chroot = slash + chroot
    if chroot and (chroot.endswith("/") or "//" in chroot):
        raise bad(f"malformed chroot {chroot!r}")
    hosts = []
    for item in hosts_text.split(","):
        host, colon, port_text = item.strip().rpartition(":")
        if not colon:
            host, port_text = port_text, str(DEFAULT_PORT)
        if not host:
            raise bad(f"missing host in {item.strip()!r}")
        try:
            port = int(port_text)
        except ValueError:
            raise bad(f"port {port_text!r} is not a number") from None
        if not 0 < port <= 65535:
            raise bad(f"port {port} is not between 1 and 65535")
        hosts.append((host, port))
    return ZooKeeperConnect(tuple(hosts), chroot)


__all__ = ["DEFAULT_PORT", "ZooKeeperConnect", "parse_zookeeper_connect"]
