"""A "null broker": the least a Kafka broker written in Python can do, as a ceiling for Tidelog.

It speaks just enough of the wire protocol, with Tidelog's own codec (:mod:`tidelog.protocol`), for
confluent-kafka's Producer and Consumer to run at full speed:

* ApiVersions advertises the versions Tidelog serves, for the APIs below only, so clients choose the
  same request versions against both brokers;
* Metadata: one broker (itself); every topic asked for exists with one partition (leader 0, epoch 0)
  and a topic id derived from its name;
* InitProducerId: a counter, epoch 0;
* Produce: decodes the request, walks each partition's record batches only to read their length and
  last offset delta, patches each batch's base offset in place, appends the bytes to one file per
  partition and answers success with increasing base offsets. No CRC check, no validation, no index,
  no segment rolls, no fsync;
* Fetch (serving the file back): finds the batch holding the fetch offset in an in-memory list of
  (base offset, file position), reads whole batches up to the partition's max bytes with one
  ``os.pread`` and answers; a fetch at the end of the log waits (up to ``max_wait_ms``) until a
  produce arrives. No sessions (session id 0), no sendfile;
* ListOffsets: earliest is 0, latest is the next offset, any timestamp is answered with 0.

Reading is as cheap as Python allows: an ``asyncio.BufferedProtocol`` has the socket write each big
request straight into a ``bytearray`` of the frame's size (no copy in user space; Tidelog's
``FrameDecoder`` copies a frame about three times), which the handler then patches in place.
Requests of one connection are handled one at a time, in order (a waiting fetch holds back the
requests behind it, as Kafka's per-connection ordering does). Run it as its own process::

    python bench/null_broker.py --port 0 --data-dir /tmp/null   # prints "... listening on HOST:PORT"

SIGTERM or SIGINT stops it. Loop-only, not thread-safe.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import signal
import struct
import sys
import uuid
from collections import deque
from pathlib import Path

from tidelog.protocol import decode_request_header, encode_response_buffers
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.headers import peek_api
from tidelog.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchRequest,
    FetchResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)

# Record batch v2 header fields the null broker reads or writes (see tidelog.records.batch).
_BASE_OFFSET = struct.Struct(">q")  # at 0
_BATCH_LENGTH = struct.Struct(">i")  # at 8; the batch is 12 + batch_length bytes
_LAST_OFFSET_DELTA = struct.Struct(">i")  # at 23
_FRAME_SIZE = struct.Struct(">i")  # before every request
_EARLIEST, _LATEST = -2, -1
_IMPLEMENTED = {ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.INIT_PRODUCER_ID, ApiKey.PRODUCE, ApiKey.FETCH,
                ApiKey.LIST_OFFSETS}
_REQUESTS = {
    ApiKey.API_VERSIONS: ApiVersionsRequest, ApiKey.METADATA: MetadataRequest,
    ApiKey.INIT_PRODUCER_ID: InitProducerIdRequest, ApiKey.PRODUCE: ProduceRequest,
    ApiKey.FETCH: FetchRequest, ApiKey.LIST_OFFSETS: ListOffsetsRequest,
}


def advertised_versions() -> list[tuple[int, int, int]]:
    """(api_key, min, max) for the implemented APIs, in the ranges Tidelog's handlers serve."""
    import importlib
    import inspect
    import pkgutil

    import tidelog.server.handlers
    from tidelog.server import dispatcher

    # The handlers are methods marked by ``dispatcher.handles``; the broker registers instances of
    # their classes. Read the marks off the classes (no broker needed).
    served: dict[int, tuple[int, int]] = {}
    for info in pkgutil.iter_modules(tidelog.server.handlers.__path__):
        module = importlib.import_module(f"tidelog.server.handlers.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            for name in dir(cls):
                mark = getattr(getattr(cls, name, None), dispatcher._MARK, None)
                if mark is not None:
                    served[mark[0]] = (mark[1], mark[2])
    return sorted((k, lo, hi) for k, (lo, hi) in served.items() if k in _IMPLEMENTED)


class PartitionFile:
    """One partition: an append-only file of record batches and where each batch starts."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        self.base_offsets: list[int] = []
        self.positions: list[int] = []
        self.size = 0
        self.next_offset = 0
        self.waiters: list[asyncio.Future] = []

    def append(self, records: memoryview) -> int:
        """Assign offsets to the batches in ``records`` (patched in place: the request's frame is a
        writable buffer), append them; returns the first offset."""
        data = records if not records.readonly else memoryview(bytearray(records))
        first = self.next_offset
        pos, end = 0, len(data)
        while pos + 27 <= end:
            size = 12 + _BATCH_LENGTH.unpack_from(data, pos + 8)[0]
            _BASE_OFFSET.pack_into(data, pos, self.next_offset)
            self.base_offsets.append(self.next_offset)
            self.positions.append(self.size + pos)
            self.next_offset += _LAST_OFFSET_DELTA.unpack_from(data, pos + 23)[0] + 1
            pos += size
        written = 0
        while written < end:
            written += os.write(self.fd, data[written:])
        self.size += end
        waiters, self.waiters = self.waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)
        return first

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` (at least one batch)."""
        i = bisect.bisect_right(self.base_offsets, offset) - 1
        if i < 0 or offset >= self.next_offset:
            return b""
        n, start = len(self.positions), self.positions[i]
        limit = start + max_bytes
        k = bisect.bisect_right(self.positions, limit, lo=i + 1)  # batches i .. k-2 end at or before limit
        if k == n and self.size <= limit:
            stop = self.size
        elif k - 1 > i:
            stop = self.positions[k - 1]
        else:
            stop = self.positions[i + 1] if i + 1 < n else self.size
        return os.pread(self.fd, stop - start, start)


class NullBroker:
    def __init__(self, data_dir: Path, host: str, port: int) -> None:
        self.data_dir = data_dir
        self.host, self.port = host, port
        self.partitions: dict[tuple[str, int], PartitionFile] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.names_by_id: dict[uuid.UUID, str] = {}
        self.next_producer_id = 1000
        self.versions = advertised_versions()

    # ----------------------------------------------------------------------------------- state

    def topic_id(self, name: str) -> uuid.UUID:
        tid = self.topic_ids.get(name)
        if tid is None:
            tid = self.topic_ids[name] = uuid.uuid5(uuid.NAMESPACE_URL, "null-broker/" + name)
            self.names_by_id[tid] = name
            self.partition(name, 0)
        return tid

    def partition(self, topic: str, index: int) -> PartitionFile:
        p = self.partitions.get((topic, index))
        if p is None:
            p = self.partitions[(topic, index)] = PartitionFile(self.data_dir / f"{topic}-{index}.log")
        return p

    # -------------------------------------------------------------------------------- requests

    def handle(self, frame: bytes):
        """Response buffers, None (no response), or a Future of buffers (a waiting fetch)."""
        api_key, version = peek_api(frame)
        header, pos = decode_request_header(frame)
        request, _ = _REQUESTS[api_key].decode_from(frame, pos, version)
        corr = header.correlation_id
        if api_key == ApiKey.PRODUCE:
            response = self.produce(request, version)
            if response is None:
                return None
        elif api_key == ApiKey.FETCH:
            return self.fetch(request, version, corr)
        elif api_key == ApiKey.METADATA:
            response = self.metadata(request, version)
        elif api_key == ApiKey.API_VERSIONS:
            response = ApiVersionsResponse(error_code=0, api_keys=[
                ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in self.versions
            ])
        elif api_key == ApiKey.INIT_PRODUCER_ID:
            self.next_producer_id += 1
            response = InitProducerIdResponse(error_code=0, producer_id=self.next_producer_id, producer_epoch=0)
        else:
            response = self.list_offsets(request)
        return encode_response_buffers(response, version, corr)

    def metadata(self, request: MetadataRequest, version: int) -> MetadataResponse:
        if request.topics:
            names = [t.name if t.name is not None else self.names_by_id.get(t.topic_id, "") for t in request.topics]
        else:
            names = sorted(self.topic_ids)
        topics = [
            MetadataResponse.MetadataResponseTopic(
                error_code=0, name=name, topic_id=self.topic_id(name), is_internal=False,
                partitions=[MetadataResponse.MetadataResponsePartition(
                    error_code=0, partition_index=0, leader_id=0, leader_epoch=0, replica_nodes=[0], isr_nodes=[0],
                    offline_replicas=[])],
            )
            for name in names
        ]
        return MetadataResponse(
            brokers=[MetadataResponse.MetadataResponseBroker(node_id=0, host=self.host, port=self.port)],
            cluster_id="null-broker", controller_id=0, topics=topics,
        )

    def produce(self, request: ProduceRequest, version: int) -> ProduceResponse | None:
        responses = []
        for t in request.topic_data:
            name = t.name if version < 13 else self.names_by_id[t.topic_id]
            parts = [
                ProduceResponse.PartitionProduceResponse(
                    index=p.index, error_code=0, base_offset=self.partition(name, p.index).append(p.records),
                    log_append_time_ms=-1, log_start_offset=0,
                )
                for p in t.partition_data
            ]
            responses.append(ProduceResponse.TopicProduceResponse(name=t.name, topic_id=t.topic_id,
                                                                  partition_responses=parts))
        return ProduceResponse(responses=responses) if request.acks != 0 else None

    def fetch(self, request: FetchRequest, version: int, corr: int):
        response, total = self._read(request, version)
        if total or request.max_wait_ms <= 0:
            return encode_response_buffers(response, version, corr)
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        for t in request.topics:
            name = t.topic if version < 13 else self.names_by_id.get(t.topic_id)
            for p in t.partitions:
                if name is not None:
                    self.partition(name, p.partition).waiters.append(done)
        timer = loop.call_later(request.max_wait_ms / 1000, lambda: done.done() or done.set_result(None))
        result = loop.create_future()

        def finish(_: asyncio.Future) -> None:
            timer.cancel()
            result.set_result(encode_response_buffers(self._read(request, version)[0], version, corr))

        done.add_done_callback(finish)
        return result

    def _read(self, request: FetchRequest, version: int) -> tuple[FetchResponse, int]:
        total = 0
        topics = []
        for t in request.topics:
            name = t.topic if version < 13 else self.names_by_id.get(t.topic_id)
            parts = []
            for p in t.partitions:
                plog = self.partition(name, p.partition) if name is not None else None
                data = plog.read(p.fetch_offset, p.partition_max_bytes) if plog is not None else b""
                total += len(data)
                end = plog.next_offset if plog is not None else -1
                parts.append(FetchResponse.PartitionData(
                    partition_index=p.partition, error_code=0, high_watermark=end, last_stable_offset=end,
                    log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1, records=data,
                ))
            topics.append(FetchResponse.FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id, partitions=parts))
        return FetchResponse(error_code=0, session_id=0, responses=topics), total

    def list_offsets(self, request: ListOffsetsRequest) -> ListOffsetsResponse:
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                end = self.partition(t.name, p.partition_index).next_offset
                offset = end if p.timestamp == _LATEST else 0
                parts.append(ListOffsetsResponse.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, error_code=0, timestamp=-1, offset=offset, leader_epoch=0))
            topics.append(ListOffsetsResponse.ListOffsetsTopicResponse(name=t.name, partitions=parts))
        return ListOffsetsResponse(topics=topics)


