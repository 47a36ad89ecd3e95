"""A real ZooKeeper for the cluster-mode tests (fetched from Maven Central: needs java and mvn)."""

from __future__ import annotations

import json
from pathlib import Path

from tests import toolchain
from tidelog.cli.zookeeper import ZooKeeperProcess, ZooKeeperUnavailable, classpath
from tidelog.security.scram import credential_from_password


def start_zookeeper(data_dir: Path) -> ZooKeeperProcess:
    """A started ZooKeeper on a free loopback port; skips (fails in CI) without java and mvn."""
    toolchain.require_command("java+maven", "java", "mvn")
    try:
        classpath()
    except ZooKeeperUnavailable as e:
        toolchain.require("java+maven", False, str(e))
    return ZooKeeperProcess(data_dir).start()


def add_scram_user(zookeeper: ZooKeeperProcess, chroot: str, user: str, password: str, mechanism: str) -> None:
    """A SCRAM user written into ZooKeeper before the brokers start (``/config/users/<user>``, Kafka's
    layout), as ``kafka-configs --zookeeper`` would."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=zookeeper.connect)
    zk.start(10)
    try:
        zk.create(f"{chroot}/config/users/{user}", json.dumps({"version": 1, "config": {
            mechanism: credential_from_password(mechanism, password).to_text()}}).encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()


__all__ = ["ZooKeeperProcess", "add_scram_user", "start_zookeeper"]
