"""The options of the ``tidelog`` data source, parsed and checked as Spark's Kafka connector does.

Option names are case-insensitive (Spark hands a data source a case-insensitive dict). Source options:

=================================== ========================================= =========================
option                              value                                     default
=================================== ========================================= =========================
kafka.bootstrap.servers             ``host:port,...``                         required
assign / subscribe / subscribePattern exactly one: JSON ``{"t":[0,1]}`` / ``a,b`` / regex
startingOffsets                     ``earliest``, ``latest``, JSON (-2/-1)    latest (stream), earliest (batch)
startingOffsetsByTimestamp          JSON ``{"t":{"0":ms}}``                   none
startingTimestamp                   epoch ms                                  none
startingOffsetsByTimestampStrategy  ``error`` or ``latest``                   error
endingOffsets (batch)               ``latest`` or JSON (-1)                   latest
endingOffsetsByTimestamp (batch)    JSON                                      none
endingTimestamp (batch)             epoch ms                                  none
failOnDataLoss                      bool                                      true
maxOffsetsPerTrigger (stream)       long                                      none
minOffsetsPerTrigger (stream)       long                                      none
maxTriggerDelay (stream)            duration (``15m``, ``30s``, ``500ms``)    15m
minPartitions                       int > 0                                   none
maxRecordsPerPartition              long > 0                                  none
groupIdPrefix                       string                                    spark-kafka-source/-relation
includeHeaders                      bool                                      false
kafkaConsumer.pollTimeoutMs         long                                      120000
fetchOffset.numRetries              int                                       3
fetchOffset.retryIntervalMs         long                                      10
kafka.*                             librdkafka properties, prefix stripped
=================================== ========================================= =========================

Preference among the start options: ``startingTimestamp`` over ``startingOffsetsByTimestamp`` over
``startingOffsets`` (the same for the ending ones). Invalid values raise :class:`ValueError` with the
message Spark's connector gives for the same mistake. Parsed options are immutable and picklable.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from tidelog.spark.offsets import EARLIEST, LATEST, TopicPartition

log = logging.getLogger(__name__)

ASSIGN = "assign"
SUBSCRIBE = "subscribe"
SUBSCRIBE_PATTERN = "subscribepattern"
STRATEGY_KEYS = (ASSIGN, SUBSCRIBE, SUBSCRIBE_PATTERN)
STARTING_OFFSETS = "startingoffsets"
ENDING_OFFSETS = "endingoffsets"
STARTING_OFFSETS_BY_TIMESTAMP = "startingoffsetsbytimestamp"
ENDING_OFFSETS_BY_TIMESTAMP = "endingoffsetsbytimestamp"
STARTING_TIMESTAMP = "startingtimestamp"
ENDING_TIMESTAMP = "endingtimestamp"
STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY = "startingoffsetsbytimestampstrategy"
FAIL_ON_DATA_LOSS = "failondataloss"
MIN_PARTITIONS = "minpartitions"
MAX_RECORDS_PER_PARTITION = "maxrecordsperpartition"
MAX_OFFSETS_PER_TRIGGER = "maxoffsetspertrigger"
MIN_OFFSETS_PER_TRIGGER = "minoffsetspertrigger"
MAX_TRIGGER_DELAY = "maxtriggerdelay"
GROUP_ID_PREFIX = "groupidprefix"
INCLUDE_HEADERS = "includeheaders"
POLL_TIMEOUT_MS = "kafkaconsumer.polltimeoutms"
FETCH_OFFSET_NUM_RETRIES = "fetchoffset.numretries"
FETCH_OFFSET_RETRY_INTERVAL_MS = "fetchoffset.retryintervalms"
TOPIC = "topic"
EXACTLY_ONCE = "exactlyonce"
TRANSACTIONAL_ID_PREFIX = "transactionalidprefix"
KAFKA_PREFIX = "kafka."

DEFAULT_MAX_TRIGGER_DELAY = "15m"
DEFAULT_POLL_TIMEOUT_MS = 120_000

#: Consumer properties the source sets itself (Spark's Kafka source rejects them the same way).
_REJECTED_CONSUMER_KEYS = {
    "auto.offset.reset": (
        "Kafka option 'auto.offset.reset' is not supported. Set the source option 'startingOffsets' to "
        "'earliest' or 'latest' instead: the query tracks its own offsets in its checkpoint, so that no "
        "data is missed when new topics or partitions appear. 'startingOffsets' only applies to a new "
        "query; a restarted query always resumes where it left off."),
    "key.deserializer": (
        "Kafka option 'key.deserializer' is not supported: keys are always read as bytes. Use DataFrame "
        "operations to deserialize the key column."),
    "value.deserializer": (
        "Kafka option 'value.deserializer' is not supported: values are always read as bytes. Use "
        "DataFrame operations to deserialize the value column."),
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}
_REJECTED_PRODUCER_KEYS = {
    "key.serializer": "Kafka option 'key.serializer' is not supported: keys are always written as bytes.",
    "value.serializer": "Kafka option 'value.serializer' is not supported: values are always written as bytes.",
    "transactional.id": (
        "Kafka option 'transactional.id' is not supported: the sink's tasks write in parallel and cannot share "
        "one transactional id. Set the option 'exactlyOnce' to 'true' for transactional writes (each task "
        "then gets an id of its own, from 'transactionalIdPrefix' and its partition)."),
}
_CUSTOM_GROUP_ID_WARNING = (
    "Kafka option 'kafka.group.id' has been set on this query. This is not recommended: queries or "
    "sources sharing a group id interfere with each other, and a restarted query can be disturbed by its "
    "previous run.")
_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[0,1]}'
_TIMESTAMPS_EXAMPLE = '{"topicA":{"0":1700000000000,"1":1700000000000}}'
_DURATION_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000,
                      "d": 86_400_000}


@dataclass(frozen=True)
class Strategy:
    """Which topic-partitions to read: exactly one of ``assign``, ``subscribe``, ``subscribePattern``."""

    kind: Literal["assign", "subscribe", "subscribePattern"]
    topics: tuple[str, ...] = ()
    pattern: str = ""
    assigned: tuple[TopicPartition, ...] = ()

    def describe(self) -> str:
        if self.kind == "assign":
            return f"Assign[{', '.join(map(str, self.assigned))}]"
        if self.kind == "subscribe":
            return f"Subscribe[{', '.join(self.topics)}]"
        return f"SubscribePattern[{self.pattern}]"


@dataclass(frozen=True)
class RangeLimit:
    """Where a read starts or ends: Spark's ``KafkaOffsetRangeLimit``.

    ``kind`` is ``earliest``, ``latest``, ``offsets`` (per partition, -2/-1 allowed), ``timestamps`` (per
    partition) or ``timestamp`` (one for all partitions). ``no_match_latest``: a timestamp that matches no
    record resolves to latest instead of failing (``startingOffsetsByTimestampStrategy=latest``).
    """

    kind: Literal["earliest", "latest", "offsets", "timestamps", "timestamp"]
    offsets: tuple[tuple[TopicPartition, int], ...] = ()
    timestamp_ms: int = 0
    no_match_latest: bool = False

    @property
    def offset_map(self) -> dict[TopicPartition, int]:
        return dict(self.offsets)

    @property
    def deterministic(self) -> bool:
        """Resolves to the same offsets whenever it is resolved (retention aside)."""
        if self.kind == "earliest":
            return True
        return self.kind == "offsets" and all(o != LATEST for _, o in self.offsets)


@dataclass(frozen=True)
class SourceOptions:
    strategy: Strategy
    starting: RangeLimit
    ending: RangeLimit
    kafka_params: tuple[tuple[str, str], ...]
    fail_on_data_loss: bool = True
    include_headers: bool = False
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    group_id: str = field(default="")
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    fetch_offset_num_retries: int = 3
    fetch_offset_retry_interval_ms: int = 10

    @property
    def kafka_config(self) -> dict[str, str]:
        return dict(self.kafka_params)

    @property
    def read_committed(self) -> bool:
        return self.kafka_config.get("isolation.level", "read_uncommitted") == "read_committed"


@dataclass(frozen=True)
class SinkOptions:
    topic: str | None
    kafka_params: tuple[tuple[str, str], ...]
    #: ``exactlyOnce=true``: each streaming write task writes in a Kafka transaction (``exactly_once.py``)
    exactly_once: bool = False
    #: ``transactionalIdPrefix``: the tasks' transactional ids are ``<prefix>-<partition>``; None = from the query id
    transactional_id_prefix: str | None = None

    @property
    def kafka_config(self) -> dict[str, str]:
        return dict(self.kafka_params)


# ------------------------------------------------------------------------------------------ parsing


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate the options of a read (``streaming`` or batch) and parse them."""
    params = _lower(options)
    if streaming:
        if ENDING_OFFSETS in params:
            raise ValueError("ending offset not valid in streaming queries")
        if ENDING_OFFSETS_BY_TIMESTAMP in params:
            raise ValueError("ending timestamp not valid in streaming queries")
        if ENDING_TIMESTAMP in params:
            raise ValueError("ending timestamp not valid in streaming queries")
    validate_general_options(params)
    starting = _range_limit(params, STARTING_TIMESTAMP, STARTING_OFFSETS_BY_TIMESTAMP, STARTING_OFFSETS,
                            default="latest" if streaming else "earliest")
    ending = _range_limit(params, ENDING_TIMESTAMP, ENDING_OFFSETS_BY_TIMESTAMP, ENDING_OFFSETS, default="latest")
    if not streaming:
        _check_batch_limits(starting, ending)
        for key in (MAX_OFFSETS_PER_TRIGGER, MIN_OFFSETS_PER_TRIGGER, MAX_TRIGGER_DELAY):
            if key in params:
                log.warning("%s option ignored in batch queries", _spelling(key))
    kafka = _kafka_params(params)
    if "group.id" in kafka:
        group_id = kafka["group.id"]
    else:
        prefix = params.get(GROUP_ID_PREFIX, "spark-kafka-source" if streaming else "spark-kafka-relation")
        group_id = f"{prefix}-{uuid.uuid4()}"
    return SourceOptions(
        strategy=_strategy(params),
        starting=starting,
        ending=ending,
        kafka_params=tuple(sorted(kafka.items())),
        fail_on_data_loss=_bool(params, FAIL_ON_DATA_LOSS, True),
        include_headers=_bool(params, INCLUDE_HEADERS, False),
        max_offsets_per_trigger=_long(params, MAX_OFFSETS_PER_TRIGGER),
        min_offsets_per_trigger=_long(params, MIN_OFFSETS_PER_TRIGGER),
        max_trigger_delay_ms=duration_ms(params.get(MAX_TRIGGER_DELAY, DEFAULT_MAX_TRIGGER_DELAY)),
        min_partitions=_long(params, MIN_PARTITIONS),
        max_records_per_partition=_long(params, MAX_RECORDS_PER_PARTITION),
        group_id=group_id,
        poll_timeout_ms=_long(params, POLL_TIMEOUT_MS) or DEFAULT_POLL_TIMEOUT_MS,
        fetch_offset_num_retries=_long(params, FETCH_OFFSET_NUM_RETRIES) or 3,
        fetch_offset_retry_interval_ms=_long(params, FETCH_OFFSET_RETRY_INTERVAL_MS) or 10,
    )


