"""Produce a synthetic click stream into Tidelog (or any Kafka-compatible broker).

Each record is one page view, keyed by user, with a JSON value::

    {"user_id": "user-0042", "page": "/products/7", "referrer": "search", "event_time": "2025-01-01T12:00:03.250Z"}

``event_time`` is when the click happened. By default it is the wall clock at sending time, with up to
``--max-lateness-s`` seconds of random delay (clicks arrive a little out of order, as from real
clients). ``--span-minutes M`` instead spreads the events evenly over the last M minutes, so that a
windowed job has complete minutes to report at once. Page popularity follows a Zipf-like curve.

    python examples/clickstream/generator.py --events 100000 --span-minutes 10
    python examples/clickstream/generator.py --rate 500            # runs until Ctrl-C

It writes to the topic ``clickstream-clicks`` (``--topic``), which ``job.py`` reads.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

REFERRERS = ["direct", "search", "social", "email", "ads"]
#: The example's own topic, apart from those of the README's quick start; job.py reads it.
TOPIC = "clickstream-clicks"


def pages(count: int) -> list[str]:
    return ["/"] + [f"/products/{i}" for i in range(1, count)]


def clicks(events: int | None, *, users: int = 1000, page_count: int = 20, span_minutes: float = 0.0,
           max_lateness_s: float = 5.0, seed: int | None = None) -> Iterator[dict]:
    """Click events; ``events=None`` never ends (real-time timestamps only)."""
    rng = random.Random(seed)
    names = pages(page_count)
    weights = [1 / (rank + 1) for rank in range(len(names))]
    start_ms = time.time() * 1000 - span_minutes * 60_000
    i = 0
    while events is None or i < events:
        if span_minutes and events:
            at_ms = start_ms + span_minutes * 60_000 * i / events
        else:
            at_ms = time.time() * 1000 - rng.uniform(0, max_lateness_s) * 1000
        yield {
            "user_id": f"user-{rng.randrange(users):04d}",
            "page": rng.choices(names, weights)[0],
            "referrer": rng.choice(REFERRERS),
            "event_time": datetime.fromtimestamp(at_ms / 1000, UTC).isoformat(timespec="milliseconds")
                                  .replace("+00:00", "Z"),
        }
        i += 1


def ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic in admin.list_topics(timeout=10).topics:
        return
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        try:
            future.result(30)
        except Exception as e:  # created meanwhile by someone else
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise


def produce(bootstrap: str, topic: str, events: Iterator[dict], *, rate: float = 0.0) -> int:
    """Send every event (at most ``rate`` per second when given); returns how many were acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "partitioner": "murmur2_random"})
    acked = 0
    failed: list[str] = []

    def on_delivery(error, _message) -> None:
        nonlocal acked
        if error is None:
            acked += 1
        else:
            failed.append(error.str())

    started = time.monotonic()
    try:
        for n, event in enumerate(events, 1):
            while True:
                try:
                    producer.produce(topic, json.dumps(event).encode(), key=event["user_id"].encode(),
                                     on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
            if rate:
                ahead = n / rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)
    except KeyboardInterrupt:
        pass
    producer.flush(60)
    if failed:
        raise RuntimeError(f"{len(failed)} click(s) were not written: {failed[0]}")
    return acked


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-server", default="localhost:9092")
    parser.add_argument("--topic", default=TOPIC)
    parser.add_argument("--partitions", type=int, default=3, help="partitions if the topic is created")
    parser.add_argument("--events", type=int, default=None, help="how many clicks (default: until Ctrl-C)")
    parser.add_argument("--rate", type=float, default=0.0, help="clicks per second (default: as fast as possible)")
    parser.add_argument("--span-minutes", type=float, default=0.0,
                        help="spread event times over the last N minutes (needs --events)")
    parser.add_argument("--max-lateness-s", type=float, default=5.0)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.events is None and not args.rate:
        args.rate = 200.0
    ensure_topic(args.bootstrap_server, args.topic, args.partitions)
    events = clicks(args.events, users=args.users, page_count=args.pages, span_minutes=args.span_minutes,
                    max_lateness_s=args.max_lateness_s, seed=args.seed)
    sent = produce(args.bootstrap_server, args.topic, events, rate=args.rate)
    print(f"produced {sent} clicks to topic '{args.topic}' at {args.bootstrap_server}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