class NullConnection(asyncio.BufferedProtocol):
    """Receives straight into buffers: small frames are parsed out of a scratch buffer (and copied
    out, being small); a frame too big for it gets a ``bytearray`` of its own size that the socket
    fills directly, so a 1 MiB produce request is copied once, by the kernel, and handed on writable."""

    SCRATCH_BYTES = 256 * 1024

    def __init__(self, broker: NullBroker) -> None:
        self.broker = broker
        self.scratch = bytearray(self.SCRATCH_BYTES)
        self.start = self.end = 0  # unparsed bytes are scratch[start:end]
        self.frame: bytearray | None = None  # a big frame being filled
        self.filled = 0
        self.frames: deque = deque()
        self.waiting: asyncio.Future | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.frame is not None:
            return memoryview(self.frame)[self.filled:]
        if self.start == self.end:
            self.start = self.end = 0
        elif len(self.scratch) - self.end < 4096:  # compact: move the partial frame to the front
            n = self.end - self.start
            self.scratch[:n] = self.scratch[self.start:self.end]
            self.start, self.end = 0, n
        return memoryview(self.scratch)[self.end:]

    def buffer_updated(self, nbytes: int) -> None:
        if self.frame is not None:
            self.filled += nbytes
            if self.filled == len(self.frame):
                self.frames.append(self.frame)
                self.frame = None
        else:
            self.end += nbytes
            self._split()
        if self.waiting is None:
            self._run()

    def _split(self) -> None:
        buf = self.scratch
        while self.end - self.start >= 4:
            (size,) = _FRAME_SIZE.unpack_from(buf, self.start)
            body = self.start + 4
            if self.end - body >= size:
                self.frames.append(buf[body:body + size])  # a slice of a bytearray is a copy
                self.start = body + size
            elif size > len(buf) // 2:  # big: give it its own buffer, filled by the next reads
                self.frame = bytearray(size)
                self.filled = self.end - body
                self.frame[:self.filled] = buf[body:self.end]
                self.start = self.end = 0
                return
            else:
                return

    def _run(self) -> None:
        assert self.transport is not None
        while self.frames:
            out = self.broker.handle(self.frames.popleft())
            if isinstance(out, asyncio.Future):
                self.waiting = out
                out.add_done_callback(self._resume)
                return
            if out is not None:
                self.transport.writelines(out)

    def _resume(self, fut: asyncio.Future) -> None:
        self.waiting = None
        if self.transport is None or self.transport.is_closing():
            return
        self.transport.writelines(fut.result())
        self._run()


async def serve(data_dir: Path, host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    broker = NullBroker(data_dir, host, port)
    server = await loop.create_server(lambda: NullConnection(broker), host, port)
    broker.port = server.sockets[0].getsockname()[1]
    print(f"null broker ({type(loop).__module__}) listening on {host}:{broker.port}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    for p in broker.partitions.values():
        os.close(p.fd)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--event-loop", choices=["uvloop", "asyncio"], default="uvloop")
    args = ap.parse_args(argv)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    if args.event_loop == "uvloop":
        import uvloop

        uvloop.install()
    asyncio.run(serve(args.data_dir, args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