def validate_general_options(options: Mapping[str, str]) -> None:
    """The checks Spark's Kafka source makes for batch and streaming reads alike."""
    params = _lower(options)
    given = [k for k in STRATEGY_KEYS if k in params]
    names = ", ".join(_spelling(k) for k in STRATEGY_KEYS)
    if not given:
        raise ValueError(f"One of the following options must be specified for Kafka source: {names}. "
                         "See the docs for more details.")
    if len(given) > 1:
        raise ValueError(f"Only one of the following options can be specified for Kafka source: {names}. "
                         "See the docs for more details.")
    _strategy(params)
    if MIN_PARTITIONS in params and (_long(params, MIN_PARTITIONS) or 0) <= 0:
        raise ValueError("minPartitions must be positive")
    if MAX_RECORDS_PER_PARTITION in params and (_long(params, MAX_RECORDS_PER_PARTITION) or 0) <= 0:
        raise ValueError("maxRecordsPerPartition must be positive")
    for key, message in _REJECTED_CONSUMER_KEYS.items():
        if KAFKA_PREFIX + key in params:
            raise ValueError(message)
    if KAFKA_PREFIX + "group.id" in params:
        log.warning(_CUSTOM_GROUP_ID_WARNING)
        if GROUP_ID_PREFIX in params:
            log.warning("Option groupIdPrefix will be ignored as option kafka.group.id has been set.")
    if KAFKA_PREFIX + "bootstrap.servers" not in params:
        raise ValueError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer")
    low, high = _long(params, MIN_OFFSETS_PER_TRIGGER), _long(params, MAX_OFFSETS_PER_TRIGGER)
    if low is not None and high is not None and low > high:
        raise ValueError(f"The value of minOffsetPerTrigger({low}) is higher than the maxOffsetsPerTrigger({high}).")
    for key in (MAX_OFFSETS_PER_TRIGGER, MIN_OFFSETS_PER_TRIGGER):
        value = _long(params, key)
        if value is not None and value <= 0:
            raise ValueError(f"{_spelling(key)} must be positive")
    if MAX_TRIGGER_DELAY in params:
        duration_ms(params[MAX_TRIGGER_DELAY])
    strategy = params.get(STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY)
    if strategy is not None and strategy.strip().lower() not in ("error", "latest"):
        raise ValueError(f"startingOffsetsByTimestampStrategy must be 'error' or 'latest', got '{strategy}'")
    for key in (FAIL_ON_DATA_LOSS, INCLUDE_HEADERS):
        _bool(params, key, False)


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Options of a write: ``kafka.bootstrap.servers``, ``topic`` and producer ``kafka.*`` properties."""
    params = _lower(options)
    for key, message in _REJECTED_PRODUCER_KEYS.items():
        if KAFKA_PREFIX + key in params:
            raise ValueError(message)
    if KAFKA_PREFIX + "bootstrap.servers" not in params:
        raise ValueError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer")
    topic = params.get(TOPIC)
    exactly_once = _bool(params, EXACTLY_ONCE, False)
    prefix = params.get(TRANSACTIONAL_ID_PREFIX)
    if prefix is not None:
        prefix = prefix.strip()
        if not exactly_once:
            raise ValueError("Option 'transactionalIdPrefix' only applies with 'exactlyOnce' set to 'true'")
        if not prefix:
            raise ValueError("Option 'transactionalIdPrefix' must not be empty")
    return SinkOptions(topic=topic.strip() if topic is not None else None,
                       kafka_params=tuple(sorted(_kafka_params(params).items())),
                       exactly_once=exactly_once, transactional_id_prefix=prefix)


def duration_ms(text: str) -> int:
    """Spark's time strings: ``15m``, ``30s``, ``500ms``, ``1h``, ``2d``, ``100us``; no unit = ms."""
    m = re.fullmatch(r"\s*(-?\d+)\s*([a-z]*)\s*", text.lower())
    if not m or m.group(2) not in ("", *_DURATION_UNITS_MS):
        raise ValueError(f"Invalid time string '{text}': expected a number with an optional unit "
                         "(us, ms, s, m, min, h, d), e.g. 15m")
    return int(int(m.group(1)) * _DURATION_UNITS_MS.get(m.group(2) or "ms", 1))


