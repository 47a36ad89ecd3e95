"""What a broker's ZooKeeper session holds, in Kafka's ZooKeeper-era layout (:mod:`zk_data`): its
registration, the ephemeral ``/brokers/ids/<id>``, and the controller's ``/controller``.

* :class:`Registration` creates the registration; one left by an earlier session of the same id is
  waited out (ZooKeeper's watch on it says when it goes, bounded by the session timeout, ZooKeeper's
  own real time), one a live broker holds is refused. Blocking: the store calls it from its reader thread.
* :func:`send_election` runs for controller (Kafka's): create ``/controller`` and bump
  ``/controller_epoch`` at the version just read, in one transaction, sent asynchronously; the
  outcome comes back on kazoo's thread. Who runs, and what the outcome means, is decided in the
  controller's event queue (:class:`~tidelog.cluster.zk_store.ZooKeeperStore`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError

from tidelog.cluster import zk_data as zk

log = logging.getLogger(__name__)


class Registration:
    """A broker's ``/brokers/ids/<id>``; :meth:`close` ends a wait for an old registration at once."""

    def __init__(self) -> None:
        self._waits: list[threading.Event] = []
        self.closed = False

    def register(self, client: KazooClient, broker_id: int, data: bytes, session_timeout_ms: int) -> None:
        """Create the registration; wait out an old session of the same id, refuse a live one (ValueError)."""
        path = zk.broker_path(broker_id)
        deadline = time.monotonic() + session_timeout_ms / 1000 + 2
        while True:
            try:
                client.create(path, data, ephemeral=True)
                log.info("registered broker %d at %s", broker_id, path)
                return
            except NodeExistsError:
                gone = threading.Event()  # set by ZooKeeper's watch when the old registration goes
                try:
                    _, stat = client.get(path, watch=lambda _event, gone=gone: gone.set())
                except NoNodeError:
                    continue
                if stat.ephemeralOwner == client.client_id[0]:
                    client.set(path, data)
                    return
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ValueError(f"broker.id {broker_id} is already registered in ZooKeeper by a live "
                                     "broker; every broker of a cluster needs its own broker.id") from None
                self._waits.append(gone)
                try:
                    gone.wait(remaining)  # the watch (or close()) ends the wait; no polling
                finally:
                    self._waits.remove(gone)
                if self.closed:
                    raise ValueError(f"broker {broker_id}: closed while waiting to register") from None

    def close(self) -> None:
        self.closed = True
        for wait in list(self._waits):
            wait.set()


def send_election(client: KazooClient, broker_id: int, on_answer: Callable[[int | None], None]) -> None:
    """Run for controller without waiting; ``on_answer(the controller epoch won, or None: another broker
    won, or ZooKeeper failed)`` runs on kazoo's thread."""
    def epoch_read(result) -> None:  # kazoo's thread: send the transaction, wait for nothing
        try:
            raw, stat = result.get()
        except KazooException as e:
            log.warning("controller election interrupted: %r", e)
            on_answer(None)
            return
        epoch = zk.decode_controller_epoch(raw) + 1
        tx = client.transaction()
        tx.create(zk.CONTROLLER, zk.encode_controller(broker_id), ephemeral=True)
        tx.set_data(zk.CONTROLLER_EPOCH, zk.encode_controller_epoch(epoch), version=stat.version)
        tx.commit_async().rawlink(lambda committed: on_answer(_won(committed, epoch)))

    client.get_async(zk.CONTROLLER_EPOCH).rawlink(epoch_read)


def _won(committed, epoch: int) -> int | None:
    try:
        results = committed.get()
    except KazooException as e:
        log.warning("controller election interrupted: %r", e)
        return None
    return None if any(isinstance(r, Exception) for r in results) else epoch


__all__ = ["Registration", "send_election"]
