"""Readers of a topic that gets deleted, against a real ``tidelog serve`` (issue 23, findings 4 and 5).

* An incremental fetch session (KIP-227, Fetch v17: topics by id) over a deleted topic: the next
  incremental fetches answer UNKNOWN_TOPIC_OR_PARTITION for its partitions (INCONSISTENT_TOPIC_ID
  once a new topic has its name, UNKNOWN_TOPIC_ID for an id never known: what Kafka 4.4 answers,
  checked against the oracle) and the connection stays open; the client forgets them by id. A
  confluent-kafka consumer of a topic that is deleted keeps its connection and carries on with its
  other topic.
* A Fetch response built before its topic is deleted, still queued or being written to a slow
  reader (a small receive buffer, nothing read until the deletion is done): it arrives whole, with
  the deleted topic's records, and the connection carries on. Both the sendfile path (the standard
  asyncio loop) and the pread path (uvloop) are checked.
"""

from __future__ import annotations

import fcntl
import socket
import struct
import termios
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.kafka_io import produce_all, producer
from tidelog.errors import ErrorCode
from tidelog.protocol.headers import encode_request
from tidelog.protocol.messages import ApiVersionsRequest, FetchRequest, MetadataRequest
from tidelog.records import iter_batches
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("deleted_topic_readers")]

FETCH_VERSION = 17


def _wait_for(condition, timeout: float = 30.0, what: str = "a condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _create(admin: AdminClient, *topics: str) -> None:
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(30)


def _delete(admin: AdminClient, topic: str, data_dir: Path) -> None:
    """Delete ``topic`` and wait until its partition directory is gone (renamed, then removed)."""
    admin.delete_topics([topic])[topic].result(30)
    _wait_for(lambda: not list(data_dir.glob(f"{topic}-0*")), what=f"the files of {topic} to be removed")


def _topic_ids(bootstrap: str, *topics: str) -> dict[str, uuid.UUID]:
    with WireClient.connect(bootstrap) as client:
        r = client.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                                           allow_auto_topic_creation=False), 12)
    assert all(t.error_code == 0 for t in r.topics), r.topics
    return {t.name: t.topic_id for t in r.topics}


def _fetch(client: WireClient, session_id: int, epoch: int, topics: dict[uuid.UUID, int] | None = None,
           forgotten: list[uuid.UUID] = ()):
    request = FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, session_id=session_id, session_epoch=epoch,
        topics=[FetchRequest.FetchTopic(topic_id=tid, partitions=[FetchRequest.FetchPartition(
            partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)]) for tid, offset in (topics or {}).items()],
        forgotten_topics_data=[FetchRequest.ForgottenTopic(topic_id=tid, partitions=[0]) for tid in forgotten])
    return client.request(request, FETCH_VERSION)


def _partitions(response) -> dict[uuid.UUID, int]:
    """topic id -> error code of partition 0, for the topics a Fetch response carries."""
    return {t.topic_id: p.error_code for t in response.responses for p in t.partitions}


