"""TubeMQ messages in and out of record batches: what a send stores, and what a read hands to TubeMQ
consumers (whole batches from the fetch offset, control batches and aborted transactions skipped,
message type filters, TubeMQ offsets)."""

from __future__ import annotations

from tidelog.protocol.tubemq.message import checksum, split_payload
from tidelog.records import RecordBatchBuilder, RecordBatchView
from tidelog.records.control import ControlRecordType, build_control_batch
from tidelog.server.tubemq.record import batch_of_message, kafka_offset, transfered_messages, tube_offset
from tidelog.storage.txn_index import AbortedTxn


def batch(base_offset: int, values: list[bytes], *, producer_id: int = -1, transactional: bool = False,
          headers: list | None = None) -> bytes:
    builder = RecordBatchBuilder(base_offset=base_offset, producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                                 base_sequence=0 if producer_id >= 0 else -1, is_transactional=transactional)
    for value in values:
        builder.append(1000, None, value, headers or [])
    return builder.build()


def marker(offset: int, kind: ControlRecordType, producer_id: int) -> bytes:
    return build_control_batch(kind, producer_id=producer_id, producer_epoch=0, coordinator_epoch=0,
                               timestamp_ms=1000, base_offset=offset)


def bodies(result) -> list[bytes]:
    return [split_payload(m.payLoadData, m.flag)[1] for m in result.messages]


def test_a_sent_message_becomes_one_record_with_key_and_headers() -> None:
    data = batch_of_message("$msgType$=t,$msgKey$=k,a=b", b"body", None, "202601010000", 1234)
    (record,) = RecordBatchView(data).records()
    assert (record.key, record.value, record.timestamp) == (b"k", b"body", 1234)
    assert [(h.key, h.value) for h in record.headers] == [("$msgTime$", b"202601010000"), ("$msgType$", b"t"),
                                                           ("a", b"b")]


def test_reading_returns_messages_from_the_fetch_offset_with_their_offsets_as_ids() -> None:
    data = batch(10, [b"a", b"b", b"c"]) + batch(13, [b"d"])
    result = transfered_messages(data, 11)
    assert [m.messageId for m in result.messages] == [11, 12, 13] and bodies(result) == [b"b", b"c", b"d"]
    assert result.next_offset == 14
    for m in result.messages:
        assert m.checkSum == checksum(m.payLoadData) and m.flag == 0
    cut = data[: len(data) - 5]  # a read cut inside the last batch returns the whole batches before it
    assert transfered_messages(cut, 10).next_offset == 13


def test_headers_travel_as_an_attribute() -> None:
    result = transfered_messages(batch(0, [b"x"], headers=[("$msgType$", b"t"), ("k", b"v")]), 0)
    (message,) = result.messages
    assert message.flag == 1 and split_payload(message.payLoadData, 1) == ("$msgType$=t,k=v", b"x")


def test_control_batches_and_aborted_transactions_are_skipped() -> None:
    data = (batch(0, [b"plain"]) + batch(1, [b"aborted-1", b"aborted-2"], producer_id=7, transactional=True)
            + batch(3, [b"committed"], producer_id=8, transactional=True)
            + marker(4, ControlRecordType.ABORT, 7) + marker(5, ControlRecordType.COMMIT, 8)
            + batch(6, [b"later"], producer_id=7, transactional=True) + marker(7, ControlRecordType.COMMIT, 7))
    result = transfered_messages(data, 0, aborted=[AbortedTxn(7, 1, 4, 6)])
    assert bodies(result) == [b"plain", b"committed", b"later"]
    assert [m.messageId for m in result.messages] == [0, 3, 6] and result.next_offset == 8


def test_a_type_filter_keeps_matching_messages_and_passes_the_others_offsets() -> None:
    data = (batch(0, [b"a"], headers=[("$msgType$", b"click")]) + batch(1, [b"b"], headers=[("$msgType$", b"view")])
            + batch(2, [b"c"]))
    result = transfered_messages(data, 0, msg_types=frozenset({"click"}))
    assert bodies(result) == [b"a"] and result.next_offset == 3
    nothing = transfered_messages(data[len(batch(0, [b"a"], headers=[("$msgType$", b"click")])):], 1,
                                  msg_types=frozenset({"click"}))
    assert nothing.messages == [] and nothing.next_offset == 3


def test_tubemq_offsets_are_28_bytes_per_message() -> None:
    assert tube_offset(5) == 140 and kafka_offset(140) == 5 and kafka_offset(141) == 5 and kafka_offset(167) == 5
