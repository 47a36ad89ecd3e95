"""The metadata of a cluster, kept in ZooKeeper in Kafka's ZooKeeper-era layout (:mod:`zk_data`).

The same interface as the single node's :class:`~tidelog.cluster.store.EmbeddedStore` (``open``,
``image``, ``publish``, ``subscribe``), so the rest of the broker does not know which one it has:

* :meth:`open` connects (creating the chroot of ``zookeeper.connect`` if missing), makes sure the
  persistent paths and ``/cluster/id`` exist, registers this broker (ephemeral ``/brokers/ids/<id>``;
  an id a live broker holds is refused once the previous session of that id has had time to expire:
  the reader thread waits for ZooKeeper's watch on the old registration, bounded by the session
  timeout in real time, ZooKeeper's own) and reads the image; a vacant ``/controller`` queues an election.
* The image is ZooKeeper's content: live brokers, the controller, topics (their assignment,
  partition states and config overrides; topics marked for deletion are already gone), dynamic
  broker and group configs, the producer-id block, and the ACLs (Kafka's ``/kafka-acl`` layout,
  :mod:`zk_acl`; re-read when a change notification appears). Every read leaves a watch; a watch that fires
  re-reads everything on the event loop (coalesced) and notifies the subscribers if anything changed.
  Unchanged topics keep their objects, so subscribers can compare by identity.
* :meth:`publish` (from the :class:`~tidelog.cluster.controller.Controller`) writes the difference
  between the current image and the new one as ONE ZooKeeper transaction (built by :mod:`zk_write`): a new topic's
  assignment and config are created together (creating a topic another broker created first fails
  with TOPIC_ALREADY_EXISTS; its partitions' first states are the controller's), partition states
  change only at the znode version they were read at, a deleted topic becomes an ``/admin/delete_topics`` entry that the controller carries
  out. A conflicting writer or ZooKeeper being unreachable raises a retriable KafkaError and
  changes nothing.
* Controller election (Kafka's): create the ephemeral ``/controller`` and bump ``/controller_epoch``
  at the version just read, in one transaction; whoever loses sees the winner. Every broker watches
  ``/controller``; a read that finds it vacant (at start, or once the controller's session ended) only
  queues the election, an event of the controller's queue (Kafka's ``Reelect``), which sends the
  transaction asynchronously (:mod:`zk_session`); its answer is queued as another event, which applies
  the outcome. A read that names another broker ends this one's term. The epoch fences an older controller: its conditional writes fail once a newer
  one bumped the epoch.
* A lost session (expired): this broker is no longer controller; once ZooKeeper takes it back it
  registers again, runs for controller and re-reads.

* The controller's partition-state decisions (new partitions' first states, elections, reassignment
  completion, topic deletions) are
  not made here: the partition controller (:mod:`tidelog.server.partition_controller`) makes them in
  its event queue and has them carried out by :meth:`alter_partition_state`,
  :meth:`complete_reassignment` and :meth:`delete_topics`.

Watches and session changes arrive on kazoo's threads. Re-reading ZooKeeper after them (and
re-registering after a new session) runs in the store's reader thread, one job at a time, so a slow or
paused ZooKeeper never holds up the event loop; reading decides nothing. What reaches the loop from those threads goes through the injected ``enqueue``
(the controller's event queue, :mod:`tidelog.server.controller_events`): a finished image, applied
there in order, becomes current unless this broker wrote meanwhile (then it is read again); a lost or
renewed session. The answers to this broker's own asynchronous writes go through ``dispatch``
(``loop.call_soon_threadsafe``), not the queue, so that an event waiting for them is not behind
itself. :meth:`publish` runs on the loop: one ZooKeeper transaction, its wait bounded by
``WRITE_TIMEOUT_S``, then a re-read it waits for (ZooKeeper has just answered). Partition-state
changes are asynchronous writes. Not thread-safe otherwise (docs/cluster.md, "ZooKeeper slow or down").
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError

from tidelog.cluster import reassignment, zk_acl
from tidelog.cluster import zk_data as zk
from tidelog.cluster.features import FEATURE_ZNODE, decode_feature_znode
from tidelog.cluster.metadata import BrokerInfo, MetadataImage, PartitionMetadata, TopicMetadata
from tidelog.cluster.store import MetadataListener, new_cluster_id
from tidelog.cluster.zk_quota import read_client_quotas
from tidelog.cluster.zk_read import read_acls, read_config, read_topics
from tidelog.cluster.zk_session import Registration, send_election
from tidelog.cluster.zk_write import WRITE_TIMEOUT_S, ReadVersions, add_changes
from tidelog.errors import ErrorCode, KafkaError
from tidelog.zookeeper_connect import ZooKeeperConnect

log = logging.getLogger(__name__)

Dispatch = Callable[[Callable[[], None]], None]


class ZooKeeperUnavailableError(ConnectionError):
    """ZooKeeper could not be reached (at start-up)."""


@dataclass(frozen=True, slots=True)
class ZooKeeperSettings:
    connect: ZooKeeperConnect
    session_timeout_ms: int = 18_000
    connection_timeout_ms: int | None = None
    protocols: dict[str, str] | None = None
    #: the coordinators' topics, marked internal when read (Kafka's ZooKeeper layout does not say)
    internal_topics: frozenset[str] = frozenset()


class ZooKeeperStore:
    def __init__(self, settings: ZooKeeperSettings, broker_id: int, dispatch: Dispatch,
                 enqueue: Dispatch | None = None) -> None:
        self.settings = settings
        self.broker_id = broker_id
        self.dispatch = dispatch  # results of this broker's writes, to the loop
        self.enqueue = enqueue or dispatch  # events (images read, session changes), to the controller's queue
        self.client: KazooClient | None = None
        self.controller_epoch = -1  # the epoch this broker was elected with; -1 = not controller
        self._cluster_controller_epoch = 0  # the current controller's, as last read
        self._broker: BrokerInfo | None = None
        self._image: MetadataImage | None = None
        self._listeners: list[MetadataListener] = []
        self._topic_versions: dict[str, int] = {}
        self._producer_id_block_version = -1
        self._features_version = -1  # of /feature (-1: absent)
        self._dirty = threading.Event()
        self._election_queued = False  # a controller election is in the queue (the reader thread sets it)
        self._electing = False  # this broker's election transaction is on its way (the loop)
        self._registration = Registration()  # close() ends its wait for an old registration
        self._acl_changes: tuple[list[str], list[str]] | None = None
        self._acls: frozenset = frozenset()
        self._session_lost = False
        self._closed = False
        #: re-reads after watches and reconnections run here, off the event loop (one at a time)
        self._reader = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tidelog-zk-metadata")
        self._writes = 0  # publishes (and elections) so far: a re-read begun before one may miss its change
        #: topics marked for deletion in the last image read (the controller deletes them)
        self.pending_deletions: tuple[str, ...] = ()

    # ----------------------------------------------------------------------------------- opening

    def open(self, broker: BrokerInfo) -> MetadataImage:
        self._broker = broker
        self.client = self._connect()
        try:
            self.client.add_listener(self._on_state)
            self._register()
            self._image, self.pending_deletions = self._read(version=1)  # a vacant /controller: an election queued
        except BaseException:
            self.close()  # a refused or failed start leaves no session (nor kazoo's threads) behind
            raise
        return self._image

    def _connect(self) -> KazooClient:
        s = self.settings
        timeout = (s.connection_timeout_ms or s.session_timeout_ms) / 1000
        client = KazooClient(hosts=s.connect.hosts_text, timeout=s.session_timeout_ms / 1000,
                             connection_retry={"max_tries": -1, "max_delay": 1})
        try:
            client.start(timeout=timeout)
        except KazooTimeoutError:
            client.stop()  # kazoo keeps trying to connect until stopped
            client.close()
            raise ZooKeeperUnavailableError(
                f"cannot connect to ZooKeeper at {s.connect.hosts_text} within {timeout:g} s "
                "(zookeeper.connect, zookeeper.connection.timeout.ms)") from None
        if s.connect.chroot:
            client.ensure_path(s.connect.chroot)
            client.chroot = s.connect.chroot
        for path in zk.PERSISTENT_PATHS + zk_acl.ACL_PATHS:
            client.ensure_path(path)
        try:
            client.create(zk.CLUSTER_ID, zk.encode_cluster_id(new_cluster_id()), makepath=True)
        except NodeExistsError:
            pass
        try:
            client.create(zk.CONTROLLER_EPOCH, zk.encode_controller_epoch(0))
        except NodeExistsError:
            pass
        return client

    def _register(self) -> None:
        """Create ``/brokers/ids/<id>`` (:class:`~tidelog.cluster.zk_session.Registration`)."""
        assert self.client is not None and self._broker is not None
        self._registration.register(self.client, self.broker_id,
                                    zk.encode_broker(self._broker, self.settings.protocols or {}),
                                    self.settings.session_timeout_ms)

    # -------------------------------------------------------------------------------- controller

    @property
    def is_controller(self) -> bool:
        return self.controller_epoch >= 0

    def _queue_election(self) -> None:
        """The reader thread (or the loop): ``/controller`` is vacant; the election is an event of the
        controller's queue (once for a burst of reads that saw it vacant)."""
        if not self._election_queued:
            self._election_queued = True
            self.enqueue(self._run_for_controller)

    def _run_for_controller(self) -> None:
        """The event (Kafka's ``Reelect``): run for controller unless this broker is the controller or
        its election is on its way. ZooKeeper's part is one conditional transaction sent asynchronously;
        its answer is another event (:meth:`_elected`): nothing waits, nothing is decided off the loop."""
        self._election_queued = False
        if self._closed or self.is_controller or self._electing or not self._connected:
            return
        self._electing = True
        self._elect(lambda epoch: self.enqueue(lambda: self._elected(epoch)))

    def _elected(self, epoch: int | None) -> None:
        """The event: the election's outcome (the epoch won, or None: another broker won, or ZooKeeper
        failed); the re-read then shows who holds ``/controller`` (vacant again: another election)."""
        self._electing = False
        self._writes += 1  # a read begun before the outcome may show the seat vacant: it is read again
        if self._closed:
            return
        if epoch is not None and not self._session_lost:
            self.controller_epoch = epoch
            log.info("broker %d is the controller (controller epoch %d)", self.broker_id, epoch)
        self._on_watch(None)

    def _elect(self, on_answer: Callable[[int | None], None]) -> None:
        """Send this broker's election (:func:`~tidelog.cluster.zk_session.send_election`); ``on_answer``
        runs on kazoo's thread."""
        if self.client is None:
            on_answer(None)
            return
        send_election(self.client, self.broker_id, on_answer)

    def delete_topics(self, names: Sequence[str], on_done: Callable[[bool], None]) -> None:
        """The controller's decision carried out: delete the topics marked for deletion, in the reader
        thread (a recursive delete is many requests); ``on_done(all deleted)`` runs on the loop."""
        names = list(names)

        def delete() -> None:
            ok = self._delete_topics_now(names)
            self.dispatch(lambda: on_done(ok))
            self._on_watch(None)

        if self._submit(delete) is None:
            on_done(False)

    def _delete_topics_now(self, names: list[str]) -> bool:
        """The reader thread."""
        client = self.client
        if client is None or self._closed:
            return False
        try:
            for name in names:
                try:
                    client.delete(zk.topic_path(name), recursive=True)
                except NoNodeError:
                    pass
                for path in (zk.topic_config_path(name), zk.delete_topic_path(name)):
                    try:
                        client.delete(path)
                    except NoNodeError:
                        pass
                log.info("controller deleted topic %s", name)
        except KazooException as e:
            log.warning("topic deletion interrupted: %r", e)
            return False
        return True

    # ------------------------------------------------------------------------------------ events

    def _on_state(self, state: str) -> None:
        """kazoo's thread: hand session changes to the loop."""
        if self._closed:
            return
        if state == KazooState.LOST:
            self._session_lost = True
            self.enqueue(self._after_session_lost)
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            self.enqueue(self._after_session_renewed)
        elif state == KazooState.CONNECTED:  # back after a disconnection: catch up with what was missed
            self._on_watch(None)

    def _after_session_lost(self) -> None:
        if self.is_controller:
            log.warning("ZooKeeper session lost: broker %d is no longer the controller", self.broker_id)
        else:
            log.warning("ZooKeeper session lost")
        self.controller_epoch = -1

    def _after_session_renewed(self) -> None:
        if self._closed:
            return
        log.info("new ZooKeeper session: registering broker %d again", self.broker_id)
        self._submit(self._register_again)

    def _register_again(self) -> None:
        """The reader thread: registering may wait out an old registration (seconds): never on the loop."""
        try:
            self._register()
        except (KazooException, ValueError) as e:
            log.error("could not register again: %s", e)
            return
        self.enqueue(self._refresh)

    def _on_watch(self, _event: object) -> None:
        """kazoo's thread (or the loop): something changed; re-read in the reader thread (once for a burst
        of changes), then hand the result to the loop."""
        if not self._dirty.is_set():
            self._dirty.set()
            self._submit(self._read_after_watch)

    def _read_after_watch(self) -> None:
        """The reader thread."""
        self._dirty.clear()  # a change seen from here on asks again (and reconnecting asks, see _on_state)
        image = self._image
        if image is None and not self._closed:  # still opening: ask again once the loop has the first image
            self.enqueue(lambda: self._on_watch(None))
            return
        if self._closed or image is None or not self._connected:
            return
        writes = self._writes
        new = self._read_off_loop(image.version + 1)
        if new is not None:
            self.enqueue(lambda: self._apply_new(new, writes))

    def _refresh(self, wait_s: float = 0.0) -> None:
        """Re-read ZooKeeper in the reader thread, then (on the loop) publish what changed. With ``wait_s``
        (after this broker's own write, when ZooKeeper has just answered) wait up to that long for it."""
        self._dirty.clear()  # a change seen from here on asks again (and reconnecting asks, see _on_state)
        if self._closed or self._image is None or not self._connected:
            return
        writes, version = self._writes, self._image.version + 1
        future = self._submit(lambda: self._read_off_loop(version))
        if future is None:
            return
        if wait_s > 0:
            try:
                future.result(timeout=wait_s)
            except concurrent.futures.TimeoutError:
                pass
            else:
                self._apply_read(future, writes)
                return
        future.add_done_callback(lambda f: self.enqueue(lambda: self._apply_read(f, writes)))

    def _submit(self, fn: Callable[[], object]) -> concurrent.futures.Future | None:
        try:
            return self._reader.submit(fn)
        except RuntimeError:  # closed
            return None

    def _read_off_loop(self, version: int) -> tuple[MetadataImage, tuple[str, ...]] | None:
        """The reader thread: the whole image (kazoo's calls may wait for ZooKeeper here, not on the loop)."""
        if self._closed:
            return None
        try:
            return self._read(version)
        except (ConnectionLoss, SessionExpiredError, ConnectionClosedError, KazooTimeoutError) as e:
            log.warning("cannot read metadata from ZooKeeper: %r", e)
        except KazooException as e:
            log.warning("cannot read metadata from ZooKeeper: %r", e)
        return None

    def _apply_read(self, future: concurrent.futures.Future, writes: int) -> None:
        if self._closed or future.cancelled() or future.exception() is not None:
            return
        new = future.result()
        if new is not None:
            self._apply_new(new, writes)

    def _apply_new(self, read: tuple[MetadataImage, tuple[str, ...]], writes: int) -> None:
        """The loop (an event of the controller's queue): make a re-read current, unless this broker
        wrote since it began (read again then). Another broker in ``/controller``: this one is not (or
        no longer) the controller."""
        if self._closed:
            return
        if writes != self._writes:
            self._on_watch(None)
            return
        new, deleting = read
        if new.controller_id < 0 and (self._election_queued or self._electing):
            return  # read while the seat was vacant: the election's outcome brings the next read, with a controller
        self.pending_deletions = deleting
        if self.is_controller and new.controller_id not in (-1, self.broker_id):
            log.warning("broker %d is no longer the controller: broker %d is", self.broker_id, new.controller_id)
            self.controller_epoch = -1
        self._set(replace(new, version=self.image.version + 1))

    def _set(self, new: MetadataImage) -> None:
        old = self.image
        if replace(new, version=old.version) == old:
            return
        self._image = new
        for listener in self._listeners:
            listener(old, new)

    # ----------------------------------------------------------------------------------- reading

    def _read(self, version: int) -> tuple[MetadataImage, tuple[str, ...]]:
        """The image, and the topics marked for deletion (left out of it)."""
        client, watch = self.client, self._on_watch
        assert client is not None
        controller_id = -1
        while True:
            try:
                raw, _ = client.get(zk.CONTROLLER, watch=watch)  # a data watch: its deletion re-reads
                controller_id = zk.decode_controller(raw)
                break
            except NoNodeError:
                if client.exists(zk.CONTROLLER, watch=watch) is None:  # watched until some broker takes it
                    self._queue_election()
                    break
                # taken in between: read who took it
        try:
            self._cluster_controller_epoch = zk.decode_controller_epoch(client.get(zk.CONTROLLER_EPOCH)[0])
        except NoNodeError:
            pass
        deleting = client.get_children(zk.DELETE_TOPICS, watch=watch)
        brokers = {}
        ids = client.get_children(zk.BROKER_IDS, watch=watch)
        for broker_id, pending in [(int(i), client.get_async(zk.broker_path(int(i)))) for i in ids]:
            try:
                brokers[broker_id] = zk.decode_broker(broker_id, pending.get()[0])
            except NoNodeError:
                pass
        raw_cluster_id, _ = client.get(zk.CLUSTER_ID)
        topics = self._read_topics(set(deleting))
        broker_configs = self._read_config(f"{zk.CONFIG_BROKERS}/{zk.DEFAULT_BROKER_ENTITY}")
        group_configs = {}
        for group in client.get_children(zk.CONFIG_GROUPS, watch=watch):
            config = self._read_config(zk.group_config_path(group))
            if config:
                group_configs[group] = config
        client_metrics = {}
        for name in client.get_children(zk.CONFIG_CLIENT_METRICS, watch=watch):
            config = self._read_config(zk.client_metrics_config_path(name))
            if config:
                client_metrics[name] = config
        next_block = 0
        self._producer_id_block_version = -1
        if client.exists(zk.PRODUCER_ID_BLOCK, watch=watch):
            try:
                raw, stat = client.get(zk.PRODUCER_ID_BLOCK, watch=watch)
                next_block, self._producer_id_block_version = zk.decode_producer_id_block(raw), stat.version
            except NoNodeError:
                pass
        features, features_epoch = self._read_features()
        image = MetadataImage(zk.decode_cluster_id(raw_cluster_id), controller_id, brokers, topics, broker_configs,
                              next_block, group_configs, version, acls=self._read_acls(),
                              client_quotas=read_client_quotas(client, watch), client_metrics_configs=client_metrics,
                              finalized_features=features, features_epoch=features_epoch)
        return image, tuple(deleting)

    # -------------------------------------------------------------- the controller's decisions, carried out

    def complete_reassignment(self, topic: TopicMetadata, done: Sequence[tuple[PartitionMetadata, PartitionMetadata]],
                              on_done: Callable[[bool], None]) -> None:
        """KIP-455's completion decided by the controller (:func:`reassignment.completions`): the assignment
        and the partition states in one transaction, each conditionally at the version read, without
        holding up the loop; ``on_done(written)`` runs on the loop afterwards."""
        client = self.client
        if client is None or not self._connected:
            on_done(False)
            return
        tx = client.transaction()
        tx.set_data(zk.topic_path(topic.name), reassignment.encode_assignment(topic),
                    version=self._topic_versions.get(topic.name, -1))
        for before, after in done:
            tx.set_data(zk.partition_state_path(topic.name, after.partition),
                        zk.encode_partition_state(after.leader, after.leader_epoch, after.isr, self._written_epoch),
                        version=before.partition_epoch)

        def committed(async_result) -> None:  # kazoo's thread
            try:
                ok = not any(isinstance(r, Exception) for r in async_result.get())
            except KazooException as e:
                log.warning("reassignment of %s not completed: %r", topic.name, e)
                ok = False
            self.dispatch(lambda: on_done(ok))
            if ok:
                self._on_watch(None)

        tx.commit_async().rawlink(committed)

    def alter_partition_state(self, topic: str, partition: int, new: PartitionMetadata,
                              on_done: Callable[[bool], None]) -> None:
        """A partition state decided by the controller, or a leader's ISR change (Kafka's ZooKeeper-era
        leaders wrote it themselves): set the state znode at version ``new.partition_epoch`` (-1: a new
        partition's first state, created, with its parent) without holding up the event loop;
        ``on_done(written)`` runs on the loop afterwards (False: the state changed or was created
        meanwhile, or ZooKeeper is unreachable)."""
        client = self.client
        if client is None or not self._connected:
            on_done(False)
            return
        path = zk.partition_state_path(topic, partition)
        data = zk.encode_partition_state(new.leader, new.leader_epoch, new.isr, self._written_epoch)
        result = (client.create_async(path, data, makepath=True) if new.is_new
                  else client.set_async(path, data, version=new.partition_epoch))

        def done(async_result) -> None:  # kazoo's thread
            try:
                async_result.get()
                ok = True
            except (BadVersionError, NoNodeError, NodeExistsError):
                ok = False
            except KazooException as e:
                log.warning("partition state of %s-%d not written: %r", topic, partition, e)
                ok = False
            self.dispatch(lambda: on_done(ok))
            if ok:
                self._on_watch(None)

        result.rawlink(done)

    def may_lead(self) -> bool:
        """False once the ZooKeeper session expired: another broker may lead this broker's partitions
        by now (until the session is renewed and the metadata re-read)."""
        return not self._session_lost

    def _read_acls(self) -> frozenset:
        """Every ACL, re-read only when the change notifications differ from the last read."""
        client, watch = self.client, self._on_watch
        assert client is not None
        changes = (client.get_children(zk_acl.LITERAL_CHANGES, watch=watch),
                   client.get_children(zk_acl.EXTENDED_CHANGES, watch=watch))
        if changes == self._acl_changes:
            return self._acls
        acls = read_acls(client)
        self._acl_changes, self._acls = changes, frozenset(acls)
        return self._acls

    def _read_features(self) -> tuple[dict[str, int], int]:
        """The finalized feature levels in ``/feature`` (KIP-584) and their epoch; its version for the next write."""
        client = self.client
        assert client is not None
        self._features_version = -1
        if client.exists(FEATURE_ZNODE, watch=self._on_watch):
            try:
                raw, stat = client.get(FEATURE_ZNODE, watch=self._on_watch)
            except NoNodeError:
                return {}, 0
            self._features_version = stat.version
            return decode_feature_znode(raw)
        return {}, 0

    def _read_config(self, path: str) -> dict[str, str]:
        assert self.client is not None
        return read_config(self.client, path, self._on_watch)

    def _read_topics(self, deleting: set[str]) -> dict[str, TopicMetadata]:
        assert self.client is not None
        topics, self._topic_versions = read_topics(self.client, self._on_watch, deleting,
                                                   self._image.topics if self._image is not None else {},
                                                   self.settings.internal_topics)
        return topics

    # ----------------------------------------------------------------------------------- writing

    @property
    def image(self) -> MetadataImage:
        if self._image is None:
            raise RuntimeError("the ZooKeeper metadata store is not open")
        return self._image

    def subscribe(self, listener: MetadataListener) -> None:
        self._listeners.append(listener)

    def publish(self, image: MetadataImage) -> None:
        """Write what changed from the current image to ``image`` in one transaction, then make it
        current. Raises KafkaError (nothing written) on a conflicting writer or without ZooKeeper."""
        old = self.image
        client = self.client
        if client is None or not self._connected:
            # a call now would wait for the connection, holding up the event loop: refuse at once
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "ZooKeeper is unavailable: metadata cannot change now")
        self._writes += 1
        try:
            self._write(old, image, client)
        except (ConnectionLoss, SessionExpiredError, ConnectionClosedError) as e:
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"ZooKeeper is unavailable: {e!r}") from None
        except KazooTimeoutError:
            self._on_watch(None)  # it may have been written after all: the re-read tells
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                             f"ZooKeeper did not answer within {WRITE_TIMEOUT_S:g} s: the change may or may not "
                             "have been made") from None
        self._refresh_after_write(image)

    def refresh(self) -> None:
        """Re-read ZooKeeper now and apply it (waits up to the write timeout, as a write does)."""
        self._refresh(wait_s=WRITE_TIMEOUT_S)

    @property
    def _connected(self) -> bool:
        return self.client is not None and self.client.connected and not self._session_lost

    def _write(self, old: MetadataImage, image: MetadataImage, client: KazooClient) -> None:
        tx = client.transaction()
        created = add_changes(tx, client, old, image, self.broker_id, ReadVersions(
            self._topic_versions, self._producer_id_block_version, self._written_epoch, self._features_version))
        self._commit(tx, created)

    def _refresh_after_write(self, image: MetadataImage) -> None:
        """The written image becomes current at once (the requester sees its change); the watches then
        bring ZooKeeper's versions of it."""
        self._set(replace(image, version=self.image.version + 1, brokers=self.image.brokers,
                          controller_id=self.image.controller_id))
        self._refresh(wait_s=WRITE_TIMEOUT_S)

    @property
    def _written_epoch(self) -> int:
        """The controller epoch recorded in the partition states this broker writes."""
        return self.controller_epoch if self.is_controller else self._cluster_controller_epoch

    def _commit(self, tx, created: list[str]) -> None:
        results = tx.commit_async().get(timeout=WRITE_TIMEOUT_S)  # bounded: a stalled ZooKeeper refuses the change
        failures = [r for r in results if isinstance(r, Exception)]
        if not failures:
            return
        self._refresh(wait_s=WRITE_TIMEOUT_S)  # what the other writer wrote, before the caller looks again
        if any(isinstance(r, NodeExistsError) for r in failures) and created:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS,
                             f"Topic '{created[0]}' already exists (created by another broker).")
        if any(isinstance(r, (BadVersionError, NodeExistsError)) for r in failures):
            raise KafkaError(ErrorCode.NOT_CONTROLLER, "the metadata changed concurrently in ZooKeeper; retry")
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"ZooKeeper refused the metadata change: {failures!r}")

    # ----------------------------------------------------------------------------------- closing

    def close(self) -> None:
        """End the session: this broker's registration (and /controller, if it held it) go at once."""
        self._closed = True
        self._registration.close()
        self._reader.shutdown(wait=False, cancel_futures=True)
        if self.client is not None:
            try:
                self.client.stop()
                self.client.close()
            except KazooException:
                pass
            self.client = None


__all__ = ["ZooKeeperSettings", "ZooKeeperStore", "ZooKeeperUnavailableError"]