# --------------------------------------------------------------------------------------- internals


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _spelling(key: str) -> str:
    """The documented spelling of a lower-cased option name."""
    for name in ("assign", "subscribe", "subscribePattern", "maxOffsetsPerTrigger", "minOffsetsPerTrigger",
                 "maxTriggerDelay", "minPartitions", "maxRecordsPerPartition", "exactlyOnce"):
        if name.lower() == key:
            return name
    return key


def _kafka_params(params: Mapping[str, str]) -> dict[str, str]:
    return {k[len(KAFKA_PREFIX):]: v for k, v in params.items() if k.startswith(KAFKA_PREFIX)}


def _bool(params: Mapping[str, str], key: str, default: bool) -> bool:
    if key not in params:
        return default
    value = params[key].strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"Option '{_spelling(key)}' must be 'true' or 'false', got '{params[key]}'")
    return value == "true"


def _long(params: Mapping[str, str], key: str) -> int | None:
    if key not in params:
        return None
    try:
        return int(params[key].strip())
    except ValueError:
        raise ValueError(f"Option '{_spelling(key)}' must be an integer, got '{params[key]}'") from None


def _strategy(params: Mapping[str, str]) -> Strategy:
    if ASSIGN in params:
        value = params[ASSIGN]
        if not value.strip().startswith("{"):
            raise ValueError(f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")
        return Strategy("assign", assigned=tuple(_assign_json(value)))
    if SUBSCRIBE in params:
        value = params[SUBSCRIBE]
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ValueError(f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
        return Strategy("subscribe", topics=topics)
    value = params[SUBSCRIBE_PATTERN]
    if not value.strip():
        raise ValueError(
            f"Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{value}'")
    try:
        re.compile(value.strip())
    except re.error as e:
        raise ValueError(f"Invalid subscribePattern '{value}': {e}") from None
    return Strategy("subscribePattern", pattern=value.strip())


def _assign_json(text: str) -> list[TopicPartition]:
    try:
        obj = json.loads(text)
        return [TopicPartition(str(t), int(p)) for t, parts in obj.items() for p in parts
                if not isinstance(p, bool)]
    except (ValueError, AttributeError, TypeError):
        raise ValueError(f"Expected e.g. {_ASSIGN_EXAMPLE}, got {text}") from None


def _partition_values(text: str, example: str) -> tuple[tuple[TopicPartition, int], ...]:
    try:
        obj = json.loads(text)
        pairs = [(TopicPartition(str(t), int(p)), int(v)) for t, parts in obj.items() for p, v in parts.items()]
    except (ValueError, AttributeError, TypeError):
        raise ValueError(f"Expected e.g. {example}, got {text}") from None
    return tuple(sorted(pairs))


def _range_limit(params: Mapping[str, str], global_ts_key: str, by_ts_key: str, offsets_key: str,
                 default: str) -> RangeLimit:
    no_match_latest = params.get(STARTING_OFFSETS_BY_TIMESTAMP_STRATEGY, "error").strip().lower() == "latest"
    if global_ts_key in params:
        text = params[global_ts_key].strip()
        try:
            return RangeLimit("timestamp", timestamp_ms=int(text), no_match_latest=no_match_latest)
        except ValueError:
            raise ValueError(f"Expected a single long value, got {text}") from None
    if by_ts_key in params:
        return RangeLimit("timestamps", offsets=_partition_values(params[by_ts_key].strip(), _TIMESTAMPS_EXAMPLE),
                          no_match_latest=no_match_latest)
    text = params.get(offsets_key, default).strip()
    if text.lower() in ("earliest", "latest"):
        return RangeLimit(text.lower())  # type: ignore[arg-type]
    return RangeLimit("offsets", offsets=_partition_values(text, _OFFSETS_EXAMPLE))


def _check_batch_limits(starting: RangeLimit, ending: RangeLimit) -> None:
    if starting.kind == "latest":
        raise ValueError("starting offset can't be latest for batch queries on Kafka")
    for tp, offset in starting.offsets if starting.kind == "offsets" else ():
        if offset == LATEST:
            raise ValueError(f"startingOffsets for {tp} can't be latest for batch queries on Kafka")
    if ending.kind == "earliest":
        raise ValueError("ending offset can't be earliest for batch queries on Kafka")
    for tp, offset in ending.offsets if ending.kind == "offsets" else ():
        if offset == EARLIEST:
            raise ValueError(f"ending offset for {tp} can't be earliest for batch queries on Kafka")
    if starting.kind == ending.kind and starting.kind in ("offsets", "timestamps"):
        start, end = starting.offset_map, ending.offset_map
        if set(start) != set(end):
            raise ValueError(
                "The specified start and end offsets must name the same topic-partitions: start "
                f"{sorted(map(str, start))}, end {sorted(map(str, end))}")
        for tp, first in start.items():
            last = end[tp]
            if first >= 0 and last >= 0 and first > last:
                what = "offset" if starting.kind == "offsets" else "timestamp"
                raise ValueError(f"The specified starting {what} ({first}) is greater than the ending "
                                 f"{what} ({last}) for topic partition {tp}.")


__all__ = [
    "RangeLimit",
    "SinkOptions",
    "SourceOptions",
    "Strategy",
    "duration_ms",
    "parse_sink_options",
    "parse_source_options",
    "validate_general_options",
]
