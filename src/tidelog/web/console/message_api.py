"""Messages: browse a partition from an offset or a timestamp, produce a test message.

``GET /api/v1/topics/{topic}/partitions/{partition}/messages?offset=N|timestamp=MS&limit=L&format=F``
reads at most ``limit`` (1..``MAX_LIMIT``) records from the partition's log through the replica manager
(what a read_uncommitted consumer would see, up to the high watermark; control records left out).
Keys, values and header values are rendered as ``text`` (UTF-8, undecodable bytes replaced), ``json``
(parsed), ``hex``, or ``auto`` (JSON if it parses, else text if it is UTF-8, else hex); each rendered
field says which format it got. A field longer than ``MAX_FIELD_BYTES`` is cut and marked truncated, and
a page stops early once its fields hold ``MAX_PAGE_BYTES`` (``next_offset`` says where to go on).

``POST /api/v1/topics/{topic}/messages`` appends one record with a Produce request (acks=all) through the
broker's own Produce handler: ``{"partition": 0, "key": ..., "value": ..., "headers": {...},
"format": "text"|"json"|"hex"}``.
"""

from __future__ import annotations

import binascii
import json
import uuid
from typing import Any

from aiohttp import web

from tidelog.clock import Clock
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records.batch import iter_batches
from tidelog.records.builder import RecordBatchBuilder
from tidelog.replica.fetch import READ_UNCOMMITTED, PartitionFetch
from tidelog.replica.manager import ReplicaManager
from tidelog.web.console.admin import ConsoleAdmin
from tidelog.web.console.api_error import ApiError
from tidelog.web.console.params import INT_MAX, field, json_body, path_int, query_choice, query_int
from tidelog.web.console.principal import principal_of

MAX_LIMIT = 500
DEFAULT_LIMIT = 50
MAX_FIELD_BYTES = 64 * 1024
READ_BYTES = 4 * 1024 * 1024  # per read of the log; a larger batch is still read whole (KIP-74)
#: A page stops early (``next_offset`` says where the rest starts) once its fields hold this much.
MAX_PAGE_BYTES = 8 * 1024 * 1024
FORMATS = ("auto", "text", "json", "hex")


def render(data: bytes | None, fmt: str) -> dict[str, Any] | None:
    if data is None:
        return None
    truncated = len(data) > MAX_FIELD_BYTES
    shown = bytes(data[:MAX_FIELD_BYTES])
    out: dict[str, Any] = {"size": len(data)}
    if truncated:
        out["truncated"] = True
    if fmt in ("auto", "json") and not truncated:
        try:
            out.update(format="json", data=json.loads(shown.decode("utf-8")))
            return out
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            pass
    if fmt == "hex":
        out.update(format="hex", data=shown.hex())
        return out
    try:
        out.update(format="text", data=shown.decode("utf-8"))
    except UnicodeDecodeError:
        if fmt == "text":
            out.update(format="text", data=shown.decode("utf-8", errors="replace"))
        else:
            out.update(format="hex", data=shown.hex())
    return out


def encode(value: Any, fmt: str, name: str) -> bytes | None:
    """A produced key or value from its JSON form."""
    if value is None:
        return None
    if fmt == "json":
        return json.dumps(value).encode()
    if not isinstance(value, str):
        raise ApiError.bad_request(f"'{name}' must be a string (or null) with format {fmt}")
    if fmt == "hex":
        try:
            return binascii.unhexlify(value.replace(" ", ""))
        except (binascii.Error, ValueError):
            raise ApiError.bad_request(f"'{name}' is not valid hex") from None
    return value.encode("utf-8")


