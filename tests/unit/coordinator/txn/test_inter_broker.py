"""The transaction coordinator's requests to other brokers, against a fake broker on a real socket:
what is sent (WriteTxnMarkers v1, AddPartitionsToTxn v5 in the brokers' batched form), how answers
map back to partitions, and a broker that is gone answering NETWORK_EXCEPTION."""

from __future__ import annotations

import asyncio
import struct

from tidelog.coordinator.txn.inter_broker import InterBrokerClient
from tidelog.errors import ErrorCode
from tidelog.peer.client import PeerSettings
from tidelog.protocol.headers import decode_request, encode_response
from tidelog.protocol.messages import (
    AddPartitionsToTxnResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

MR = WriteTxnMarkersResponse
AR = AddPartitionsToTxnResponse


async def _fake_broker(answer) -> tuple[asyncio.AbstractServer, list]:
    """A server answering each request with ``answer(request)``; returns it and the requests seen."""
    seen: list = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
            except asyncio.IncompleteReadError:
                return
            request = decode_request(frame)
            seen.append(request)
            writer.write(encode_response(answer(request.body), request.header.request_api_version,
                                         request.header.correlation_id))
            await writer.drain()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, seen


def test_markers_and_verification_go_to_the_other_broker() -> None:
    def answer(body):
        if isinstance(body, WriteTxnMarkersRequest):
            m = body.markers[0]
            return MR(markers=[MR.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
                MR.WritableTxnMarkerTopicResult(name=m.topics[0].name, partitions=[
                    MR.WritableTxnMarkerPartitionResult(partition_index=m.topics[0].partition_indexes[0],
                                                        error_code=int(ErrorCode.NOT_LEADER_OR_FOLLOWER))])])])
        txn = body.transactions[0]
        return AR(error_code=0, results_by_transaction=[AR.AddPartitionsToTxnResult(
            transactional_id=txn.transactional_id, topic_results=[AR.AddPartitionsToTxnTopicResult(
                name=t.name, results_by_partition=[AR.AddPartitionsToTxnPartitionResult(
                    partition_index=p, partition_error_code=int(ErrorCode.INVALID_TXN_STATE if p else 0))
                    for p in t.partitions]) for t in txn.topics])])

    async def run():
        server, seen = await _fake_broker(answer)
        port = server.sockets[0].getsockname()[1]
        client = InterBrokerClient(1, PeerSettings(lambda broker_id: ("127.0.0.1", port) if broker_id == 2 else None,
                                                   request_timeout_ms=5000))
        try:
            marker = await client.write_marker(2, "t", 3, 1000, 4, 7, True)
            added = await client.add_partitions(2, "tx", 1000, 4, [("t", 0), ("t", 1)], verify_only=True)
            unknown = await client.write_marker(9, "t", 3, 1000, 4, 7, True)
        finally:
            client.close()
            server.close()
        return marker, added, unknown, seen

    marker, added, unknown, seen = asyncio.run(run())
    assert marker == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert added == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.INVALID_TXN_STATE}
    assert unknown == ErrorCode.NETWORK_EXCEPTION  # a broker with no address
    (write, add) = seen
    assert (write.header.request_api_version, add.header.request_api_version) == (1, 5)
    m = write.body.markers[0]
    assert (m.producer_id, m.producer_epoch, m.coordinator_epoch, m.transaction_result) == (1000, 4, 7, True)
    txn = add.body.transactions[0]
    assert (txn.transactional_id, txn.verify_only, [(t.name, t.partitions) for t in txn.topics]) == (
        "tx", True, [("t", [0, 1])])


def test_a_broker_that_went_away_answers_network_exception() -> None:
    async def run():
        server, _ = await _fake_broker(lambda body: None)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        client = InterBrokerClient(1, PeerSettings(lambda broker_id: ("127.0.0.1", port), request_timeout_ms=2000))
        try:
            return (await client.write_marker(2, "t", 0, 1, 0, 0, False),
                    await client.add_partitions(2, "tx", 1, 0, [("t", 0)], verify_only=False))
        finally:
            client.close()

    assert asyncio.run(run()) == (ErrorCode.NETWORK_EXCEPTION, {("t", 0): ErrorCode.NETWORK_EXCEPTION})
