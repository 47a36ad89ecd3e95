"""A cluster shared by the tests of a module, handed to each test in the state the module started it in:
after every test (passed or failed) paused brokers are resumed, stopped ones restarted, and partition
reassignments still in progress cancelled; if that cannot be done, the cluster is stopped and the next
test gets a fresh one. So a test that fails (a timeout on a loaded machine) fails alone instead of
leaving a reassignment or a stopped broker to the tests after it.

Use::

    @pytest.fixture(scope="module")
    def shared_cluster(tmp_path_factory):
        with SharedCluster(lambda root: LocalCluster(root, ...), tmp_path_factory.mktemp("x")) as shared:
            yield shared

    @pytest.fixture
    def cluster(shared_cluster):
        yield from shared_cluster.for_test()
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

from tidelog.protocol.messages import AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest
from tidelog.testing.client import ConnectionClosed, WireClient
from tidelog.testing.cluster import LocalCluster, wait_for

log = logging.getLogger(__name__)

#: How long restoring may take on a loaded machine before the cluster is replaced instead.
RESTORE_TIMEOUT = 90.0


def reassignments_in_progress(cluster: LocalCluster) -> dict[str, list[int]]:
    """topic -> partitions with a reassignment in progress, as a live broker lists them."""
    R = ListPartitionReassignmentsRequest
    last: Exception | None = None
    for i in cluster.live_ids():
        try:
            with WireClient.connect(cluster.brokers[i].bootstrap, timeout=10) as client:
                response = client.request(R(topics=None), 0)
        except (OSError, ConnectionClosed) as e:  # that broker is not answering: ask another
            last = e
            continue
        if response.error_code != 0:
            continue  # e.g. no controller yet: ask another or try again
        return {t.name: [p.partition_index for p in t.partitions] for t in response.topics}
    raise RuntimeError(f"no broker listed the reassignments ({last})")


def cancel_reassignments(cluster: LocalCluster, moving: dict[str, list[int]]) -> None:
    R = AlterPartitionReassignmentsRequest
    request = R(timeout_ms=30_000, topics=[
        R.ReassignableTopic(name=t, partitions=[R.ReassignablePartition(partition_index=p, replicas=None) for p in ps])
        for t, ps in moving.items()])
    with WireClient.connect(cluster.brokers[cluster.live_ids()[0]].bootstrap, timeout=30) as client:
        client.request(request, 0)


def restore(cluster: LocalCluster, timeout: float = RESTORE_TIMEOUT) -> None:
    """Every broker running and registered, no reassignment in progress. Raises when that fails."""
    for broker in cluster.brokers.values():
        if broker.alive:
            broker.proc.send_signal(signal.SIGCONT)  # paused by a test (harmless otherwise)
    for broker_id, broker in cluster.brokers.items():
        if not broker.alive:
            cluster.restart(broker_id)
    wait_for(lambda: len(cluster.live_ids()) == cluster.count, timeout, what=f"{cluster.count} registered brokers")

    def settled() -> bool:
        moving = reassignments_in_progress(cluster)
        if moving:
            cancel_reassignments(cluster, moving)
            return False
        return True

    wait_for(settled, timeout, what="no reassignment in progress", interval=1.0)


class SharedCluster:
    """A module's cluster, rebuilt when a test left it in a state :func:`restore` cannot undo."""

    def __init__(self, make: Callable[[Path], LocalCluster], root: Path) -> None:
        self._make = make
        self._root = root
        self._generation = 0
        self.cluster: LocalCluster | None = None

    def get(self) -> LocalCluster:
        if self.cluster is None:
            self._generation += 1
            root = self._root / f"cluster-{self._generation}"
            root.mkdir(parents=True)
            self.cluster = self._make(root)
            try:
                if self.cluster.zk is None:  # not started by its constructor
                    self.cluster.start()
            except BaseException:
                self.close()
                raise
        return self.cluster

    def for_test(self) -> Iterator[LocalCluster]:
        """The fixture body: the cluster, then restored (or dropped) after the test."""
        cluster = self.get()
        yield cluster
        try:
            restore(cluster)
        except Exception as e:  # the next test gets a fresh cluster; this test's own result stands
            log.warning("the shared cluster could not be restored (%s): the next test gets a new one", e)
            self.close()

    def close(self) -> None:
        if self.cluster is not None:
            cluster, self.cluster = self.cluster, None
            cluster.stop()

    def __enter__(self) -> SharedCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