class MessageApi:
    def __init__(self, replicas: ReplicaManager, admin: ConsoleAdmin, clock: Clock) -> None:
        self.replicas = replicas
        self.admin = admin
        self.clock = clock

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/v1/topics/{topic}/partitions/{partition}/messages", self.read),
                web.post("/api/v1/topics/{topic}/messages", self.produce)]

    async def read(self, request: web.Request) -> web.Response:
        topic = request.match_info["topic"]
        partition = path_int(request, "partition")
        limit = query_int(request, "limit", DEFAULT_LIMIT, lo=1, hi=MAX_LIMIT)
        fmt = query_choice(request, "format", FORMATS, "auto")
        offset = query_int(request, "offset", None, lo=0)
        timestamp = query_int(request, "timestamp", None, lo=0)
        if offset is not None and timestamp is not None:
            raise ApiError.bad_request("give either offset or timestamp, not both")
        await self.admin.require_topic(principal_of(request), topic, "READ")  # the log is read directly below
        try:
            plog = self.replicas.leader_log(topic, partition)
        except KafkaError as e:
            raise ApiError.from_kafka(e.code, e.message) from None
        start, end = plog.log_start_offset, plog.high_watermark
        if timestamp is not None:
            _, found = self.replicas.offset_for_timestamp(topic, partition, timestamp)
            offset = end if found is None else found[1]
        elif offset is None:
            offset = max(start, end - limit)  # the newest messages
        if not start <= offset <= end:
            raise ApiError.from_kafka(ErrorCode.OFFSET_OUT_OF_RANGE,
                                      f"offset {offset} is outside {topic}-{partition}'s range {start}..{end}")
        messages = self._read(topic, partition, offset, limit, fmt)
        next_offset = messages[-1]["offset"] + 1 if messages else offset
        return web.json_response({"topic": topic, "partition": partition, "start_offset": start, "end_offset": end,
                                  "from_offset": offset, "next_offset": next_offset, "messages": messages})

    def _read(self, topic: str, partition: int, offset: int, limit: int, fmt: str) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        position = offset
        shown = 0
        while len(messages) < limit and shown < MAX_PAGE_BYTES:
            (read,) = self.replicas.read_partitions(
                [PartitionFetch(topic, uuid.UUID(int=0), partition, position, READ_BYTES)], None, READ_UNCOMMITTED)
            if read.error:
                raise ApiError.from_kafka(read.error, read.error_message)
            if read.records is None or read.records.size == 0:
                break
            before = position
            for batch in iter_batches(read.records.read(), allow_partial=True):
                if getattr(batch, "is_control_batch", False):
                    position = max(position, batch.next_offset)
                    continue
                for record in batch.records():
                    if record.offset < offset:
                        continue
                    if len(messages) >= limit or shown >= MAX_PAGE_BYTES:
                        return messages
                    messages.append(self._message(record, fmt))
                    shown += sum(min(len(b), MAX_FIELD_BYTES) for b in (record.key, record.value,
                                                                         *(h.value for h in record.headers)) if b)
                position = max(position, batch.next_offset)
            if position == before:  # nothing whole in the slice: stop rather than spin
                break
        return messages

    @staticmethod
    def _message(record, fmt: str) -> dict[str, Any]:
        return {"offset": record.offset, "timestamp": record.timestamp,
                "key": render(record.key, fmt), "value": render(record.value, fmt),
                "headers": [{"key": h.key, "value": render(h.value, fmt)} for h in record.headers]}

    async def produce(self, request: web.Request) -> web.Response:
        topic = request.match_info["topic"]
        body = await json_body(request)
        partition = field(body, "partition", int, 0, lo=0, hi=INT_MAX)
        fmt = field(body, "format", str, "text")
        if fmt not in ("text", "json", "hex"):
            raise ApiError.bad_request(f"'format' must be text, json or hex, not {fmt!r}")
        key = encode(body.get("key"), fmt, "key")
        value = encode(body.get("value"), fmt, "value")
        headers = field(body, "headers", dict, {})
        encoded_headers = []
        for k, v in headers.items():
            if v is not None and not isinstance(v, str):
                raise ApiError.bad_request(f"header '{k}' must have a string (or null) value")
            encoded_headers.append((k, None if v is None else v.encode("utf-8")))
        builder = RecordBatchBuilder()
        builder.append(self.clock.wall_ms(), key, value, encoded_headers)
        offset = await self.admin.produce(principal_of(request), topic, partition, builder.build())
        return web.json_response({"topic": topic, "partition": partition, "offset": offset}, status=201)


__all__ = ["MAX_LIMIT", "MessageApi", "render"]
