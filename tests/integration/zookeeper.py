"""A real ZooKeeper for the cluster-mode tests (fetched from Maven Central: needs java and mvn)."""

from __future__ import annotations

from pathlib import Path

from tests import toolchain
from tidelog.cli.zookeeper import ZooKeeperProcess, ZooKeeperUnavailable, classpath


def start_zookeeper(data_dir: Path) -> ZooKeeperProcess:
    """A started ZooKeeper on a free loopback port; skips (fails in CI) without java and mvn."""
    toolchain.require_command("java+maven", "java", "mvn")
    try:
        classpath()
    except ZooKeeperUnavailable as e:
        toolchain.require("java+maven", False, str(e))
    return ZooKeeperProcess(data_dir).start()


__all__ = ["start_zookeeper"]
