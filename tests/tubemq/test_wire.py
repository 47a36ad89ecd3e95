"""The TubeMQ listeners of a real broker, spoken to on the wire with Tidelog's own TubeMQ client:
hostile input (bad tokens, huge list sizes, long blocks, truncated frames, garbage protobufs, wrong
services and methods) and every bad request gets TubeMQ's answer, while the broker and its other
connections (TubeMQ and Kafka) carry on and no record is lost or half-written."""

from __future__ import annotations

import socket
import struct

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.integration.kafka_io import create_topic
from tests.tubemq.driver import TUBE_BROKER_OVERRIDES
from tidelog.protocol.tubemq.frame import BEGIN_TOKEN, encode_frame
from tidelog.protocol.tubemq.generated import broker_service_pb2 as broker_pb
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.protocol.tubemq.message import checksum
from tidelog.protocol.tubemq.rpc import Method, Service, Status
from tidelog.testing import BrokerProcess
from tidelog.testing.tubemq import TubeRpcError, TubeWireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("tubemq")]

TOPIC = "wire-topic"


BROKER_OVERRIDES = TUBE_BROKER_OVERRIDES  # the module's broker (tests/fixtures.py)


def on_broker_started(broker: BrokerProcess) -> None:
    create_topic(broker, TOPIC, 2, timeout=30)


def send_request(**fields) -> broker_pb.SendMessageRequestP2B:
    base = dict(clientId="wire-producer", topicName=TOPIC, partitionId=0, data=b"payload", flag=0, checkSum=-1,
                sentAddr=0x7F000001)
    base.update(fields)
    return broker_pb.SendMessageRequestP2B(**base)


