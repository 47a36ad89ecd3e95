"""A full disk (issue 23, finding 6): a real ``tidelog serve`` whose data dir is a small tmpfs the test
mounts (root; skipped without). Produce until the file system is full, then: Kafka's
KAFKA_STORAGE_ERROR (never UNKNOWN_SERVER_ERROR), the condition logged once (no traceback per
request), /readyz and /metrics report it, FindCoordinator and DeleteTopics still work, writes resume
by themselves once DeleteTopics (or DeleteRecords and retention) freed space, SIGTERM while full exits
0, and every acknowledged record is still there after a restart."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request

from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.kafka_io import create_topics, produce, produce_all, producer, read_partition
from tests.small_fs import resize_tmpfs, small_tmpfs
from tidelog.protocol.messages import FindCoordinatorRequest, OffsetCommitRequest
from tidelog.testing import BrokerProcess
from tidelog.testing.client import WireClient

#: 1 MiB segments (retention deletes whole segments), retention checked every second, files removed at once.
OVERRIDES = {"log.segment.bytes": str(1 << 20), "log.retention.check.interval.ms": "1000",
             "log.segment.delete.delay.ms": "0"}
NOT_COORDINATOR = 16
FULL = "is full"
ROOM_AGAIN = "has room again"


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _fill(broker: BrokerProcess, topic: str) -> dict[int, bytes]:
    """Produce ever smaller records to ``topic`` until even the smallest fails with KAFKA_STORAGE_ERROR
    (every failure must be that code); returns the acknowledged records by offset."""
    p = producer(broker, **{"enable.idempotence": False, "retries": 0, "acks": "all", "linger.ms": 0,
                            "message.timeout.ms": 20_000})
    acked: dict[int, bytes] = {}
    failures = 0
    for size in (32 * 1024, 4096, 512, 16):
        for _ in range(10_000):
            value = os.urandom(size)
            ((err, msg),) = produce_all(p, topic, [{"value": value, "partition": 0}])
            if err is None:
                acked[msg.offset()] = value
                continue
            assert err.code() == KafkaError.KAFKA_STORAGE_ERROR, err
            failures += 1
            break
        else:
            raise AssertionError(f"{topic}: never full")
    assert failures == 4 and acked
    for _ in range(20):  # a full disk stays full: every produce fails with the same code
        ((err, _msg),) = produce_all(p, topic, [{"value": os.urandom(4096), "partition": 0}])
        assert err is not None and err.code() == KafkaError.KAFKA_STORAGE_ERROR
    p.flush(10)
    return acked


def _wait_until(what: str, check, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.2)


def _records(broker: BrokerProcess, topic: str, count: int) -> dict[int, bytes]:
    messages = read_partition(broker, topic, 0, count, timeout=60)
    assert all(m.error() is None for m in messages)
    return {m.offset(): m.value() for m in messages}


def test_a_full_data_dir_answers_storage_errors_frees_space_and_recovers() -> None:
    with small_tmpfs("16m") as mnt:
        broker = BrokerProcess(mnt / "data", overrides=OVERRIDES)
        with broker:
            create_topics(broker, keep=1, fill=1, fill_again=1)
            kept = [f"keep-{i}".encode() for i in range(30)]
            produce(broker, "keep", kept[:10], partition=0)

            _fill(broker, "fill")
            status, body = _get(broker.http_url + "readyz")
            assert status == 503 and FULL in json.loads(body)["reason"], body
            _status, metrics = _get(broker.http_url + "metrics")
            assert f'tidelog_log_dir_full{{log_dir="{mnt / "data"}"}} 1.0' in metrics

            # FindCoordinator creates __consumer_offsets (50 partitions, the metadata file rewritten);
            # an offset commit then fails as in Kafka (its coordinator maps the storage error to NOT_COORDINATOR).
            with WireClient.connect(broker.bootstrap) as client:
                r = client.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["full-disk-group"]), 4)
                assert r.coordinators[0].error_code == 0, r
                commit = OffsetCommitRequest(group_id="full-disk-group", generation_id_or_member_epoch=-1,
                                             member_id="", topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                                                 name="keep", partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(
                                                     partition_index=0, committed_offset=5)])])
                r = client.request(commit, 8)
                assert r.topics[0].partitions[0].error_code == NOT_COORDINATOR, r

            log = broker.stderr_text()
            assert log.count(FULL) == 1, log
            assert "Traceback" not in log and "handler failed" not in log and "failed:" not in log, log

            # DeleteTopics rewrites the metadata file with 0 bytes free; the space comes back.
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            for future in admin.delete_topics(["fill"], operation_timeout=30).values():
                future.result(30)
            _wait_until("/readyz is ready again", lambda: _get(broker.http_url + "readyz")[0] == 200)
            assert broker.stderr_text(until=ROOM_AGAIN).count(ROOM_AGAIN) == 1
            produce(broker, "keep", kept[10:20], partition=0)
            assert list(_records(broker, "keep", 20).values()) == kept[:20]

            # Full again: DeleteRecords moves the log start offset, retention deletes the segments below it.
            acked = _fill(broker, "fill_again")
            assert broker.stderr_text().count(FULL) == 2
            half = sorted(acked)[len(acked) // 2]
            (future,) = admin.delete_records([TopicPartition("fill_again", 0, half)], operation_timeout=30).values()
            assert future.result(30).low_watermark == half
            _wait_until("/readyz is ready again", lambda: _get(broker.http_url + "readyz")[0] == 200)
            assert broker.stderr_text(until=ROOM_AGAIN).count(ROOM_AGAIN) == 2
            acked = {offset: value for offset, value in acked.items() if offset >= half}

            # Full a third time, and SIGTERM while full: a clean exit, without a traceback.
            acked.update(_fill(broker, "fill_again"))
            log = broker.stderr_text()
            assert log.count(FULL) == 3 and "Traceback" not in log, log
            assert broker.stop() == 0
            log = "".join(broker.stderr_lines)
            assert "Traceback" not in log and "shut down cleanly" in log, log

        # More room (nothing freed): everything acknowledged is there, as acknowledged.
        resize_tmpfs(mnt, "64m")
        with BrokerProcess(mnt / "data", overrides=OVERRIDES) as broker:
            assert _records(broker, "fill_again", len(acked)) == acked  # from the log start offset: `half`
            produce(broker, "keep", kept[20:], partition=0)
            assert list(_records(broker, "keep", 30).values()) == kept
