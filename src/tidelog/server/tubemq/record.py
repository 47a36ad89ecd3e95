"""TubeMQ messages in and out of Kafka record batches (the mapping is in
:mod:`tidelog.protocol.tubemq.message` and docs/tubemq.md).

* A sent message becomes one magic-v2 batch of one record: key and headers from its attribute,
  value = body, CreateTime = the broker's clock when it arrived.
* Reading turns batches read from a log back into ``TransferedMessage`` s: ``messageId`` = the
  record's offset, payload = attribute prefix + body, checksum over the payload, ``flag`` bit 0 when
  there is an attribute. Control batches are skipped, and so are the records of aborted
  transactions (the read is read_committed, and the aborted transactions it spans come with it), as
  a Kafka consumer in read_committed skips them. A message type filter (the consumer's
  ``filterCondStr``) drops messages whose ``$msgType$`` is not in it, as TubeMQ's broker does.
* Offsets: TubeMQ clients count positions in a store's index, 28 bytes per message; Tidelog's
  TubeMQ offset of Kafka offset ``o`` is ``o * 28`` (:data:`INDEX_ENTRY_BYTES`), so TubeMQ's own
  lag arithmetic, ``(max - current) / 28``, counts messages.

Pure over bytes; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tidelog.protocol.tubemq.generated import broker_service_pb2 as broker_pb
from tidelog.protocol.tubemq.message import (
    MSG_TYPE,
    HeaderPair,
    checksum,
    header_value,
    join_payload,
    message_attribute,
    record_from_message,
)
from tidelog.records import RecordBatchBuilder, RecordBatchView, iter_batches
from tidelog.records.control import ControlRecordType, parse_control_record_type
from tidelog.storage.txn_index import AbortedTxn

#: Bytes per message in a TubeMQ store's index: the unit of TubeMQ offsets.
INDEX_ENTRY_BYTES = 28


def tube_offset(kafka_offset: int) -> int:
    return kafka_offset * INDEX_ENTRY_BYTES


def kafka_offset(tube_offset: int) -> int:
    """The Kafka offset a TubeMQ offset points at (a position inside an entry rounds down)."""
    return tube_offset // INDEX_ENTRY_BYTES


def message_batch(key: bytes | None, body: bytes, headers: list[HeaderPair], timestamp_ms: int) -> bytes:
    """One sent message as a one-record batch."""
    builder = RecordBatchBuilder()
    builder.append(timestamp_ms, key, body, headers)
    return builder.build()


def batch_of_message(attribute: str | None, body: bytes, msg_type: str | None, msg_time: str | None,
                     timestamp_ms: int) -> bytes:
    key, headers = record_from_message(attribute, msg_type, msg_time)
    return message_batch(key, body, headers, timestamp_ms)


@dataclass(slots=True)
class ReadMessages:
    """Messages read from one partition and the offset after the last batch read (the next fetch)."""

    messages: list[broker_pb.TransferedMessage]
    next_offset: int
    dropped_headers: int = 0


def transfered_messages(data: bytes | memoryview, fetch_offset: int, aborted: Iterable[AbortedTxn] | None = None,
                        msg_types: frozenset[str] | None = None) -> ReadMessages:
    """The messages of the whole batches in ``data`` at or after ``fetch_offset``.

    ``aborted``: the aborted transactions the read spans (read_committed); their records are skipped.
    ``msg_types``: when given, only messages whose ``$msgType$`` is one of them are returned (the
    offsets of the others are passed all the same)."""
    pending = sorted(aborted or (), key=lambda a: a.first_offset)
    aborted_producers: set[int] = set()
    out = ReadMessages([], fetch_offset)
    for batch in iter_batches(data, allow_partial=True):
        if not isinstance(batch, RecordBatchView):
            continue  # logs hold magic-v2 batches only (storage converts older formats)
        if batch.next_offset <= fetch_offset:
            continue
        out.next_offset = batch.next_offset
        while pending and pending[0].first_offset <= batch.last_offset:
            aborted_producers.add(pending.pop(0).producer_id)
        if batch.is_control_batch:
            if batch.is_transactional and _is_abort_marker(batch):
                aborted_producers.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborted_producers:
            continue
        for record in batch.records():
            if record.offset < fetch_offset:
                continue
            headers = [(h.key, h.value) for h in record.headers]
            if msg_types is not None and header_value(headers, MSG_TYPE) not in msg_types:
                continue
            attribute, dropped = message_attribute(record.key, headers)
            out.dropped_headers += dropped
            payload, flag = join_payload(attribute, record.value or b"")
            out.messages.append(broker_pb.TransferedMessage(messageId=record.offset, checkSum=checksum(payload),
                                                            payLoadData=payload, flag=flag))
    return out


def _is_abort_marker(batch: RecordBatchView) -> bool:
    for record in batch.records():
        return record.key is not None and parse_control_record_type(record.key) == ControlRecordType.ABORT
    return False


__all__ = [
    "INDEX_ENTRY_BYTES",
    "ReadMessages",
    "batch_of_message",
    "kafka_offset",
    "message_batch",
    "transfered_messages",
    "tube_offset",
]
