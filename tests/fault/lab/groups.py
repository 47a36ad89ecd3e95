"""Consumers that join a group by ``subscribe`` under faults, and the checker of what they polled
(Jepsen's Kafka test: *poll-skip* and *nonmonotonic-poll*).

:class:`GroupConsumer` is a confluent-kafka consumer in group ``group`` (``group.protocol`` classic
or consumer, i.e. KIP-848) subscribed to the topic. It records, in its own process's order:

* ``assign`` / ``revoke`` (``info``, value ``{"partitions": [...]}``) from the rebalance callbacks
  (eager protocols revoke everything, cooperative and KIP-848 ones only what moves; a lost
  assignment is recorded as a revoke);
* ``poll`` (``ok``, value ``{"isolation", "records": [[partition, offset, value]...]}``): every
  non-empty ``consume()``, in the order it returned them;
* ``commit`` (``invoke``, then ``ok`` / ``fail`` / ``info``; value ``{"offsets": {partition: next}}``):
  a synchronous commit of the next offset of every partition the poll returned, after each poll.

With ``churn_s`` the consumer leaves the group (``close()``) now and then and joins again with a new
consumer, so that partitions move between members while the nemesis works.

:func:`check_polls` compares the polls with the partitions' *version order*: the offsets the final
read (read_committed) returned, so that transaction markers and aborted records (offsets that exist
but are never delivered) are not gaps. Per consumer and partition, within one assignment:

* **poll-skip**: the next offset polled is not the next one in the version order (records that
  exist were skipped);
* **nonmonotonic-poll**: the next offset polled is at or before the previous one.

And across rebalances, through the committed offsets (the group's hand-over): the first offset a
consumer polls from a newly assigned partition must be the first record at or after the group's
committed offset. Above it is a **poll-skip across a rebalance** (the group never processes the
records between: committed-offset loss or a commit that got ahead); below the last *acknowledged*
commit is a **committed-offset regression** (an acknowledged commit was lost). A commit whose
outcome is unknown may or may not count: both are accepted.
"""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from tests.fault.lab.history import History, _limit
from tests.fault.lab.workload import CLIENT_LOG, _Client, _err

#: Commit errors that certainly mean nothing was applied: only the client's own refusals, raised
#: before any request was sent. A broker's error (ILLEGAL_GENERATION, STALE_MEMBER_EPOCH, ...) does not
#: prove it: librdkafka resends a commit whose connection broke, and what it reports is the answer to
#: the last attempt -- an earlier attempt may have reached the coordinator and been written before the
#: answer was lost (CI saw a commit cut off by a blackhole apply, then fail with STALE_MEMBER_EPOCH).
_NOT_APPLIED = {KafkaError._NO_OFFSET}

PROTOCOLS = ("classic", "consumer")


class GroupConsumer(_Client):
    """One member of ``group`` (see the module docstring)."""

    def __init__(self, *args, group: str, protocol: str = "classic", churn_s: float = 0.0,
                 isolation: str = "read_committed", **kw) -> None:
        super().__init__(*args, **kw)
        if protocol not in PROTOCOLS:
            raise ValueError(f"group.protocol must be one of {PROTOCOLS}")
        self.group = group
        self.protocol = protocol
        self.churn_s = churn_s
        self.isolation = isolation
        self.generations = 0

    def _consumer(self) -> Consumer:
        config = {"bootstrap.servers": self.bootstrap, "group.id": self.group, "group.protocol": self.protocol,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "isolation.level": self.isolation,
                  "topic.metadata.refresh.interval.ms": 1000, "client.id": f"jepsen-{self.process}",
                  "logger": CLIENT_LOG}
        if self.protocol == "classic":  # KIP-848 members take these from the broker
            config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        return Consumer(config)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.generations += 1
        self.history.add(self.process, "info", "assign", {"partitions": sorted(tp.partition for tp in partitions)})

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition], lost: bool = False) -> None:
        self.history.add(self.process, "info", "revoke", {"partitions": sorted(tp.partition for tp in partitions),
                                                          "lost": lost})

    def work(self) -> None:
        while not self.stop_event.is_set():
            consumer = self._consumer()
            consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                               on_lost=lambda c, ps: self._on_revoke(c, ps, lost=True))
            until = self.rng.uniform(0.5, 1.5) * self.churn_s if self.churn_s else None
            try:
                self._consume(consumer, until)
            finally:
                self.history.add(self.process, "info", "leave", None)
                try:
                    consumer.close()
                except (KafkaException, RuntimeError) as e:
                    self.history.add(self.process, "info", "close", None, _err(e))
            # what close() revoked was recorded by the callback; a new member starts from the commits

    def _consume(self, consumer: Consumer, until: float | None) -> None:
        begin = time.monotonic()
        while not self.stop_event.is_set() and (until is None or time.monotonic() - begin < until):
            records, nxt = [], {}
            for m in consumer.consume(200, 0.2):
                if m.error() is None:
                    records.append([m.partition(), m.offset(), m.value().decode()])
                    nxt[m.partition()] = m.offset() + 1
            if not records:
                continue
            self.history.add(self.process, "ok", "poll", {"isolation": self.isolation, "records": records})
            offsets = {str(p): o for p, o in nxt.items()}
            self.history.add(self.process, "invoke", "commit", {"offsets": offsets})
            try:
                consumer.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in nxt.items()],
                                asynchronous=False)
            except KafkaException as e:
                kerr = e.args[0]
                code = kerr.code() if isinstance(kerr, KafkaError) else None
                self.history.add(self.process, "fail" if code in _NOT_APPLIED else "info", "commit",
                                 {"offsets": offsets}, _err(e))
            else:
                self.history.add(self.process, "ok", "commit", {"offsets": offsets})


