"""Apache Kafka's ``kafka-features.sh`` (kafka-tools 4.4's FeatureCommand) against ``tidelog serve``:
describe, then share.version downgraded to 0 and upgraded again, a dry run and the refusals, as against
Apache Kafka 4.4 (TIDELOG_ORACLE_SUBJECT=kafka: the same expectations hold). About 8 JVM runs: 15-30 s."""

from __future__ import annotations

import re

import pytest

from tests.oracle import jvm

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("kafka-tools")]


@pytest.fixture(scope="module")
def features(java_classpath, subject_broker):
    def run(*args: object, check: bool = True):
        done = jvm.run_tool(java_classpath, "kafka-features", "--bootstrap-server", subject_broker.bootstrap, *args)
        if check:
            assert done.returncode == 0, (f"kafka-features {' '.join(map(str, args))} exited {done.returncode}:\n"
                                          f"{done.stdout}\n{done.stderr[-3000:]}")
        return done

    return run


def described(features) -> dict[str, dict[str, str]]:
    out = {}
    for line in features("describe").stdout.splitlines():
        fields = dict(re.findall(r"(\w+): (\S+)", line))
        out[fields.pop("Feature")] = fields
    return out


def test_kafka_features_describes_and_changes_share_version(features) -> None:
    before = described(features)
    assert before["metadata.version"]["FinalizedVersionLevel"] == "4.4-IV2", before
    assert before["group.version"]["FinalizedVersionLevel"] == "1"
    assert before["transaction.version"]["FinalizedVersionLevel"] == "2"
    share = before["share.version"]
    # both finalize share.version 2 on a new cluster (Kafka 4.4's format; Tidelog's broker config default)
    assert (share["SupportedMinVersion"], share["SupportedMaxVersion"], share["FinalizedVersionLevel"]) == (
        "0", "2", "2"), share
    top, epoch = int(share["SupportedMaxVersion"]), int(share["Epoch"])

    done = features("downgrade", "--feature", "share.version=0")
    assert done.stdout.strip() == "share.version was downgraded to 0."
    after = described(features)["share.version"]
    assert after["FinalizedVersionLevel"] == "0" and int(after["Epoch"]) > epoch

    dry = features("upgrade", "--feature", "share.version=1", "--dry-run")
    assert dry.stdout.strip() == "share.version can be upgraded to 1."
    assert described(features)["share.version"]["FinalizedVersionLevel"] == "0"
    done = features("upgrade", "--feature", "share.version=1")
    assert done.stdout.strip() == "share.version was upgraded to 1."
    assert described(features)["share.version"]["FinalizedVersionLevel"] == "1"

    too_high = features("upgrade", "--feature", f"share.version={top + 1}", check=False)
    assert too_high.returncode == 1
    assert too_high.stdout.strip() == (
        "Could not upgrade share.version to 3. The update failed for all features since the following feature had an "
        "error: Invalid update version 3 for feature share.version. Local controller 0 only supports versions 0-2")
    # the Admin client itself refuses an upgrade to level 0 (it never reaches the broker)
    wrong_way = features("upgrade", "--feature", "share.version=0", check=False)
    assert wrong_way.returncode == 1
    assert "should be set to SAFE_DOWNGRADE or UNSAFE_DOWNGRADE" in wrong_way.stderr, wrong_way.stderr
