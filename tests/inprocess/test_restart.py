"""The replay check of the handlers' state: what the broker answered before a restart it answers the
same after it, read back from its logs (records, topic configs, committed offsets, a KIP-848 member,
an open transaction and a committed one)."""

from __future__ import annotations

from pathlib import Path

from tests.inprocess.harness import InProcessBroker, batch, run
from tests.inprocess.test_groups import commit, committed, find_coordinator
from tests.inprocess.test_topics_configs import DYNAMIC_TOPIC_CONFIG, TOPIC, describe
from tests.inprocess.test_transactions import READ_COMMITTED, Producer, stable_at
from tests.inprocess.wire import fetch, fetched, produce, produced, values
from tidelog.protocol.messages import ConsumerGroupHeartbeatRequest


def test_a_restarted_broker_answers_as_before(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        await b.create_topic("t", 1, {"retention.ms": "60000"})
        await b.create_topic("out", 1)
        assert produced(await b.request(produce("t", batch(b"a", b"b")), 9)) == (0, 0)
        await find_coordinator(b, "g")
        assert await commit(b, "g", -1, "", "t", {0: 2}) == {0: 0}
        hello = ConsumerGroupHeartbeatRequest(group_id="cg", member_id="m-1", member_epoch=0, rebalance_timeout_ms=30_000,
                                              subscribed_topic_names=["t"], topic_partitions=[])
        assert (await b.request(hello, 1)).member_epoch == 1
        done = Producer(b, "done")
        await done.init()
        assert await done.add_partitions("out", 0) == {0: 0}
        assert await done.send("out", b"committed") == (0, 0)
        assert (await done.end(commit=True)).error_code == 0
        await stable_at(b, "out", 2)
        hanging = Producer(b, "open")
        await hanging.init()
        assert await hanging.add_partitions("out", 0) == {0: 0}
        assert await hanging.send("out", b"pending") == (0, 2)

        await b.restart()

        r = fetched(await b.request(fetch("t", 0), 12))
        assert (r.high_watermark, values(r.records)) == (2, [b"a", b"b"])
        assert (await describe(b, TOPIC, "t", "retention.ms"))[1] == {"retention.ms": ("60000", DYNAMIC_TOPIC_CONFIG)}
        await find_coordinator(b, "g")
        assert await committed(b, "g", "t", 0) == (0, {0: (2, "m", 0)})
        again = ConsumerGroupHeartbeatRequest(group_id="cg", member_id="m-1", member_epoch=1)
        assert (await b.request(again, 1)).error_code == 0  # the member and its epoch were replayed
        out = fetched(await b.request(fetch("out", 0, isolation_level=READ_COMMITTED), 12))
        assert (out.last_stable_offset, values(out.records)) == (2, [b"committed"])  # the open one holds the LSO
        assert (await hanging.end(commit=True)).error_code == 0  # the coordinator knows it still
        await stable_at(b, "out", 4)

    run(tmp_path, scenario)