def log_end(broker: BrokerProcess, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "wire-watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=10)[1]
    finally:
        consumer.close()


def master_alive(endpoints: tuple[str, str]) -> bool:
    with TubeWireClient.connect(endpoints[0]) as client:
        response = client.request(Service.MASTER, Method.PRODUCER_HEARTBEAT_P2M, master_pb.HeartRequestP2M(
            clientId="probe", brokerCheckSum=-1, hostName="h", topicList=[TOPIC]))
    return response.success and response.topicInfos == [f"{TOPIC}#0:2:1#{1048588 - 1024}"]


@pytest.mark.parametrize("hostile", [
    struct.pack(">IIi", 0xDEADBEEF, 1, 1),  # not TubeMQ's token (an HTTP request would be another)
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    struct.pack(">IIi", BEGIN_TOKEN, 1, 3585),  # above the list-size bound
    struct.pack(">IIi", BEGIN_TOKEN, 1, -7),
    struct.pack(">IIi", BEGIN_TOKEN, 1, 1) + struct.pack(">i", 8193),  # a block longer than 8192 bytes
    struct.pack(">IIi", BEGIN_TOKEN, 1, 1) + struct.pack(">i", -1),
], ids=["token", "http", "list-size", "negative-list-size", "long-block", "negative-block"])
@pytest.mark.parametrize("port", [0, 1], ids=["master", "broker"])
def test_bytes_that_are_not_tubemq_framing_close_that_connection_only(
        broker: BrokerProcess, endpoints: tuple[str, str], hostile: bytes, port: int) -> None:
    bystander = TubeWireClient.connect(endpoints[1])
    with TubeWireClient.connect(endpoints[port]) as victim:
        victim.send_raw(hostile)
        assert victim.closed_by_peer()
    response = bystander.request(Service.BROKER_WRITE, Method.SEND_MESSAGE_P2B, send_request(data=b"after-hostile"))
    assert response.success  # another connection is untouched
    bystander.close()
    assert master_alive(endpoints) and broker.alive


def test_a_truncated_frame_is_waited_for_and_dropped_with_its_connection(
        broker: BrokerProcess, endpoints: tuple[str, str]) -> None:
    frame = encode_frame(1, bytes(20_000))
    sock = socket.create_connection(tuple(endpoints[1].rsplit(":", 1)), timeout=10)  # type: ignore[arg-type]
    sock.sendall(frame[: len(frame) // 2])
    sock.close()
    assert master_alive(endpoints) and broker.alive


@pytest.mark.parametrize(("payload", "problem"), [
    (b"", "RpcConnHeader has no valid length prefix"),
    (b"\x7f" + b"\x00" * 10, "claims 127 bytes"),
    (b"\x03\x08\x00\x10", "does not parse"),
    (bytes(range(256)), ""),
], ids=["empty", "long-prefix", "garbage-header", "byte-soup"])
def test_garbage_protobufs_get_an_exception_body_and_the_connection_stays_open(
        endpoints: tuple[str, str], payload: bytes, problem: str) -> None:
    with TubeWireClient.connect(endpoints[0]) as client:
        client.send_raw(encode_frame(4242, payload))
        response = client.receive(4242)
        assert response.status == Status.FATAL
        assert response.exception_name == "java.io.IOException"
        assert "IPC server unable to read call parameters" in response.stack_trace and problem in response.stack_trace
        heartbeat = client.request(Service.MASTER, Method.PRODUCER_HEARTBEAT_P2M, master_pb.HeartRequestP2M(
            clientId="p", brokerCheckSum=-1, hostName="h"))
        assert heartbeat.success


@pytest.mark.parametrize(("listener", "service", "method", "text"), [
    (0, 9, Method.PRODUCER_HEARTBEAT_P2M, "Unsupported method 2 in service type 9!"),
    (0, Service.BROKER_READ, Method.PRODUCER_HEARTBEAT_P2M, "Unsupported method 2 in service type 2!"),
    (0, Service.MASTER, 77, "Unsupported method 77 in service type 1!"),
    (0, Service.MASTER, 0, "Unsupported method 0"),  # what the C++ producer's close sends
    (0, Service.BROKER_WRITE, Method.SEND_MESSAGE_P2B, "No method 13 in service 3 found on the server"),
    (1, Service.MASTER, Method.PRODUCER_REGISTER_P2M, "No method 1 in service 1 found on the server"),
    (0, Service.MASTER, Method.BROKER_REGISTER_B2M, "Tidelog is the broker"),
    (0, Service.MASTER, Method.CONSUMER_REGISTER_C2M_V2, "client-balance consumer"),
    (0, Service.MASTER, Method.CONSUMER_GET_PART_META_C2M, "client-balance consumer"),
])
def test_wrong_services_and_methods_get_java_exceptions(endpoints: tuple[str, str], listener: int, service: int,
                                                        method: int, text: str) -> None:
    with TubeWireClient.connect(endpoints[listener]) as client:
        response = client.call(service, method, b"", protocol_version=2)
        assert response.status == Status.ERROR
        assert response.exception_name == "java.lang.Exception"
        assert text in response.stack_trace


def test_an_inner_request_missing_required_fields_is_an_ioexception(endpoints: tuple[str, str]) -> None:
    with TubeWireClient.connect(endpoints[1]) as client, pytest.raises(TubeRpcError) as e:
        client.request(Service.BROKER_WRITE, Method.SEND_MESSAGE_P2B,
                       broker_pb.SendMessageRequestP2B(clientId="c").SerializePartialToString())
    assert e.value.response.exception_name == "java.io.IOException"
    assert "misses required fields: topicName, partitionId, data, flag, checkSum, sentAddr" in e.value.response.stack_trace


@pytest.mark.parametrize(("fields", "code", "text"), [
    ({"topicName": "no-such-topic"}, 403, "Topic no-such-topic not existed"),
    ({"topicName": "__consumer_offsets"}, 403, "not existed"),
    ({"partitionId": 2}, 403, f"Topic {TOPIC}-2 not existed"),
    ({"partitionId": -1}, 403, "not existed"),
    ({"data": b""}, 400, "data length is zero!"),
    ({"checkSum": 12345}, 403, "Checksum msg data failure"),
    ({"flag": 1, "data": struct.pack(">i", 99) + b"short"}, 400, "attribute length 99 does not fit"),
    ({"flag": 1, "data": b"\x00"}, 400, "the attribute flag is set but the payload has only 1 bytes"),
    ({"data": b"x" * 1_100_000}, 400, "data length over max length"),
])
def test_bad_sends_get_tubemqs_codes_and_write_nothing(broker: BrokerProcess, endpoints: tuple[str, str],
                                                       fields: dict, code: int, text: str) -> None:
    before = log_end(broker, 0)
    with TubeWireClient.connect(endpoints[1]) as client:
        response = client.request(Service.BROKER_WRITE, Method.SEND_MESSAGE_P2B, send_request(**fields))
    assert (response.success, response.errCode) == (False, code)
    assert text in response.errMsg
    assert log_end(broker, 0) == before


def test_a_send_with_a_correct_checksum_and_attribute_is_written_once(broker: BrokerProcess,
                                                                      endpoints: tuple[str, str]) -> None:
    attribute = b"$msgType$=t,k=v"
    data = struct.pack(">i", len(attribute)) + attribute + b"body"
    before = log_end(broker, 1)
    with TubeWireClient.connect(endpoints[1]) as client:
        response = client.request(Service.BROKER_WRITE, Method.SEND_MESSAGE_P2B,
                                  send_request(partitionId=1, data=data, flag=1, checkSum=checksum(data)))
    assert response.success and response.errCode == 200
    assert response.messageId == before and response.errMsg == str(before)
    assert response.appendOffset == 28 * before
    assert log_end(broker, 1) == before + 1


def consumer_register(client: TubeWireClient, **fields) -> broker_pb.RegisterResponseB2C:
    base = dict(opType=31, clientId="nobody", groupName="wire-group", topicName=TOPIC, partitionId=0, readStatus=0)
    base.update(fields)
    return client.request(Service.BROKER_READ, Method.CONSUMER_REGISTER_C2B, broker_pb.RegisterRequestC2B(**base))


def test_consumers_that_are_not_members_are_refused_at_the_broker(endpoints: tuple[str, str]) -> None:
    with TubeWireClient.connect(endpoints[1]) as client:
        assert consumer_register(client).errCode == 411  # not registered with the master
        assert consumer_register(client, opType=32).errCode == 411
        assert consumer_register(client, opType=99).errCode == 400
        assert consumer_register(client, topicName="nope").errCode == 403
        got = client.request(Service.BROKER_READ, Method.GET_MESSAGES_C2B, broker_pb.GetMessageRequestC2B(
            clientId="nobody", partitionId=0, groupName="wire-group", topicName=TOPIC, lastPackConsumed=True))
        assert (got.success, got.errCode) == (False, 411) and "you have to register firstly" in got.errMsg
        commit = client.request(Service.BROKER_READ, Method.CONSUMER_COMMIT_C2B, broker_pb.CommitOffsetRequestC2B(
            clientId="nobody", topicName=TOPIC, partitionId=0, groupName="wire-group"))
        assert commit.errCode == 401
        heartbeat = client.request(Service.BROKER_READ, Method.CONSUMER_HEARTBEAT_C2B, broker_pb.HeartBeatRequestC2B(
            clientId="nobody", groupName="wire-group", readStatus=0,
            partitionInfo=[f"0:127.0.0.1:1#{TOPIC}:0", f"0:127.0.0.1:1#{TOPIC}:1"]))
        assert heartbeat.success and heartbeat.hasPartFailure
        assert heartbeat.failureInfo == [f"411:0:127.0.0.1:1#{TOPIC}:0", f"411:0:127.0.0.1:1#{TOPIC}:1"]
        bad = client.request(Service.BROKER_READ, Method.CONSUMER_HEARTBEAT_C2B, broker_pb.HeartBeatRequestC2B(
            clientId="nobody", groupName="wire-group", readStatus=0, partitionInfo=["garbage"]))
        assert bad.errCode == 400


def test_a_consumer_registered_with_the_master_reads_what_it_was_assigned(broker: BrokerProcess,
                                                                           endpoints: tuple[str, str]) -> None:
    """The whole TubeMQ consumer exchange, step by step, as the Java client performs it."""
    group, me = "wire-member-group", "wire-consumer"
    with TubeWireClient.connect(endpoints[0]) as master, TubeWireClient.connect(endpoints[1]) as brk:
        registered = master.request(Service.MASTER, Method.CONSUMER_REGISTER_C2M, master_pb.RegisterRequestC2M(
            clientId=me, groupName=group, hostName="h", topicList=[TOPIC], defFlowCheckId=-2, groupFlowCheckId=-2))
        assert registered.success and registered.defFlowCheckId == -2 and registered.defFlowControlInfo == " "
        beat = master.request(Service.MASTER, Method.CONSUMER_HEARTBEAT_C2M, master_pb.HeartRequestC2M(
            clientId=me, groupName=group, reportSubscribeInfo=False))
        assert beat.event.opType == 10  # ONLY_CONNECT
        partitions = sorted(int(i.rsplit(":", 1)[1]) for i in beat.event.subscribeInfo)
        assert partitions == [0, 1]
        assert all(i.startswith(f"{me}@{group}#0:") for i in beat.event.subscribeInfo)
        for p in partitions:
            answer = consumer_register(brk, clientId=me, groupName=group, partitionId=p)
            assert answer.success and answer.currOffset == 0 and answer.maxOffset == 28 * log_end(broker, p)
        got = brk.request(Service.BROKER_READ, Method.GET_MESSAGES_C2B, broker_pb.GetMessageRequestC2B(
            clientId=me, partitionId=1, groupName=group, topicName=TOPIC, lastPackConsumed=False))
        assert got.success and got.messages and got.currOffset == 0
        for message in got.messages:
            assert message.checkSum == checksum(message.payLoadData)
        again = brk.request(Service.BROKER_READ, Method.GET_MESSAGES_C2B, broker_pb.GetMessageRequestC2B(
            clientId=me, partitionId=1, groupName=group, topicName=TOPIC, lastPackConsumed=False))
        assert [m.messageId for m in again.messages] == [m.messageId for m in got.messages]  # rolled back
        confirmed = brk.request(Service.BROKER_READ, Method.CONSUMER_COMMIT_C2B, broker_pb.CommitOffsetRequestC2B(
            clientId=me, topicName=TOPIC, partitionId=1, groupName=group, lastPackConsumed=True))
        assert confirmed.success and confirmed.currOffset == 28 * (again.messages[-1].messageId + 1)
        drained = brk.request(Service.BROKER_READ, Method.GET_MESSAGES_C2B, broker_pb.GetMessageRequestC2B(
            clientId=me, partitionId=1, groupName=group, topicName=TOPIC, lastPackConsumed=True))
        assert (drained.success, drained.errCode) == (False, 404)
        closed = master.request(Service.MASTER, Method.CONSUMER_CLOSE_CLIENT_C2M,
                                master_pb.CloseRequestC2M(clientId=me, groupName=group))
        assert closed.success
        after = brk.request(Service.BROKER_READ, Method.GET_MESSAGES_C2B, broker_pb.GetMessageRequestC2B(
            clientId=me, partitionId=1, groupName=group, topicName=TOPIC, lastPackConsumed=True))
        assert after.errCode == 411  # gone with the close
