"""A consume-transform-produce application with exactly-once semantics (confluent-kafka), for the
fault-injection test: read ``in`` (read_committed, offsets of group ``GROUP``), write each record with
``!`` appended to the same partition of ``out``, and commit the input offsets in the same transaction.
Every ``ABORT_EVERY``-th transaction is aborted on purpose (its output must never be seen by a
read_committed reader); after an abort the input is read again from the committed offsets.

    python tests/integration/eos/app.py BOOTSTRAP PARTITIONS

Runs until killed, or exits 0 once it has been idle for ``IDLE_EXIT_S`` after reaching the end of
every input partition, 3 on a fatal error (fenced: another instance took over). Prints one line per
committed transaction.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

GROUP = "eos-pipeline"
TXN_ID = "eos-pipeline-app"
ABORT_EVERY = 7
IDLE_EXIT_S = 3.0


def positions(consumer: Consumer, partitions: int) -> list[TopicPartition]:
    committed = consumer.committed([TopicPartition("in", p) for p in range(partitions)], timeout=30)
    return [TopicPartition("in", tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING) for tp in committed]


def main(bootstrap: str, partitions: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": True})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID,
                         "transaction.timeout.ms": 15_000, "linger.ms": 5})
    producer.init_transactions(60)
    consumer.assign(positions(consumer, partitions))
    transactions = 0
    idle_since = None
    at_end: set[int] = set()
    while True:
        messages = consumer.consume(12, 0.5)
        data = [m for m in messages if not m.error()]
        for m in messages:
            if m.error() and m.error().code() == -191:  # end of a partition
                at_end.add(m.partition())
        if not data:
            if len(at_end) == partitions:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since > IDLE_EXIT_S:
                    return 0
            continue
        idle_since = None
        at_end -= {m.partition() for m in data}
        transactions += 1
        try:
            producer.begin_transaction()
            for m in data:
                producer.produce("out", m.value() + b"!", key=m.key(), partition=m.partition())
            ends: dict[int, int] = {}
            for m in data:
                ends[m.partition()] = max(ends.get(m.partition(), 0), m.offset() + 1)
            producer.send_offsets_to_transaction([TopicPartition("in", p, o) for p, o in ends.items()],
                                                 consumer.consumer_group_metadata(), 30)
            if transactions % ABORT_EVERY == 0:
                producer.flush(30)  # the records reach the log first (abort_transaction would drop queued ones)
                producer.abort_transaction(30)
                consumer.assign(positions(consumer, partitions))
                at_end.clear()
                print("aborted on purpose", flush=True)
                continue
            producer.commit_transaction(30)
            print(f"committed {len(data)}", flush=True)
        except KafkaException as e:
            error = e.args[0]
            if error.fatal():
                print(f"fatal: {error}", flush=True)
                return 3
            print(f"aborting after: {error}", flush=True)
            try:
                producer.abort_transaction(30)
            except KafkaException as abort_error:
                if abort_error.args[0].fatal():
                    return 3
            consumer.assign(positions(consumer, partitions))
            at_end.clear()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
