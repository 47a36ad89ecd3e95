"""Records to produce from the Go clients, and the broker's view of what it stored.

``sample_records`` covers what a client must carry through exactly: keys and values that are null,
empty or non-ASCII, repeated and empty headers, explicit timestamps, and compressible values (Go
clients skip compression when it does not shrink a batch). ``stored_batches`` reads a partition's
batches as the broker stores them (Fetch v11, no conversion) to check codecs and producer ids.
"""

from __future__ import annotations

from tidelog.protocol.messages import FetchRequest
from tidelog.records import RecordBatchView, iter_batches
from tidelog.testing.client import WireClient

BASE_TIMESTAMP_MS = 1_700_000_000_000


def sample_records(count: int, partitions: int, *, headers: bool = True, tag: str = "r") -> list[dict]:
    """``count`` records spread round-robin over ``partitions``, timestamps 1 s apart."""
    out = []
    for i in range(count):
        record: dict = {
            "partition": i % partitions,
            "key": f"key-{i % 7}",
            "value": f"{tag}{i}:" + "tidelog " * (4 + i % 5),
            "headers": [],
            "timestamp_ms": BASE_TIMESTAMP_MS + i * 1000,
        }
        if i % 10 == 3:
            record["key"] = None
        elif i % 10 == 4:
            record["key"] = ""
        elif i % 10 == 5:
            record["value"] = None  # a tombstone
        elif i % 10 == 6:
            record["value"] = ""
        elif i % 10 == 7:
            record["key"], record["value"] = f"ключ-{i}", f"☃ {i} " * 5
        if headers:
            if i % 3 == 0:
                record["headers"] = [["trace", f"t{i}"], ["trace", "again"], ["empty", ""]]
            elif i % 3 == 1:
                record["headers"] = [["only", str(i)]]
        out.append(record)
    return out


def by_partition(records: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for r in records:
        out.setdefault(r["partition"], []).append(r)
    return out


def content(record: dict, *, headers: bool = True, timestamp: bool = True) -> tuple:
    """What a consumer must give back of a produced record."""
    return (record["key"], record["value"], [tuple(h) for h in record["headers"]] if headers else None,
            record["timestamp_ms"] if timestamp else None)


def stored_batches(bootstrap: str, topic: str, partition: int) -> list[RecordBatchView]:
    """Every batch of a partition as stored (Fetch v11 returns them unconverted)."""
    out: list[RecordBatchView] = []
    offset = 0
    with WireClient.connect(bootstrap) as client:
        while True:
            request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=50 << 20, topics=[
                FetchRequest.FetchTopic(topic=topic, partitions=[
                    FetchRequest.FetchPartition(partition=partition, fetch_offset=offset,
                                                partition_max_bytes=10 << 20)])])
            data = client.request(request, 11).responses[0].partitions[0]
            assert data.error_code == 0, f"fetch {topic}[{partition}]: error {data.error_code}"
            batches = [b for b in iter_batches(bytes(data.records or b"")) if isinstance(b, RecordBatchView)]
            if not batches:
                return out
            out.extend(batches)
            offset = batches[-1].next_offset


__all__ = ["BASE_TIMESTAMP_MS", "by_partition", "content", "sample_records", "stored_batches"]
