"""confluent-kafka's ShareConsumer (KIP-932) against a real ``tidelog serve``: share consumers of one group
take a topic as a queue; each record goes to one of them; a released record comes back.

The broker runs with ``share.version=1``: membership (ShareGroupHeartbeat), the share coordinator as the
share-state persister, and ShareFetch/ShareAcknowledge together.
"""

from __future__ import annotations

import threading
import time

from confluent_kafka import Producer, ShareConsumer

from tidelog.protocol.messages import IncrementalAlterConfigsRequest
from tidelog.testing.client import WireClient

BROKER_OVERRIDES = {"share.version": "1"}
GROUP_CONFIG = 32


def earliest(bootstrap: str, group: str, **configs: str) -> None:
    """The group's share.auto.offset.reset = earliest (records produced before it joins are its too), and
    ``configs`` (group configs, ``_`` for ``.``)."""
    configs = {"share.auto.offset.reset": "earliest", **{k.replace("_", "."): v for k, v in configs.items()}}
    with WireClient.connect(bootstrap) as wire:
        r = wire.request(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=GROUP_CONFIG, resource_name=group, configs=[IncrementalAlterConfigsRequest.AlterableConfig(
                name=k, config_operation=0, value=v) for k, v in configs.items()])]), 1)
        assert r.responses[0].error_code == 0


def produce(bootstrap: str, topic: str, n: int, **conf: object) -> None:
    p = Producer({"bootstrap.servers": bootstrap, **conf})
    for i in range(n):
        p.produce(topic, value=b"%d" % i)
    assert p.flush(30) == 0


def share_consumer(bootstrap: str, group: str, **extra: str) -> ShareConsumer:
    return ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **extra})


def test_two_share_consumers_take_each_record_once(broker, admin) -> None:
    from confluent_kafka.admin import NewTopic

    topic, group, n = "share-queue", "share-q", 200
    admin.create_topics([NewTopic(topic, 1, 1)])["share-queue"].result(30)
    earliest(broker.bootstrap, group)
    produce(broker.bootstrap, topic, n)
    seen: dict[str, list[int]] = {"a": [], "b": []}
    stop = threading.Event()

    def consume(name: str) -> None:
        with share_consumer(broker.bootstrap, group) as c:
            c.subscribe([topic])
            while not stop.is_set():
                for m in c.poll(1.0):
                    if m.error() is None:
                        seen[name].append(m.offset())

    threads = [threading.Thread(target=consume, args=(name,)) for name in seen]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while len(seen["a"]) + len(seen["b"]) < n and time.monotonic() < deadline:
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join(60)
    everything = sorted(seen["a"] + seen["b"])
    assert everything == list(range(n)), "each record delivered exactly once"


def test_a_released_record_is_delivered_again(broker, admin) -> None:
    from confluent_kafka import AcknowledgeType
    from confluent_kafka.admin import NewTopic

    topic, group = "share-release", "share-r"
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    earliest(broker.bootstrap, group)
    produce(broker.bootstrap, topic, 1)
    with share_consumer(broker.bootstrap, group, **{"share.acknowledgement.mode": "explicit"}) as c:
        c.subscribe([topic])
        offsets: list[int] = []
        deadline = time.monotonic() + 60
        while len(offsets) < 2 and time.monotonic() < deadline:
            for m in c.poll(1.0):
                if m.error() is None:
                    offsets.append(m.offset())
                    c.acknowledge(m, AcknowledgeType.RELEASE if len(offsets) == 1 else AcknowledgeType.ACCEPT)
            c.commit_sync()
        assert offsets == [0, 0]


HOLDER = """
import sys
from confluent_kafka import ShareConsumer
c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                   "share.acknowledgement.mode": "explicit"})
c.subscribe([sys.argv[3]])
got = 0
while got == 0:
    got = sum(1 for m in c.poll(1.0) if m.error() is None)
print("acquired", got, flush=True)
sys.stdin.read()  # holds its records, unacknowledged, until killed
"""


