"""Spark's own Kafka connector (``format("kafka")``) with a delegation token: the driver's user creates a
token (CreateDelegationToken over SASL/SCRAM), and the connector's consumers and producers, which run in
Spark's executor tasks, authenticate with it (``kafka.sasl.jaas.config`` = ``ScramLoginModule`` with the
token id, its HMAC and ``tokenauth="true"``), reading and writing as the token's owner.

Spark's own token provider (``spark.kafka.clusters.<id>.auth.bootstrap.servers``) obtains tokens only
under Kerberos (``UserGroupInformation.isSecurityEnabled``), which these machines do not have; this is
the token use that provider would hand its executors (docs/compat.md "Delegation tokens")."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")

from tidelog.protocol.messages import CreateDelegationTokenRequest
from tidelog.testing.client import WireClient

from .conftest import SPARK_BROKER_OVERRIDES, consume_all, create_topic, produce

pytestmark = [pytest.mark.spark, pytest.mark.kafka_connector, pytest.mark.xdist_group("spark-tokens")]

OWNER, PASSWORD = "spark-owner", "spark-owner-secret"
BROKER_USERS = {OWNER: PASSWORD}
BROKER_OVERRIDES = {**SPARK_BROKER_OVERRIDES, "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                    "delegation.token.secret.key": "spark-token-secret"}


def _sasl_address(broker) -> str:
    return f"127.0.0.1:{broker.listener_port('SASL_PLAINTEXT')}"


def _create_token(broker) -> tuple[str, str]:
    with WireClient.connect(_sasl_address(broker)) as client:
        client.authenticate("SCRAM-SHA-256", OWNER, PASSWORD)
        created = client.request(CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1), 3)
    assert created.error_code == 0 and created.principal_name == OWNER
    return created.token_id, base64.b64encode(created.hmac).decode()


def test_executors_read_and_write_with_a_delegation_token(kafka_spark, broker, topic_name) -> None:
    token_id, hmac = _create_token(broker)
    options = {
        "kafka.bootstrap.servers": _sasl_address(broker),
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                  f'username="{token_id}" password="{hmac}" tokenauth="true";',
    }
    src, dst = topic_name("token-in"), topic_name("token-out")
    create_topic(broker.bootstrap, src, 2)
    create_topic(broker.bootstrap, dst, 2)
    values = [f"v{i}".encode() for i in range(30)]
    produce(broker.bootstrap, src, values)

    read = (kafka_spark.read.format("kafka").options(**options).option("subscribe", src)
            .option("startingOffsets", "earliest").load())
    assert sorted(bytes(r.value) for r in read.select("value").collect()) == sorted(values)
    read.select("value").repartition(2).write.format("kafka").options(**options).option("topic", dst).save()
    assert sorted(m.value() for m in consume_all(broker.bootstrap, dst, 2)) == sorted(values)


def test_a_wrong_hmac_is_refused(kafka_spark, broker, topic_name) -> None:
    token_id, _ = _create_token(broker)
    topic = topic_name("token-refused")
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [b"x"])
    read = (kafka_spark.read.format("kafka").option("kafka.bootstrap.servers", _sasl_address(broker))
            .option("kafka.security.protocol", "SASL_PLAINTEXT").option("kafka.sasl.mechanism", "SCRAM-SHA-256")
            .option("kafka.sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                              f'username="{token_id}" password="wrong" tokenauth="true";')
            .option("kafka.request.timeout.ms", "10000").option("kafka.default.api.timeout.ms", "20000")
            .option("subscribe", topic).option("startingOffsets", "earliest").load())
    with pytest.raises(Exception, match="(?i)authentication"):
        read.collect()
