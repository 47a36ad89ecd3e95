"""Messages: browse a partition, or a whole topic with its partitions merged by timestamp, search them,
follow new ones, produce a test message.

``GET /api/v1/topics/{topic}/partitions/{partition}/messages?offset=N|timestamp=MS&limit=L&format=F``
reads at most ``limit`` (1..``MAX_LIMIT``) records of one partition (the newest without a start).

``GET /api/v1/topics/{topic}/messages`` reads every partition (or ``partition=N``) merged by timestamp
(then partition, then offset), from the ``newest`` (default) or ``earliest`` position, a ``timestamp``,
an ``offset`` (with ``partition``) or a ``cursor`` (``p:o,p:o``, as the previous answer gave: where to go
on; asking again with it later returns what came since, which is how the console's live tail polls).
Filters ``key``, ``value``, ``header`` (``name`` or ``name=text``) and ``q`` (any of them) keep the
records containing the text (case-insensitive); at most ``max_scan`` records (1..``MAX_SCAN``) are looked
at per request, and ``scan_limited`` says when that bound stopped the search.

Fields are rendered as render.py says; a page stops early once its fields hold ``MAX_PAGE_BYTES``.
Answers are strict JSON (no NaN or Infinity).

``POST /api/v1/topics/{topic}/messages`` appends one record with a Produce request (acks=all) through the
broker's own Produce handler: ``{"partition": 0, "key": ..., "value": ..., "headers": {...},
"format": "text"|"json"|"hex"}``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from aiohttp import web

from tidelog.clock import Clock
from tidelog.errors import ErrorCode, KafkaError
from tidelog.records.builder import RecordBatchBuilder
from tidelog.replica.local_logs import LogOffsets, LogSummary
from tidelog.replica.manager import ReplicaManager
from tidelog.web.console.admin import ConsoleAdmin
from tidelog.web.console.api_error import ApiError
from tidelog.web.console.params import INT_MAX, field, json_body, path_int, query_choice, query_int
from tidelog.web.console.principal import principal_of
from tidelog.web.console.render import FORMATS, MAX_FIELD_BYTES, encode, render
from tidelog.web.console.scan import (
    DEFAULT_MAX_SCAN,
    MAX_PAGE_BYTES,
    MAX_SCAN,
    MAX_SCAN_BYTES,
    Filters,
    PartitionReader,
    message,
    scan,
)

MAX_LIMIT = 500
DEFAULT_LIMIT = 50
POSITIONS = ("newest", "earliest")
MAX_FILTER_CHARS = 1024
#: Strict JSON out: a value the renderer let through as NaN would fail here, not in the browser.
strict_dumps = functools.partial(json.dumps, allow_nan=False)


def json_answer(body: dict[str, Any], status: int = 200) -> web.Response:
    return web.json_response(body, status=status, dumps=strict_dumps)


class MessageApi:
    def __init__(self, replicas: ReplicaManager, admin: ConsoleAdmin, clock: Clock) -> None:
        self.replicas = replicas
        self.admin = admin
        self.clock = clock

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/v1/topics/{topic}/partitions/{partition}/messages", self.read),
                web.get("/api/v1/topics/{topic}/messages", self.read_topic),
                web.post("/api/v1/topics/{topic}/messages", self.produce)]

    def _offsets(self, topic: str, partition: int) -> LogOffsets:
        try:
            return self.replicas.leader_offsets(topic, partition)
        except KafkaError as e:
            raise ApiError.from_kafka(e.code, e.message) from None

    def _at_time(self, topic: str, partition: int, timestamp: int, end: int) -> int:
        found = self.replicas.offset_for_timestamp(topic, partition, timestamp)
        return end if found is None else found[1]

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
        offsets = self._offsets(topic, partition)
        start, end = offsets.log_start_offset, offsets.high_watermark
        if timestamp is not None:
            offset = self._at_time(topic, partition, timestamp, end)
        elif offset is None:
            offset = max(start, end - limit)  # the newest messages
        if not start <= offset <= end:
            raise ApiError.from_kafka(ErrorCode.OFFSET_OUT_OF_RANGE,
                                      f"offset {offset} is outside {topic}-{partition}'s range {start}..{end}")
        found = await scan([PartitionReader(self.replicas, topic, partition, offset)], Filters(), limit, limit)
        messages = [message(record, fmt) for _, record in found.records]
        next_offset = messages[-1]["offset"] + 1 if messages else offset
        return json_answer({"topic": topic, "partition": partition, "start_offset": start, "end_offset": end,
                            "from_offset": offset, "next_offset": next_offset, "messages": messages})

    async def read_topic(self, request: web.Request) -> web.Response:
        topic = request.match_info["topic"]
        only = query_int(request, "partition", None, lo=0, hi=INT_MAX)
        limit = query_int(request, "limit", DEFAULT_LIMIT, lo=1, hi=MAX_LIMIT)
        fmt = query_choice(request, "format", FORMATS, "auto")
        max_scan = query_int(request, "max_scan", DEFAULT_MAX_SCAN, lo=1, hi=MAX_SCAN)
        offset = query_int(request, "offset", None, lo=0)
        timestamp = query_int(request, "timestamp", None, lo=0)
        position = request.query.get("position")
        cursor = _cursor(request.query.get("cursor"))
        starts = [name for name, v in (("position", position), ("offset", offset), ("timestamp", timestamp),
                                       ("cursor", cursor)) if v is not None]
        if len(starts) > 1:
            raise ApiError.bad_request(f"give one of position, offset, timestamp or cursor, not {' and '.join(starts)}")
        if position is not None and position not in POSITIONS:
            raise ApiError.bad_request(f"position must be one of {', '.join(POSITIONS)}, not {position!r}")
        if offset is not None and only is None:
            raise ApiError.bad_request("an offset needs a partition")
        filters = Filters.of(*(_filter(request, name) for name in ("key", "value", "header", "q")))
        await self.admin.require_topic(principal_of(request), topic, "READ")  # the logs are read directly below
        meta = self.replicas.image.topics.get(topic)
        if meta is None:
            raise ApiError.from_kafka(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic}' does not exist")
        count = len(meta.partitions)
        if only is not None and only >= count:
            raise ApiError.from_kafka(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                      f"Topic '{topic}' has {count} partition(s): no partition {only}")
        chosen = [only] if only is not None else list(range(count))
        newest = not starts or position == "newest"
        readers, partitions = [], []
        windowed = False  # newest with a filter: some partition has older records that were not searched
        for p in chosen:
            try:
                summary = self.replicas.leader_summary(topic, p)
            except KafkaError as e:  # led by another broker: said, and the others still shown
                partitions.append({"partition": p, "error": e.code.name, "message": e.message})
                continue
            start, end = summary.offsets.log_start_offset, summary.offsets.high_watermark
            if newest:  # from `window` records before the end: the page, or a share of the scan bound
                at = max(start, end - self._window(summary, limit, max_scan, len(chosen), filters.active))
                windowed |= filters.active and at > start
            elif position == "earliest":
                at = start
            elif timestamp is not None:
                at = self._at_time(topic, p, timestamp, end)
            elif offset is not None:
                at = offset
                if not start <= at <= end:
                    raise ApiError.from_kafka(ErrorCode.OFFSET_OUT_OF_RANGE,
                                              f"offset {at} is outside {topic}-{p}'s range {start}..{end}")
            else:  # a cursor: where the last answer stopped (retention may have moved the start since)
                at = min(max(cursor.get(p, start), start), end)  # type: ignore[union-attr]
            readers.append(PartitionReader(self.replicas, topic, p, at))
            partitions.append({"partition": p, "start_offset": start, "end_offset": end, "from_offset": at})
        # Newest: the windows bound the scan (and the scan must reach the ends to find the newest).
        found = await scan(readers, filters, limit, MAX_SCAN * (count + 1) if newest else max_scan, newest=newest)
        for entry in partitions:
            if "error" not in entry:
                entry["next_offset"] = found.positions[entry["partition"]]
        return json_answer({
            "topic": topic, "partitions": partitions,
            "messages": [message(record, fmt, p) for p, record in found.records],
            "cursor": ",".join(f"{p}:{o}" for p, o in sorted(found.positions.items())),
            "newest": newest, "scanned": found.scanned, "scan_limited": found.limited or windowed,
            "max_scan": max_scan, "filters": filters.describe()})

    @staticmethod
    def _window(summary: LogSummary, limit: int, max_scan: int, partitions: int, searching: bool) -> int:
        """How many of a partition's newest records the newest view reads: the page without a filter;
        with one, its share of ``max_scan``, fewer where its records are large (MAX_SCAN_BYTES in all)."""
        if not searching:
            return limit
        records = max(1, summary.offsets.high_watermark - summary.offsets.log_start_offset)
        average = max(1, summary.size_bytes // records)
        return max(1, min(max_scan // partitions, MAX_SCAN_BYTES // partitions // average))

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

def _filter(request: web.Request, name: str) -> str | None:
    value = request.query.get(name)
    if value is not None and len(value) > MAX_FILTER_CHARS:
        raise ApiError.bad_request(f"{name} must be at most {MAX_FILTER_CHARS} characters")
    return value or None


def _cursor(raw: str | None) -> dict[int, int] | None:
    """``p:o,p:o`` -> {p: o}."""
    if raw is None:
        return None
    out: dict[int, int] = {}
    for part in filter(None, raw.split(",")):
        p, sep, o = part.partition(":")
        try:
            partition, offset = int(p, 10), int(o, 10)
        except ValueError:
            partition = offset = -1
        if not sep or not 0 <= partition <= INT_MAX or not 0 <= offset < 2**63:
            raise ApiError.bad_request(f"cursor must be partition:offset pairs separated by commas, not {raw!r}")
        out[partition] = offset
    return out


__all__ = ["MAX_FIELD_BYTES", "MAX_LIMIT", "MAX_PAGE_BYTES", "MessageApi", "encode", "render"]