def test_records_held_by_a_consumer_killed_9_go_to_another_before_their_lock_expires(broker, admin) -> None:
    """A share consumer killed with records acquired: its connection closes, the broker ends its share
    session and releases them (Kafka 4.1+), long before the acquisition lock (60 s here) would."""
    import subprocess
    import sys

    from confluent_kafka.admin import NewTopic

    topic, group, n = "share-kill", "share-k", 20
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    earliest(broker.bootstrap, group)
    with WireClient.connect(broker.bootstrap) as wire:
        r = wire.request(IncrementalAlterConfigsRequest(resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=GROUP_CONFIG, resource_name=group, configs=[IncrementalAlterConfigsRequest.AlterableConfig(
                name="share.record.lock.duration.ms", config_operation=0, value="60000")])]), 1)
        assert r.responses[0].error_code == 0
    produce(broker.bootstrap, topic, n)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, broker.bootstrap, group, topic],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline() if holder.stdout else ""
        assert line.startswith("acquired"), line
    finally:
        holder.kill()
        holder.wait(30)
    killed_at = time.monotonic()
    offsets: list[int] = []
    with share_consumer(broker.bootstrap, group) as c:
        c.subscribe([topic])
        while len(offsets) < n and time.monotonic() - killed_at < 45:
            offsets.extend(m.offset() for m in c.poll(1.0) if m.error() is None)
    assert sorted(offsets) == list(range(n)), "every record, the killed consumer's too"
    assert time.monotonic() - killed_at < 45, "redelivered before the 60 s lock expired"


def test_a_reset_of_the_start_offset_takes_effect_on_the_partition_s_leader(broker, admin) -> None:
    """AlterShareGroupOffsets on an empty share group: the next consumer starts at the new start offset,
    although the leader still held the share partition's old window (it is dropped and read again)."""
    from confluent_kafka.admin import NewTopic

    from tidelog.protocol.messages import AlterShareGroupOffsetsRequest as R

    topic, group, n = "share-reset", "share-z", 10
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    earliest(broker.bootstrap, group)
    produce(broker.bootstrap, topic, n)

    def consume_all(expected: int) -> list[int]:
        offsets: list[int] = []
        with share_consumer(broker.bootstrap, group) as c:
            c.subscribe([topic])
            deadline = time.monotonic() + 60
            while len(offsets) < expected and time.monotonic() < deadline:
                offsets.extend(m.offset() for m in c.poll(1.0) if m.error() is None)
        return sorted(offsets)

    assert consume_all(n) == list(range(n))  # implicitly acknowledged: the start offset moves to 10
    request = R(group_id=group, topics=[R.AlterShareGroupOffsetsRequestTopic(
        topic_name=topic, partitions=[R.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=2)])])
    with WireClient.connect(broker.bootstrap) as wire:
        deadline = time.monotonic() + 60
        while True:  # the group is empty once the closed consumer's leave is through
            r = wire.request(request, 0)
            codes = [p.error_code for t in r.responses for p in t.partitions]
            if r.error_code == 0 and codes == [0]:
                break
            assert time.monotonic() < deadline, (r.error_code, codes)
            time.sleep(0.5)
    assert consume_all(n - 2) == list(range(2, n))


def test_metrics_count_acquisitions_acknowledgements_by_type_redeliveries_and_in_flight_records(broker, admin) -> None:
    """GET /metrics after a ShareConsumer accepted, rejected and released records (the released ones come
    back and are accepted): Kafka's acknowledgement types, redeliveries, archives and the in-flight gauges."""
    from confluent_kafka import AcknowledgeType
    from confluent_kafka.admin import NewTopic

    from tests.integration.kafka_io import wait_for
    from tests.integration.test_metrics import scrape, value

    topic, group, n = "share-metrics", "share-m", 30
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    earliest(broker.bootstrap, group)
    produce(broker.bootstrap, topic, n)
    deliveries: list[int] = []
    with share_consumer(broker.bootstrap, group, **{"share.acknowledgement.mode": "explicit"}) as c:
        c.subscribe([topic])
        deadline = time.monotonic() + 90
        while len(deliveries) < n + 5 and time.monotonic() < deadline:
            for m in c.poll(1.0):
                if m.error() is not None:
                    continue
                first_time = m.offset() not in deliveries
                deliveries.append(m.offset())
                if first_time and 10 <= m.offset() < 15:
                    c.acknowledge(m, AcknowledgeType.REJECT)
                elif first_time and 15 <= m.offset() < 20:
                    c.acknowledge(m, AcknowledgeType.RELEASE)
                else:
                    c.acknowledge(m, AcknowledgeType.ACCEPT)
            c.commit_sync()
        assert sorted(deliveries) == sorted([*range(n), *range(15, 20)])
        labels = {"group": group, "topic": topic, "partition": "0"}

        def settled() -> bool:
            s = scrape(broker)
            return value(s, "tidelog_share_record_acknowledgements_total", **labels, ack_type="Accept") == 25

        wait_for(settled, 60, "the last acknowledgements in the metrics")
        s = scrape(broker)
        assert value(s, "tidelog_share_records_acquired_total", **labels) == n + 5
        assert value(s, "tidelog_share_records_redelivered_total", **labels) == 5
        assert value(s, "tidelog_share_record_acknowledgements_total", **labels, ack_type="Reject") == 5
        assert value(s, "tidelog_share_record_acknowledgements_total", **labels, ack_type="Release") == 5
        assert value(s, "tidelog_share_records_archived_total", **labels, reason="rejected") == 5
        assert value(s, "tidelog_share_acquisition_lock_timeouts_total", **labels) == 0
        # everything is done with: the window is empty, nothing is held, the start offset is past the end
        assert value(s, "tidelog_share_partition_in_flight_messages", **labels) == 0
        assert value(s, "tidelog_share_partition_acquired_records", **labels) == 0
        assert value(s, "tidelog_share_partition_start_offset", **labels) == n
        assert ("tidelog_share_partition_in_flight_messages", tuple(sorted(labels.items()))) in s


