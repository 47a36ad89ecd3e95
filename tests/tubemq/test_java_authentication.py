"""``tubemq.authentication.enable``: the real TubeMQ Java client (TubeClientConfig.setAuthenticInfo)
against a broker whose TubeMQ secrets were written by ``tidelog users add NAME --tubemq --data-dir``.

A user with the right secret produces and consumes; a wrong password and an unknown user are refused
with TubeMQ's 415 CERTIFICATE_FAILURE and nothing is written; on the wire, a replayed signature and a
message without the master's token are refused. (Authentication off, the default, is every other test
in tests/tubemq.)
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.integration.kafka_io import create_topic
from tests.tubemq.driver import TUBE_BROKER_OVERRIDES, JavaTube
from tidelog.protocol.tubemq.generated import broker_service_pb2 as broker_pb
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.protocol.tubemq.rpc import Method, Service
from tidelog.security.tubemq_signature import tube_signature
from tidelog.testing import BrokerProcess
from tidelog.testing.tubemq import TubeWireClient

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("tubemq")]

TOPIC = "tube-auth"
SECRET = "tube-secret+/= é"  # URL-encoding and UTF-8 in the signature


def add_secret(data_dir: Path, user: str, secret: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "tidelog", "users", "add", user, "--tubemq", "--password-stdin",
                           "--data-dir", str(data_dir)], input=secret + "\n", capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert secret not in proc.stdout + proc.stderr


#: The module's broker (tests/fixtures.py): TubeMQ authentication on, alice's secret written before it starts.
BROKER_OVERRIDES = {**TUBE_BROKER_OVERRIDES, "tubemq.authentication.enable": "true"}


def prepare_broker(data_dir: Path) -> None:
    add_secret(data_dir, "alice", SECRET)
    assert (data_dir / "tidelog-tubemq-secrets.json").stat().st_mode & 0o777 == 0o600


def on_broker_started(broker: BrokerProcess) -> None:
    create_topic(broker, TOPIC, 2, timeout=30)


def log_end(broker: BrokerProcess) -> int:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "tube-auth-watermarks"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in (0, 1))
    finally:
        consumer.close()


def test_a_user_with_the_right_secret_produces_and_consumes(tubemq_classpath: str, endpoints: tuple[str, str]) -> None:
    tube = JavaTube(tubemq_classpath, endpoints[0], user="alice", password=SECRET)
    sent = [{"body": f"auth-{i}"} for i in range(10)]
    results = tube.produce(TOPIC, sent)
    assert [r["ok"] for r in results] == [True] * 10, results
    with tube.member("tube-auth-group", [TOPIC], "auth-consumer") as member:
        member.wait_for(lambda m: len(m.records) >= 10, what="10 records")
        member.close()
    assert sorted(r["body"] for r in member.records) == sorted(m["body"] for m in sent)


@pytest.mark.parametrize(("user", "password"), [("alice", "not-the-secret"), ("mallory", SECRET)])
def test_a_wrong_password_or_unknown_user_is_refused(tubemq_classpath: str, broker: BrokerProcess,
                                                      endpoints: tuple[str, str], user: str,
                                                      password: str) -> None:
    before = log_end(broker)
    tube = JavaTube(tubemq_classpath, endpoints[0], user=user, password=password)
    proc = tube.run_producer(TOPIC, [{"body": "refused"}], timeout=120)
    assert proc.returncode != 0
    assert "userName or password is not correct" in proc.stderr, proc.stderr[-3000:]
    assert log_end(broker) == before


def signed_register(user: str, secret: str, nonce: int) -> master_pb.RegisterRequestP2M:
    now = int(time.time() * 1000)
    info = master_pb.AuthenticateInfo(userName=user, timestamp=now, nonce=nonce, othParams="",
                                      signature=tube_signature(user, secret, now, nonce))
    return master_pb.RegisterRequestP2M(clientId="wire-auth", topicList=[TOPIC], brokerCheckSum=-1, hostName="h",
                                        authInfo=master_pb.MasterCertificateInfo(authInfo=info))


def test_on_the_wire_a_replay_and_a_message_without_the_token_are_refused(broker: BrokerProcess,
                                                                          endpoints: tuple[str, str]) -> None:
    request = signed_register("alice", SECRET, 31337)
    with TubeWireClient.connect(endpoints[0]) as master:
        first = master.request(Service.MASTER, Method.PRODUCER_REGISTER_P2M, request)
        replay = master.request(Service.MASTER, Method.PRODUCER_REGISTER_P2M, request)
        anonymous = master.request(Service.MASTER, Method.PRODUCER_REGISTER_P2M, master_pb.RegisterRequestP2M(
            clientId="wire-auth", topicList=[TOPIC], brokerCheckSum=-1, hostName="h"))
    assert first.success and first.authorizedInfo.authAuthorizedToken.startswith("alice:")
    assert (replay.success, replay.errCode) == (False, 415) and "replayed" in replay.errMsg
    assert (anonymous.success, anonymous.errCode) == (False, 415)
    token = first.authorizedInfo.authAuthorizedToken

    def send(auth: broker_pb.AuthorizedInfo | None):
        fields = dict(clientId="wire-auth", topicName=TOPIC, partitionId=0, data=b"x", flag=0, checkSum=-1,
                      sentAddr=0x7F000001)
        if auth is not None:
            fields["authInfo"] = auth
        return tube_broker.request(Service.BROKER_WRITE, Method.SEND_MESSAGE_P2B, broker_pb.SendMessageRequestP2B(**fields))

    before = log_end(broker)
    with TubeWireClient.connect(endpoints[1]) as tube_broker:
        missing = send(None)
        forged = send(broker_pb.AuthorizedInfo(visitAuthorizedToken=0, authAuthorizedToken="alice:forged"))
        assert log_end(broker) == before
        good = send(broker_pb.AuthorizedInfo(visitAuthorizedToken=first.authorizedInfo.visitAuthorizedToken,
                                             authAuthorizedToken=token))
    assert (missing.errCode, forged.errCode) == (415, 415)
    assert good.success and log_end(broker) == before + 1


def test_a_consumer_with_a_wrong_password_gets_no_partition(tubemq_classpath: str,
                                                            endpoints: tuple[str, str]) -> None:
    tube = JavaTube(tubemq_classpath, endpoints[0], user="alice", password="not-the-secret")
    with tube.member("tube-auth-refused", [TOPIC], "refused-consumer") as member:
        member.wait_for(lambda m: any("userName or password is not correct" in line for line in m.stderr),
                        timeout=30, what="the master's refusal")
        assert member.partitions == set() and member.records == []


def test_on_the_wire_an_unsigned_consumer_is_held_until_it_signs(endpoints: tuple[str, str]) -> None:
    """tubemq-client 1.13.0's consumer registers unsigned: it is answered, joins no group, and is asked
    (requireAuth) to sign its next heartbeat; a consumer without any certificate is refused."""
    group, client = "wire-auth-group", "wire-auth-consumer"

    def heartbeat(certificate: master_pb.MasterCertificateInfo):
        return master.request(Service.MASTER, Method.CONSUMER_HEARTBEAT_C2M, master_pb.HeartRequestC2M(
            clientId=client, groupName=group, reportSubscribeInfo=False, authInfo=certificate))

    with TubeWireClient.connect(endpoints[0]) as master:
        bare = master.request(Service.MASTER, Method.CONSUMER_REGISTER_C2M, master_pb.RegisterRequestC2M(
            clientId=client, groupName=group, hostName="h", topicList=[TOPIC]))
        held = master.request(Service.MASTER, Method.CONSUMER_REGISTER_C2M, master_pb.RegisterRequestC2M(
            clientId=client, groupName=group, hostName="h", topicList=[TOPIC],
            authInfo=master_pb.MasterCertificateInfo(authorizedToken="")))
        asked = heartbeat(master_pb.MasterCertificateInfo(authorizedToken=""))
        wrong = heartbeat(master_pb.MasterCertificateInfo(
            authInfo=signed_register("alice", "not-the-secret", 1).authInfo.authInfo))
        signed = heartbeat(master_pb.MasterCertificateInfo(authInfo=signed_register("alice", SECRET, 2).authInfo.authInfo))
        token = heartbeat(master_pb.MasterCertificateInfo(authorizedToken=signed.authorizedInfo.authAuthorizedToken))
        stranger = master.request(Service.MASTER, Method.CONSUMER_HEARTBEAT_C2M, master_pb.HeartRequestC2M(
            clientId="never-registered", groupName=group, reportSubscribeInfo=False,
            authInfo=master_pb.MasterCertificateInfo(authorizedToken=signed.authorizedInfo.authAuthorizedToken)))
        anonymous_close = master.request(Service.MASTER, Method.CONSUMER_CLOSE_CLIENT_C2M, master_pb.CloseRequestC2M(
            clientId=client, groupName=group))
        close = master.request(Service.MASTER, Method.CONSUMER_CLOSE_CLIENT_C2M, master_pb.CloseRequestC2M(
            clientId=client, groupName=group,
            authInfo=master_pb.MasterCertificateInfo(authorizedToken=token.authorizedInfo.authAuthorizedToken)))
    assert (bare.success, bare.errCode) == (False, 415) and "Server required MasterCertificateInfo" in bare.errMsg
    assert held.success and not held.HasField("authorizedInfo")
    assert asked.success and asked.requireAuth and not asked.HasField("event")
    assert (wrong.success, wrong.errCode) == (False, 415)
    assert signed.success and signed.authorizedInfo.authAuthorizedToken.startswith("alice:")
    # A member of the group now (a client that is none gets 411 HB_NO_NODE, the token notwithstanding).
    assert token.success
    assert (stranger.success, stranger.errCode) == (False, 411)
    assert (anonymous_close.success, anonymous_close.errCode) == (False, 415)  # nobody else closes it
    assert close.success