def test_an_incremental_fetch_session_over_a_deleted_topic_keeps_the_connection(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    gone, again, kept = "session-gone", "session-again", "session-kept"
    _create(admin, gone, again, kept)
    for topic in (gone, again, kept):
        produce_all(producer(broker), topic, [{"value": b"x"}])
    ids = _topic_ids(broker.bootstrap, gone, again, kept)
    never = uuid.uuid4()
    with WireClient.connect(broker.bootstrap, timeout=30) as client:
        first = _fetch(client, 0, 0, {ids[gone]: 0, ids[again]: 0, ids[kept]: 0, never: 0})
        assert first.error_code == 0 and first.session_id != 0, "the broker opened no fetch session"
        session = first.session_id
        assert _partitions(first) == {ids[gone]: 0, ids[again]: 0, ids[kept]: 0, never: ErrorCode.UNKNOWN_TOPIC_ID}
        assert _partitions(_fetch(client, session, 1, {ids[gone]: 1, ids[again]: 1, ids[kept]: 1})) == {
            never: ErrorCode.UNKNOWN_TOPIC_ID}

        _delete(admin, gone, broker.data_dir)
        _delete(admin, again, broker.data_dir)
        _create(admin, again)  # the name comes back with a new id
        assert _topic_ids(broker.bootstrap, again)[again] != ids[again]

        # old code: "cannot encode the response to API 1 v17: expected a uuid.UUID, got NoneType", the
        # broker closed the connection (ConnectionClosed here)
        expected = {ids[gone]: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ids[again]: ErrorCode.INCONSISTENT_TOPIC_ID,
                    never: ErrorCode.UNKNOWN_TOPIC_ID}
        after = _fetch(client, session, 2)
        assert after.error_code == 0 and after.session_id == session
        assert _partitions(after) == expected
        assert _partitions(_fetch(client, session, 3)) == expected, \
            "an erroneous partition is reported until the client forgets it"
        # the client forgets them by id
        forgot = _fetch(client, session, 4, forgotten=[ids[gone], ids[again], never])
        assert forgot.error_code == 0 and _partitions(forgot) == {}
        produce_all(producer(broker), kept, [{"value": b"k2"}])
        news = _fetch(client, session, 5)
        assert _partitions(news) == {ids[kept]: 0}, "the session carries on with the topic that is left"
    assert "cannot encode" not in broker.stderr_text()


def test_a_confluent_consumer_of_a_deleted_topic_keeps_its_connection(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    gone, kept = "consumer-gone", "consumer-kept"
    _create(admin, gone, kept)
    produce_all(producer(broker), gone, [{"value": b"g%d" % i} for i in range(5)])
    produce_all(producer(broker), kept, [{"value": b"k%d" % i} for i in range(5)])
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "deleted-topic-reader",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                         "topic.metadata.refresh.interval.ms": 500})
    try:
        consumer.assign([TopicPartition(gone, 0, 0), TopicPartition(kept, 0, 0)])
        seen: set[bytes] = set()

        def read(wanted: set[bytes]) -> bool:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                seen.add(m.value())
            return wanted <= seen

        _wait_for(lambda: read({b"g4", b"k4"}), what="the records of both topics")
        before = broker.stderr_text().count("closing connection")
        _delete(admin, gone, broker.data_dir)
        deadline = time.monotonic() + 3  # several incremental fetches over the deleted topic
        while time.monotonic() < deadline:
            read(set())
        produce_all(producer(broker), kept, [{"value": b"after"}])
        _wait_for(lambda: read({b"after"}), what="a record produced after the deletion")
        log = broker.stderr_text()
        assert "cannot encode" not in log
        assert log.count("closing connection") == before, "the broker closed a connection:\n" + log[-2000:]
    finally:
        consumer.close()


# --------------------------------------------------------------- a response in flight when its topic goes

RECORD = 256 * 1024
RECORDS = 48  # 12 MiB: far more than the socket buffers of both ends hold


def _frame(body, version: int, correlation_id: int) -> bytes:
    payload = encode_request(body, version, correlation_id, "slow-reader")
    return struct.pack(">i", len(payload)) + payload


def _buffered(sock: socket.socket) -> int:
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]


@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
def test_a_fetch_response_written_while_its_topic_is_deleted_arrives_whole(tmp_path: Path, event_loop: str) -> None:
    """Two pipelined Fetch responses of 12 MiB each to a reader that reads nothing until the topic is
    deleted and its files removed: the first is being written (sendfile, or the pread copy in the
    transport's buffer), the second waits in the connection's queue. Old code: the files closed at
    once, the writer failed (EBADF: the connection closed) or died on "I/O operation on closed
    file" (the connection stayed open and silent)."""
    with BrokerProcess(tmp_path / "data", event_loop=event_loop) as broker:
        topic = "deleted-under-a-reader"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        _create(admin, topic)
        values = [bytes([i]) * RECORD for i in range(RECORDS)]
        produce_all(producer(broker, **{"batch.size": 2 * RECORD, "linger.ms": 0}), topic,
                    [{"value": v, "partition": 0} for v in values], timeout=60)

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
        host, _, port = broker.bootstrap.rpartition(":")
        sock.settimeout(60)
        sock.connect((host, int(port)))
        fetch = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=64 << 20, isolation_level=0,
                             session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                                 FetchRequest.FetchPartition(partition=0, fetch_offset=0,
                                                             partition_max_bytes=64 << 20)])])
        with WireClient(sock) as client:
            client.send_raw(_frame(fetch, 12, 1) + _frame(fetch, 12, 2))  # one read: both are dispatched
            _wait_for(lambda: _buffered(sock) > 0, what="the first response to start arriving")
            _delete(admin, topic, broker.data_dir)
            for corr in (1, 2):
                got, response = client.receive(1, 12)
                assert got == corr
                (part,) = response.responses[0].partitions
                assert part.error_code == 0
                batches = list(iter_batches(bytes(part.records)))
                read = [r.value for b in batches for r in b.records()]
                assert read == values, f"response {corr}: {len(read)} of {len(values)} records, or wrong bytes"
            answer = client.request(ApiVersionsRequest(), 0)
            assert answer.error_code == 0, "the connection must carry on"
        log = broker.stderr_text()
        assert "closed file" not in log and "write failed" not in log, log[-3000:]