def _members_assigned(bootstrap: str, group: str) -> int:
    from tidelog.protocol.messages import ShareGroupDescribeRequest

    with WireClient.connect(bootstrap) as wire:
        (g,) = wire.request(ShareGroupDescribeRequest(group_ids=[group]), 1).groups
    return 0 if g.error_code else sum(1 for m in g.members
                                      if any(t.partitions for t in m.assignment.topic_partitions))


def test_four_share_consumers_of_one_partition_each_get_a_share(broker, admin) -> None:
    """Four share consumers on one partition, small polls (max.poll.records 20), a window of 100 records
    (``share.partition.max.record.locks``, Kafka's minimum) and producer batches of 100: a fetch takes a
    whole batch, the window is full, the other members' fetches wait. The holder's acknowledgement, riding
    on its next ShareFetch, must not refill the window for itself before the waiting fetches are served:
    every consumer receives records, none more than 80% of them."""
    from confluent_kafka.admin import NewTopic

    from tests.integration.kafka_io import wait_for

    topic, group, n, count = "share-fair", "share-f", 2000, 4
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    earliest(broker.bootstrap, group, share_partition_max_record_locks="100")
    seen: list[list[int]] = [[] for _ in range(count)]
    stop = threading.Event()

    def consume(i: int) -> None:
        with share_consumer(broker.bootstrap, group, **{"max.poll.records": "20"}) as c:
            c.subscribe([topic])
            while not stop.is_set():
                seen[i].extend(m.offset() for m in c.poll(0.5) if m.error() is None)

    threads = [threading.Thread(target=consume, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    try:
        # every member has the partition (and has polled the empty topic) before a record is written
        wait_for(lambda: _members_assigned(broker.bootstrap, group) == count, 120, "four members assigned")
        time.sleep(2.0)  # their first ShareFetch after the assignment (not a synchronisation of the outcome)
        # batches of 100 records (a batch-optimized fetch takes whole batches, as Kafka's does: one batch of
        # all the records could only go to one consumer)
        produce(broker.bootstrap, topic, n, **{"batch.num.messages": 100, "linger.ms": 50})
        wait_for(lambda: sum(len(s) for s in seen) >= n, 180, f"{n} records consumed")
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    everything = sorted(o for s in seen for o in s)
    assert everything == list(range(n)), "each record delivered once"
    split = sorted((len(s) for s in seen), reverse=True)
    assert all(split), f"every consumer received records: {split}"
    assert split[0] <= 0.8 * n, f"no consumer took more than 80%: {split}"


def test_a_share_consumer_over_tls_gets_the_records_of_the_segment(tmp_path) -> None:
    """ShareFetch answers its records as a slice of the segment file, as Fetch does; under TLS the network
    layer reads the slice (no sendfile through the encryption): a share consumer on the SSL listener gets
    every record, whole and once, in answers of many batches."""
    import trustme
    from confluent_kafka.admin import AdminClient, NewTopic

    from tidelog.testing import BrokerProcess

    ca = trustme.CA()
    ca_file, server_file = tmp_path / "ca.pem", tmp_path / "server.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    ca.issue_cert("localhost", "127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(server_file))
    overrides = {**BROKER_OVERRIDES, "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                 "ssl.keystore.location": str(server_file), "ssl.truststore.location": str(ca_file)}
    with BrokerProcess(tmp_path / "data", overrides=overrides) as broker:
        tls = {"bootstrap.servers": f"localhost:{broker.listener_port('SSL')}", "security.protocol": "SSL",
               "ssl.ca.location": str(ca_file)}
        topic, group, n = "share-tls", "share-tls", 3000
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        earliest(broker.bootstrap, group)
        produce(broker.bootstrap, topic, n, **{"linger.ms": 50})
        seen: list[bytes] = []
        with ShareConsumer({**tls, "group.id": group}) as c:
            c.subscribe([topic])
            deadline = time.monotonic() + 120
            while len(seen) < n and time.monotonic() < deadline:
                seen.extend(m.value() for m in c.poll(1.0) if m.error() is None)
        assert sorted(seen, key=int) == [b"%d" % i for i in range(n)]
