"""The order service against a real (Tidelog) broker, with the tidelog pytest plugin's fixtures only."""

import json

from orders.consumer import TotalsWorker
from orders.producer import OrderPublisher


def test_orders_are_published_as_json_keyed_by_customer(tidelog_broker, kafka_topic, kafka_consume):
    topic = kafka_topic(partitions=3)
    publisher = OrderPublisher(tidelog_broker.client_config(), topic)
    publisher.publish("ada", 1250)
    publisher.publish("ada", 99)
    publisher.flush()
    records = kafka_consume(topic, 2)
    assert [json.loads(r.value) for r in records] == [{"customer": "ada", "amount_cents": 1250},
                                                      {"customer": "ada", "amount_cents": 99}]
    assert {r.key for r in records} == {b"ada"} and len({r.partition for r in records}) == 1


def test_a_group_of_two_shares_the_partitions_and_totals_every_order(kafka_bootstrap, kafka_topic, kafka_produce):
    topic = kafka_topic(partitions=4)
    config = {"bootstrap.servers": kafka_bootstrap}
    workers = [TotalsWorker(config, topic), TotalsWorker(config, topic)]
    try:
        # both members joined and the four partitions are split between them
        def balanced():
            for w in workers:
                w.poll_once(0.1)
            parts = [w.assignment() for w in workers]
            return all(parts) and sorted(parts[0] + parts[1]) == [0, 1, 2, 3]

        workers[0].run_until(balanced)
        orders = [(c, json.dumps({"customer": c, "amount_cents": n}))
                  for n, c in enumerate(["ada", "bob", "cy", "dee"] * 5)]
        kafka_produce(topic, orders)

        def all_counted():
            for w in workers:
                w.poll_once(0.05)
            return sum(w.seen for w in workers) == len(orders)

        workers[0].run_until(all_counted)
        totals = workers[0].totals + workers[1].totals
        assert totals == {"ada": 0 + 4 + 8 + 12 + 16, "bob": 1 + 5 + 9 + 13 + 17,
                          "cy": 2 + 6 + 10 + 14 + 18, "dee": 3 + 7 + 11 + 15 + 19}
    finally:
        for w in workers:
            w.close()


def test_a_new_member_resumes_from_the_committed_offsets(tidelog_broker_function, kafka_topic, kafka_produce):
    # a broker of its own: this test's group and offsets start from nothing
    broker = tidelog_broker_function
    topic = kafka_topic(partitions=1, broker=broker)
    kafka_produce(topic, [("ada", json.dumps({"customer": "ada", "amount_cents": 5}))] * 3, broker=broker)
    first = TotalsWorker(broker.client_config(), topic)
    try:
        first.run_until(lambda: first.seen == 3)
    finally:
        first.close()
    kafka_produce(topic, [("ada", json.dumps({"customer": "ada", "amount_cents": 7}))], broker=broker)
    second = TotalsWorker(broker.client_config(), topic)
    try:
        second.run_until(lambda: second.seen == 1)
        assert second.totals == {"ada": 7}
    finally:
        second.close()
