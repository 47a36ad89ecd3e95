"""``tidelog features`` (describe, upgrade, downgrade, disable) run as a user runs it against a real
``tidelog serve`` started with share groups off: upgrading ``share.version`` at runtime lets a real
confluent-kafka ShareConsumer consume, downgrading turns share groups off again (ApiVersions no longer
advertises them), as on a Kafka cluster with kafka-features.sh."""

from __future__ import annotations

import re
import subprocess
import sys

from confluent_kafka import ShareConsumer

from tests.integration import kafka_io
from tests.integration.kafka_io import wait_for
from tidelog.protocol.messages import ApiVersionsRequest, IncrementalAlterConfigsRequest
from tidelog.testing.client import WireClient

BROKER_OVERRIDES = {"share.version": "0"}
SHARE_GROUP_HEARTBEAT = 76


def features(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", "features", *args, "--bootstrap-server", bootstrap],
                          capture_output=True, text=True, timeout=120)


def described(bootstrap: str) -> dict[str, dict[str, str]]:
    done = features(bootstrap, "describe")
    assert done.returncode == 0, done
    out = {}
    for line in done.stdout.splitlines():
        fields = dict(re.findall(r"(\w+): (\S+)", line))
        out[fields.pop("Feature")] = fields
    return out


def advertised(bootstrap: str) -> set[int]:
    with WireClient.connect(bootstrap) as wire:
        r = wire.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    return {k.api_key for k in r.api_keys}


def test_share_version_upgraded_and_downgraded_with_the_cli(broker, admin) -> None:
    b = broker.bootstrap
    before = described(b)
    assert before["share.version"] == {"SupportedMinVersion": "0", "SupportedMaxVersion": "2",
                                       "FinalizedVersionLevel": "0", "Epoch": "1"}
    assert before["metadata.version"]["FinalizedVersionLevel"] == "4.4-IV2"
    assert before["group.version"]["FinalizedVersionLevel"] == "1"
    assert before["transaction.version"]["FinalizedVersionLevel"] == "2"
    assert SHARE_GROUP_HEARTBEAT not in advertised(b)

    refused = features(b, "upgrade", "--feature", "share.version=3")
    assert refused.returncode == 1
    assert refused.stdout.strip() == ("Could not upgrade share.version to 3. The update failed for all features "
                                      "since the following feature had an error: Invalid update version 3 for "
                                      "feature share.version. Local controller 0 only supports versions 0-2")
    dry = features(b, "upgrade", "--feature", "share.version=1", "--dry-run")
    assert (dry.returncode, dry.stdout.strip()) == (0, "share.version can be upgraded to 1.")
    assert described(b)["share.version"]["FinalizedVersionLevel"] == "0"

    done = features(b, "upgrade", "--feature", "share.version=1")
    assert (done.returncode, done.stdout.strip()) == (0, "share.version was upgraded to 1."), done
    assert described(b)["share.version"] == {"SupportedMinVersion": "0", "SupportedMaxVersion": "2",
                                             "FinalizedVersionLevel": "1", "Epoch": "2"}
    assert SHARE_GROUP_HEARTBEAT in advertised(b)

    # a real share consumer now gets records
    kafka_io.create_topic(admin, "feat-q", 1)
    kafka_io.produce(broker, "feat-q", [f"r{i}" for i in range(5)])
    with WireClient.connect(b) as wire:
        r = wire.request(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=32, resource_name="feat-g", configs=[IncrementalAlterConfigsRequest.AlterableConfig(
                name="share.auto.offset.reset", config_operation=0, value="earliest")])]), 1)
        assert r.responses[0].error_code == 0
    consumer = ShareConsumer({"bootstrap.servers": b, "group.id": "feat-g"})
    try:
        consumer.subscribe(["feat-q"])
        got: list[bytes] = []
        wait_for(lambda: len(got) >= 5, 120, "five records through a share consumer",
                 poll=lambda: got.extend(m.value() for m in consumer.poll(1.0) if m.error() is None))
        assert sorted(got) == [f"r{i}".encode() for i in range(5)]
    finally:
        consumer.close()

    wrong_way = features(b, "upgrade", "--feature", "share.version=0")
    assert wrong_way.returncode == 1 and "safe or unsafe downgrade" in wrong_way.stdout
    done = features(b, "downgrade", "--feature", "share.version=0")
    assert (done.returncode, done.stdout.strip()) == (0, "share.version was downgraded to 0."), done
    assert described(b)["share.version"]["FinalizedVersionLevel"] == "0"
    assert SHARE_GROUP_HEARTBEAT not in advertised(b)
    fixed = features(b, "disable", "--feature", "transaction.version")
    assert fixed.returncode == 1 and "Could not disable transaction.version." in fixed.stdout
    assert "1 out of 1 operation(s) failed." in fixed.stderr