@dataclass
class PollVerdict:
    violations: list[str] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)


def check_polls(history: History, versions: dict[int, list[int]], processes: set[str] | None = None) -> PollVerdict:
    """Poll-skip, nonmonotonic-poll and committed-offset regression over the ``poll``, ``assign``,
    ``revoke`` and ``commit`` ops of the group consumers (``processes``, default: every process that
    has an ``assign``); ``versions``: each partition's offsets in the final read_committed read."""
    index = {p: {o: i for i, o in enumerate(offsets)} for p, offsets in versions.items()}
    ordered = {p: sorted(offsets) for p, offsets in versions.items()}

    def first_at(p: int, offset: int) -> int:
        """The version index of the first record at or after ``offset``."""
        return bisect.bisect_left(ordered.get(p, []), offset)

    if processes is None:
        processes = {op.process for op in history.ops if op.f == "assign"}
    # The group's commits per partition, in history order: (time acknowledged, offset) and (time
    # invoked, offset) of those that may have been applied.
    acked: dict[int, list[tuple[int, int]]] = defaultdict(list)  # (op index of the ok, offset)
    maybe: dict[int, list[tuple[int, int]]] = defaultdict(list)  # (op index of the invoke, offset)
    invoked: dict[str, int] = {}
    for op in history.ops:
        if op.f != "commit" or op.process not in processes:
            continue
        if op.type == "invoke":
            invoked[op.process] = op.index
        elif op.type in ("ok", "info"):
            for p, o in op.value["offsets"].items():
                maybe[int(p)].append((invoked.get(op.process, op.index), o))
                if op.type == "ok":
                    acked[int(p)].append((op.index, o))
    skips: list[str] = []
    backwards: list[str] = []
    rebalance_skips: list[str] = []
    regressions: list[str] = []
    missing: list[str] = []
    unassigned: list[str] = []
    polled = handovers = 0
    furthest: dict[int, int] = {}  # partition -> the furthest version index any member polled
    for process in sorted(processes):
        assigned: set[int] = set()
        last: dict[int, int] = {}  # partition -> version index of the last record polled, this assignment
        since: dict[int, int] = {}  # partition -> op index of its assignment
        for op in (o for o in history.ops if o.process == process):
            if op.f == "assign":
                for p in op.value["partitions"]:
                    assigned.add(p)
                    last.pop(p, None)
                    since[p] = op.index
            elif op.f in ("revoke", "leave"):
                for p in (op.value or {}).get("partitions", list(assigned)):
                    assigned.discard(p)
                    last.pop(p, None)
            elif op.f == "poll" and op.type == "ok":
                for p, offset, value in op.value["records"]:
                    polled += 1
                    where = f"{process} {p}@{offset} ({value})"
                    if p not in assigned:
                        unassigned.append(where)
                        continue
                    i = index.get(p, {}).get(offset)
                    if i is None:
                        missing.append(where)
                        continue
                    if p in last:
                        if i == last[p] + 1:
                            pass
                        elif i > last[p] + 1:
                            gap = ordered[p][last[p] + 1:i]
                            skips.append(f"{where} after {ordered[p][last[p]]}: skipped {_limit(gap, 3)}")
                        else:
                            backwards.append(f"{where} after {ordered[p][last[p]]}")
                    else:
                        handovers += 1
                        start = since.get(p, op.index)
                        lo = max((o for t, o in acked[p] if t < start), default=0)
                        his = [o for t, o in maybe[p] if t < op.index]
                        hi = max([lo, *his])
                        if i > first_at(p, hi):
                            gap = ordered[p][first_at(p, hi):i]
                            rebalance_skips.append(f"{where}: first poll after assignment, but the group's commit "
                                                   f"was {hi}: skipped {_limit(gap, 3)}")
                        elif i < first_at(p, lo):
                            regressions.append(f"{where}: first poll after assignment, below the acknowledged "
                                               f"commit {lo}")
                    last[p] = i
                    furthest[p] = max(furthest.get(p, -1), i)
    violations = []
    for name, items in (("poll-skip", skips), ("nonmonotonic-poll", backwards),
                        ("poll-skip across a rebalance", rebalance_skips),
                        ("committed-offset regression", regressions),
                        ("polled record missing from the final read_committed read", missing),
                        ("poll of a partition not assigned to the consumer", unassigned)):
        if items:
            violations.append(f"{name}: {len(items)}: {_limit(items, 3)}")
    commits = sum(1 for op in history.ops if op.f == "commit" and op.type == "ok" and op.process in processes)
    assignments = sum(1 for op in history.ops if op.f == "assign" and op.process in processes)
    stats = {"polled": polled, "assignments": assignments, "handovers": handovers, "commits_acknowledged": commits,
             "poll_skips": len(skips) + len(rebalance_skips), "nonmonotonic_polls": len(backwards),
             "commit_regressions": len(regressions),
             "never_polled": sum(len(offsets) - 1 - furthest.get(p, -1) for p, offsets in ordered.items())}
    return PollVerdict(violations, stats)


__all__ = ["PROTOCOLS", "GroupConsumer", "PollVerdict", "check_polls"]
