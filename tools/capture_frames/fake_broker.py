"""A minimal fake single-node Kafka broker that answers real clients with Tidelog's codec and records
every request frame with the response it sent."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections import defaultdict
from dataclasses import dataclass, field

from tidelog.protocol import FrameDecoder, decode_request, encode_response
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.headers import peek_api
from tidelog.protocol.messages import (
    ApiVersionsResponse,
    FetchResponse,
    FindCoordinatorResponse,
    HeartbeatResponse,
    InitProducerIdResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    ListOffsetsResponse,
    MetadataResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    ProduceResponse,
    SyncGroupResponse,
)
from tools.capture_frames.cluster import (
    ADVERTISED,
    CLUSTER_ID,
    MEMBER_ID_REQUIRED,
    NODE_ID,
    PARTITIONS,
    TOPIC,
    TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNSUPPORTED_VERSION,
)

log = logging.getLogger("capture_frames")



@dataclass
class Exchange:
    """One request frame and the response frame sent for it (None if acks=0), both unprefixed."""

    client: str
    api_key: int
    api_version: int
    request: bytes
    response: bytes | None


@dataclass
class Group:
    generation_id: int = 0
    member_id: str = ""
    protocol_name: str | None = None
    assignment: bytes = b""
    offsets: dict[tuple[str, int], tuple[int, int, str | None]] = field(default_factory=dict)


class FakeBroker:
    """A single-node Kafka broker that is just good enough for real clients.

    One broker per client run (``label`` names the client in the recorded exchanges). Loop-only, not
    thread-safe: all state is touched by coroutines on the broker's event loop; the driver thread only
    reads ``port``, ``log_end`` and, after ``stop()``, ``exchanges``.
    """

    def __init__(self, label: str, advertised: dict[int, tuple[int, int]] | None = None) -> None:
        self.port = 0
        self.label = label
        self.advertised = dict(ADVERTISED if advertised is None else advertised)
        self.exchanges: list[Exchange] = []
        self.unhandled: list[tuple[str, int, int]] = []
        self.log: dict[int, list[bytearray]] = {p: [] for p in range(PARTITIONS)}  # partition -> batches
        self.log_end: dict[int, int] = dict.fromkeys(range(PARTITIONS), 0)
        self.groups: dict[str, Group] = defaultdict(Group)
        self.next_producer_id = 4000
        self.next_member = 0
        self.data_arrived: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._handlers = {
            ApiKey.API_VERSIONS: self.api_versions,
            ApiKey.METADATA: self.metadata,
            ApiKey.PRODUCE: self.produce,
            ApiKey.FETCH: self.fetch,
            ApiKey.LIST_OFFSETS: self.list_offsets,
            ApiKey.FIND_COORDINATOR: self.find_coordinator,
            ApiKey.JOIN_GROUP: self.join_group,
            ApiKey.SYNC_GROUP: self.sync_group,
            ApiKey.HEARTBEAT: self.heartbeat,
            ApiKey.LEAVE_GROUP: self.leave_group,
            ApiKey.OFFSET_COMMIT: self.offset_commit,
            ApiKey.OFFSET_FETCH: self.offset_fetch,
            ApiKey.INIT_PRODUCER_ID: self.init_producer_id,
        }

    # -- network -----------------------------------------------------------------------------------

    async def serve(self, started: threading.Event) -> None:
        self.data_arrived = asyncio.Event()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        started.set()
        async with server:
            await self._stop.wait()
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()

    def stop(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        assert self._stop is not None
        loop.call_soon_threadsafe(self._stop.set)
        thread.join(10)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        label = self.label
        decoder = FrameDecoder()
        try:
            while chunk := await reader.read(65536):
                for request in decoder.feed(chunk):  # bytearrays: kept as bytes, to compare and hash
                    response = await self.handle(label, bytes(request))
                    if response is not None:
                        writer.write(response)
                        await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("connection of %s failed", label)
        finally:
            writer.close()

    async def handle(self, label: str, request: bytes) -> bytes | None:
        """The framed response to one request frame (None for acks=0 produce)."""
        api_key, api_version = peek_api(request)
        correlation_id = int.from_bytes(request[4:8], "big", signed=True)
        if api_key == ApiKey.API_VERSIONS and api_version > self.advertised[ApiKey.API_VERSIONS][1]:
            # KIP-511: an ApiVersions version we do not know gets a v0 body with error 35.
            lo, hi = self.advertised[ApiKey.API_VERSIONS]
            body = ApiVersionsResponse(
                error_code=UNSUPPORTED_VERSION,
                api_keys=[ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=lo, max_version=hi)],
            )
            response = encode_response(body, 0, correlation_id)
            self.exchanges.append(Exchange(label, api_key, api_version, request, response[4:]))
            return response
        handler = self._handlers.get(api_key)
        advertised = self.advertised.get(api_key, (0, -1))
        if handler is None or not advertised[0] <= api_version <= advertised[1]:
            log.warning("%s sent unhandled API %d v%d; closing", label, api_key, api_version)
            self.unhandled.append((label, api_key, api_version))
            raise ConnectionError("unhandled request")
        decoded = decode_request(request)
        body = await handler(decoded.body, api_version)
        response = None if body is None else encode_response(body, api_version, correlation_id)
        self.exchanges.append(
            Exchange(label, api_key, api_version, request, None if response is None else response[4:])
        )
        return response

    # -- handlers ------------------------------------------------------------------------------------

    async def api_versions(self, req, v):
        keys = [
            ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(self.advertised.items())
        ]
        return ApiVersionsResponse(error_code=0, api_keys=keys)

    def _broker(self, cls):
        return cls(node_id=NODE_ID, host="127.0.0.1", port=self.port, rack=None)

    async def metadata(self, req, v):
        R = MetadataResponse
        if req.topics is None:
            wanted = [(TOPIC, TOPIC_ID)]
        else:
            wanted = [(t.name, t.topic_id) for t in req.topics]
        topics = []
        for name, topic_id in wanted:
            if name == TOPIC or (name is None and topic_id == TOPIC_ID):
                partitions = [
                    R.MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=NODE_ID,
                        leader_epoch=0,
                        replica_nodes=[NODE_ID],
                        isr_nodes=[NODE_ID],
                        offline_replicas=[],
                    )
                    for p in range(PARTITIONS)
                ]
                topics.append(R.MetadataResponseTopic(error_code=0, name=TOPIC, topic_id=TOPIC_ID, partitions=partitions))
            else:
                topics.append(
                    R.MetadataResponseTopic(error_code=UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=topic_id or uuid.UUID(int=0))
                )
        return R(
            brokers=[self._broker(R.MetadataResponseBroker)],
            cluster_id=CLUSTER_ID,
            controller_id=NODE_ID,
            topics=topics,
        )

    def _append(self, partition: int, records) -> int:
        """Append the record batches of a produce request; returns the base offset of the first."""
        data = bytes(records)
        first = self.log_end[partition]
        pos = 0
        while pos + 12 <= len(data):
            size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
            batch = bytearray(data[pos : pos + size])
            last_offset_delta = int.from_bytes(batch[23:27], "big")
            batch[0:8] = self.log_end[partition].to_bytes(8, "big")  # base offset is outside the CRC
            self.log[partition].append(batch)
            self.log_end[partition] += last_offset_delta + 1
            pos += size
        return first

    async def produce(self, req, v):
        R = ProduceResponse
        responses = []
        for topic in req.topic_data:
            parts = []
            for pd in topic.partition_data:
                if v < 3:
                    parts.append(R.PartitionProduceResponse(index=pd.index, error_code=UNSUPPORTED_VERSION))
                elif topic.name != TOPIC or not 0 <= pd.index < PARTITIONS:
                    parts.append(R.PartitionProduceResponse(index=pd.index, error_code=UNKNOWN_TOPIC_OR_PARTITION))
                else:
                    base = self._append(pd.index, pd.records or b"")
                    parts.append(R.PartitionProduceResponse(index=pd.index, base_offset=base, log_start_offset=0))
            responses.append(R.TopicProduceResponse(name=topic.name, partition_responses=parts))
        assert self.data_arrived is not None
        self.data_arrived.set()
        if req.acks == 0:
            return None
        return R(responses=responses)

    def _records_from(self, partition: int, offset: int, max_bytes: int) -> bytes:
        out = bytearray()
        for batch in self.log[partition]:
            base = int.from_bytes(batch[0:8], "big")
            last = base + int.from_bytes(batch[23:27], "big")
            if last < offset:
                continue
            if out and len(out) + len(batch) > max_bytes:
                break
            out += batch
        return bytes(out)

    def _has_data(self, req) -> bool:
        return any(
            self.log_end.get(p.partition, 0) > p.fetch_offset for t in req.topics for p in t.partitions
        )

    async def fetch(self, req, v):
        R = FetchResponse
        if not self._has_data(req) and req.max_wait_ms > 0:
            assert self.data_arrived is not None
            self.data_arrived.clear()
            try:
                await asyncio.wait_for(self.data_arrived.wait(), min(req.max_wait_ms, 500) / 1000)
            except TimeoutError:
                pass
        responses = []
        for topic in req.topics:
            known = topic.topic == TOPIC if v < 13 else topic.topic_id == TOPIC_ID
            parts = []
            for p in topic.partitions:
                if not known or not 0 <= p.partition < PARTITIONS:
                    parts.append(R.PartitionData(partition_index=p.partition, error_code=UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                leo = self.log_end[p.partition]
                parts.append(
                    R.PartitionData(
                        partition_index=p.partition,
                        high_watermark=leo,
                        last_stable_offset=leo,
                        log_start_offset=0,
                        aborted_transactions=[] if req.isolation_level == 1 else None,
                        records=self._records_from(p.partition, p.fetch_offset, p.partition_max_bytes),
                    )
                )
            responses.append(R.FetchableTopicResponse(topic=topic.topic, topic_id=topic.topic_id, partitions=parts))
        return R(error_code=0, session_id=0, responses=responses)

    async def list_offsets(self, req, v):
        R = ListOffsetsResponse
        topics = []
        for topic in req.topics:
            parts = []
            for p in topic.partitions:
                if topic.name != TOPIC or not 0 <= p.partition_index < PARTITIONS:
                    parts.append(R.ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                offset = self.log_end[p.partition_index] if p.timestamp == -1 else 0
                parts.append(
                    R.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index, timestamp=-1, offset=offset, leader_epoch=0
                    )
                )
            topics.append(R.ListOffsetsTopicResponse(name=topic.name, partitions=parts))
        return R(topics=topics)

    async def find_coordinator(self, req, v):
        R = FindCoordinatorResponse
        if v < 4:
            return R(error_code=0, error_message=None, node_id=NODE_ID, host="127.0.0.1", port=self.port)
        return R(
            coordinators=[
                R.Coordinator(key=key, node_id=NODE_ID, host="127.0.0.1", port=self.port, error_message=None)
                for key in req.coordinator_keys
            ]
        )

    async def join_group(self, req, v):
        R = JoinGroupResponse
        group = self.groups[req.group_id]
        member_id = req.member_id
        if not member_id:
            member_id = f"{self.label}-member-{self.next_member}"
            self.next_member += 1
            if v >= 4:  # KIP-394: the first join only hands out the member id
                return R(error_code=MEMBER_ID_REQUIRED, generation_id=-1, protocol_name="" if v < 7 else None,
                         leader="", member_id=member_id, members=[])
        protocol = req.protocols[0]
        group.generation_id += 1
        group.member_id = member_id
        group.protocol_name = protocol.name
        return R(
            error_code=0,
            generation_id=group.generation_id,
            protocol_type=req.protocol_type,
            protocol_name=protocol.name,
            leader=member_id,
            member_id=member_id,
            members=[R.JoinGroupResponseMember(member_id=member_id, group_instance_id=req.group_instance_id,
                                               metadata=bytes(protocol.metadata))],
        )

    async def sync_group(self, req, v):
        group = self.groups[req.group_id]
        for a in req.assignments:
            if a.member_id == req.member_id:
                group.assignment = bytes(a.assignment)
        return SyncGroupResponse(
            error_code=0, protocol_type=req.protocol_type, protocol_name=req.protocol_name, assignment=group.assignment
        )

    async def heartbeat(self, req, v):
        return HeartbeatResponse(error_code=0)

    async def leave_group(self, req, v):
        R = LeaveGroupResponse
        members = [R.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id) for m in req.members]
        return R(error_code=0, members=members)

    async def offset_commit(self, req, v):
        R = OffsetCommitResponse
        group = self.groups[req.group_id]
        topics = []
        for t in req.topics:
            for p in t.partitions:
                group.offsets[(t.name, p.partition_index)] = (
                    p.committed_offset, p.committed_leader_epoch, p.committed_metadata
                )
            topics.append(R.OffsetCommitResponseTopic(
                name=t.name, partitions=[R.OffsetCommitResponsePartition(partition_index=p.partition_index)
                                         for p in t.partitions]))
        return R(topics=topics)

    def _committed(self, group: Group, topics) -> list[tuple[str, list[tuple[int, int, int, str | None]]]]:
        """[(topic, [(partition, offset, leader_epoch, metadata)])] for the requested (or all) offsets."""
        if topics is None:
            by_topic: dict[str, list[int]] = defaultdict(list)
            for name, partition in sorted(group.offsets):
                by_topic[name].append(partition)
            wanted = list(by_topic.items())
        else:
            wanted = [(t.name, list(t.partition_indexes)) for t in topics]
        return [
            (name, [(p, *group.offsets.get((name, p), (-1, -1, ""))) for p in partitions])
            for name, partitions in wanted
        ]

    async def offset_fetch(self, req, v):
        R = OffsetFetchResponse
        if v < 8:
            committed = self._committed(self.groups[req.group_id], req.topics)
            return R(topics=[
                R.OffsetFetchResponseTopic(name=name, partitions=[
                    R.OffsetFetchResponsePartition(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                                   metadata=m)
                    for p, o, e, m in parts])
                for name, parts in committed])
        groups = []
        for g in req.groups:
            committed = self._committed(self.groups[g.group_id], g.topics)
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, topics=[
                R.OffsetFetchResponseTopics(name=name, partitions=[
                    R.OffsetFetchResponsePartitions(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                                                    metadata=m)
                    for p, o, e, m in parts])
                for name, parts in committed]))
        return R(groups=groups)

    async def init_producer_id(self, req, v):
        producer_id = self.next_producer_id
        self.next_producer_id += 1
        return InitProducerIdResponse(error_code=0, producer_id=producer_id, producer_epoch=0)


def start_broker(
    label: str, advertised: dict[int, tuple[int, int]] | None = None
) -> tuple[FakeBroker, asyncio.AbstractEventLoop, threading.Thread]:
    """A fresh broker serving on its own event loop in a daemon thread."""
    broker = FakeBroker(label, advertised)
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(broker.serve(started))
        loop.close()

    thread = threading.Thread(target=run, name="fake-broker", daemon=True)
    thread.start()
    if not started.wait(10):
        raise RuntimeError("fake broker did not start")
    return broker, loop, thread

