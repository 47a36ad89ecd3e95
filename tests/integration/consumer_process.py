"""A confluent-kafka consumer in a subprocess (so that it can die by SIGKILL), for the group tests.

The child subscribes, commits synchronously after each record, and reports every event as a JSON line
stamped with its own clock (``ts``): its assignment after each assign/revoke callback, every record,
errors, and its close. :func:`ownership_overlaps` checks from those stamps that no partition was ever
owned by two consumers at once (the stamps come from one machine's clock, and a consumer reports a
revocation before it tells the broker, so real overlaps show and pipe delays do not).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable

from tidelog.testing import BrokerProcess

CHILD = r"""
import json, sys, threading, time
from confluent_kafka import Consumer, KafkaException

conf = json.loads(sys.argv[1])
topics = json.loads(sys.argv[2])
owned = set()
lock = threading.Lock()

def say(**event):
    with lock:
        print(json.dumps(dict(event, ts=time.time())), flush=True)

def on_assign(consumer, partitions):
    owned.update((p.topic, p.partition) for p in partitions)
    say(event="assigned", partitions=sorted(owned))

def on_revoke(consumer, partitions):
    owned.difference_update((p.topic, p.partition) for p in partitions)
    say(event="assigned", partitions=sorted(owned))

consumer = Consumer(conf)
consumer.subscribe(topics, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
closing = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), closing.set()), daemon=True).start()
while not closing.is_set():
    msg = consumer.poll(0.2)
    if msg is None:
        continue
    if msg.error():
        say(event="error", error=str(msg.error()))
        continue
    say(event="msg", topic=msg.topic(), partition=msg.partition(), offset=msg.offset(), value=msg.value().decode())
    try:
        consumer.commit(message=msg, asynchronous=False)
    except KafkaException as e:
        say(event="commit_error", error=str(e))
consumer.close()
say(event="assigned", partitions=[])
say(event="closed")
"""


class ConsumerProcess:
    """One consumer subprocess: ``assignment`` is its latest set, ``messages`` what it consumed, ``events``
    everything it said. ``protocol`` is ``group.protocol`` (``consumer`` or ``classic``)."""

    def __init__(self, b: BrokerProcess, group: str, topics: list[str], protocol: str = "consumer",
                 **conf: object) -> None:
        config = {"bootstrap.servers": b.bootstrap, "group.id": group, "group.protocol": protocol,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, **conf}
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.protocol = protocol
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(config), json.dumps(topics)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=env)
        self.assignment: set[tuple[str, int]] = set()
        self.messages: list[tuple[str, int, int, str]] = []
        self.events: list[dict] = []
        self.killed_at: float | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            self.events.append(event)
            if event["event"] == "assigned":
                self.assignment = {tuple(p) for p in event["partitions"]}
            elif event["event"] == "msg":
                self.messages.append((event["topic"], event["partition"], event["offset"], event["value"]))

    def close(self) -> None:
        """A clean leave: its commits are done, ``close()`` leaves the group (LeaveGroup or epoch -1)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("close\n")
        self.proc.stdin.flush()
        assert self.proc.wait(30) == 0
        self._reader.join(10)

    def kill(self) -> None:
        self.killed_at = time.time()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self._reader.join(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def errors(self) -> list[str]:
        return [e["error"] for e in self.events if e["event"] in ("error", "commit_error")]


def consumed(processes: Iterable[ConsumerProcess]) -> Counter[str]:
    """How many times each record value was consumed, over all the processes."""
    return Counter(v for p in processes for (_, _, _, v) in p.messages)


def ownership_overlaps(processes: Iterable[ConsumerProcess]) -> list[str]:
    """Partitions that two processes owned at the same time, from the child-stamped assignment events
    (a killed process owns its last assignment until it was killed; a live one until now)."""
    intervals: dict[tuple[str, int], list[tuple[float, float, int]]] = {}
    for n, p in enumerate(processes):
        held: dict[tuple[str, int], float] = {}
        for e in (e for e in p.events if e["event"] == "assigned"):
            now = {tuple(tp) for tp in e["partitions"]}
            for tp in now - held.keys():
                held[tp] = e["ts"]
            for tp in set(held) - now:
                intervals.setdefault(tp, []).append((held.pop(tp), e["ts"], n))
        end = p.killed_at if p.killed_at is not None else time.time()
        for tp, start in held.items():
            intervals.setdefault(tp, []).append((start, end, n))
    overlaps = []
    for tp, spans in sorted(intervals.items()):
        spans.sort()
        last_end, last_owner = float("-inf"), -1
        for start, end, owner in spans:
            if start < last_end and owner != last_owner:
                overlaps.append(f"{tp[0]}-{tp[1]}: owned by consumer {last_owner} until {last_end:.3f} and by "
                                f"consumer {owner} from {start:.3f}")
            if end > last_end:
                last_end, last_owner = end, owner
    return overlaps


__all__ = ["ConsumerProcess", "consumed", "ownership_overlaps"]
