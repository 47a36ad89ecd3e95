"""The history of a fault run and the checker of its invariants (as in Jepsen).

Every operation a client or the nemesis does is recorded twice: when it is invoked
(``type="invoke"``) and when its outcome is known: ``ok`` (it happened), ``fail`` (it certainly did
not) or ``info`` (unknown: a timeout, a lost connection; it may or may not have happened). The
nemesis's steps are ``info`` operations of process ``nemesis``. ``time`` is seconds since the run
started. Operations (``f``):

* ``send``: an idempotent acks=all produce; value ``{"value", "partition"}``, on ``ok`` also
  ``offset``;
* ``txn``: a transaction of a transactional producer; value ``{"values": [[partition, value]...],
  "intent": "commit"|"abort"}``; its outcome value says ``"committed"``, ``"aborted"`` or (``info``)
  unknown;
* ``poll``: records a consumer saw during the run (``read_uncommitted`` or ``read_committed``), as
  ``[[partition, offset, value]...]`` (only ``ok``, no invoke);
* ``read``: the final read after healing, the same shape, per isolation level.

:func:`check` turns a finished history (plus the replica comparison) into a :class:`Verdict`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Op:
    index: int
    time: float
    process: str
    type: str  # invoke | ok | fail | info
    f: str
    value: Any = None
    error: str | None = None


class History:
    """Thread-safe, append-only list of :class:`Op`."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self._lock = threading.Lock()
        self.t0 = time.monotonic()

    def add(self, process: str, type: str, f: str, value: Any = None, error: str | None = None) -> Op:
        with self._lock:
            op = Op(len(self.ops), round(time.monotonic() - self.t0, 3), process, type, f, value, error)
            self.ops.append(op)
            return op

    def write(self, path: Path) -> Path:
        """One JSON object per line."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, path.open("w") as out:
            for op in self.ops:
                out.write(json.dumps(asdict(op), separators=(",", ":")) + "\n")
        return path

    @classmethod
    def read(cls, path: Path) -> History:
        history = cls()
        history.ops = [Op(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
        return history

    def summary(self) -> list[str]:
        """Counts per operation and outcome, and the nemesis's timeline."""
        counts: Counter[tuple[str, str]] = Counter()
        txn_outcomes: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        lines = []
        for op in self.ops:
            if op.process == "nemesis":
                lines.append(f"  {op.time:8.2f}s nemesis {op.f}: {op.value}")
                continue
            counts[(op.f, op.type)] += 1
            if op.f == "txn" and op.type != "invoke":
                txn_outcomes[(op.value or {}).get("outcome", "unknown")] += 1
            if op.error:
                errors[op.error.split(":")[0]] += 1
        head = ["history: " + ", ".join(f"{f} {t} {n}" for (f, t), n in sorted(counts.items()))]
        if txn_outcomes:
            head.append("transactions: " + ", ".join(f"{k} {n}" for k, n in sorted(txn_outcomes.items())))
        if errors:
            head.append("client errors: " + ", ".join(f"{k} x{n}" for k, n in errors.most_common(8)))
        return head + lines


@dataclass
class Verdict:
    valid: bool
    violations: list[str] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    #: the values read more than once, per final read
    duplicates: dict[str, list[str]] = field(default_factory=dict)

    def describe(self) -> list[str]:
        stats = ", ".join(f"{k} {v}" for k, v in self.stats.items())
        head = f"verdict: {'VALID' if self.valid else 'INVALID'} ({stats})"
        return [head, *(f"  violation: {v}" for v in self.violations)]


def _limit(items: list, n: int = 5) -> str:
    shown = ", ".join(map(str, items[:n]))
    return shown + (f" ... ({len(items)} in all)" if len(items) > n else "")


def check(history: History, replica_problems: list[str] | None = None,
          resent_after_epoch_bump: set[str] | None = None) -> Verdict:
    """The invariants, over a finished history (which must hold both final ``read`` ops):

    * no acknowledged (``ok``) send and no committed transaction's value is missing from the final
      read (read_uncommitted, resp. read_committed) -- no acknowledged record lost;
    * no value appears twice in a final read -- no duplicate (every value is written once);
    * no value appears that no client ever tried to write, and no failed (``fail``) send's value;
    * an offset of a partition never holds two different values, over every read during and after
      the run -- offsets never reused for different data;
    * no read_committed read (during or after the run) sees a value of an aborted transaction;
    * ``replica_problems`` (the replicas that were not byte-identical, sequences written twice) is empty.

    ``resent_after_epoch_bump``: duplicated values whose copies lie on disk under different epochs
    of one producer id (:mod:`tests.fault.lab.sequence_audit`): the client sent them again after an
    epoch bump, which no broker can recognise. They are counted (``resent_after_epoch_bump``), not
    violations.
    """
    sent_ok: dict[str, int] = {}
    sent_failed: set[str] = set()
    attempted: set[str] = set()
    committed: set[str] = set()
    aborted: set[str] = set()
    offsets: dict[tuple[int, int], str] = {}
    reused: list[str] = []
    committed_reads: list[tuple[str, list]] = []
    final: dict[str, list] = {}
    for op in history.ops:
        if op.f == "send":
            value = op.value["value"]
            if op.type == "invoke":
                attempted.add(value)
            elif op.type == "ok":
                sent_ok[value] = op.value["partition"]
            elif op.type == "fail":
                sent_failed.add(value)
        elif op.f == "txn":
            values = [v for _, v in op.value["values"]]
            if op.type == "invoke":
                attempted.update(values)
            elif op.value.get("outcome") == "committed":
                committed.update(values)
            elif op.value.get("outcome") == "aborted":
                aborted.update(values)
        elif op.f in ("poll", "read") and op.type != "invoke":
            records = op.value["records"]
            for p, offset, value in records:
                seen = offsets.setdefault((p, offset), value)
                if seen != value:
                    reused.append(f"{p}@{offset}: {seen!r} then {value!r}")
            if op.value["isolation"] == "read_committed":
                committed_reads.append((op.process, records))
            if op.f == "read" and op.type == "ok":
                final[op.value["isolation"]] = records
    violations: list[str] = []
    for op in history.ops:
        if op.f == "read" and op.type != "invoke" and op.type != "ok":
            violations.append(f"the final {op.value['isolation']} read failed: {op.error}")
    for isolation in ("read_uncommitted", "read_committed"):
        if isolation not in final:
            violations.append(f"no final {isolation} read")
    uncommitted = [v for _, _, v in final.get("read_uncommitted", [])]
    committed_final = [v for _, _, v in final.get("read_committed", [])]
    present, present_committed = set(uncommitted), set(committed_final)
    lost = sorted(v for v in sent_ok if v not in present)
    if lost:
        violations.append(f"{len(lost)} acknowledged record(s) lost: {_limit(lost)}")
    invisible = sorted(v for v in sent_ok if v in present and v not in present_committed)
    if invisible and "read_committed" in final:
        violations.append(f"{len(invisible)} acknowledged non-transactional record(s) missing from the final "
                          f"read_committed read: {_limit(invisible)}")
    for op in history.ops:
        if op.f == "read" and op.type == "ok" and op.value.get("ends"):
            beyond: dict[int, int] = {}
            for p, offset, _ in op.value["records"]:
                end = op.value["ends"].get(str(p), op.value["ends"].get(p))
                if end is not None and offset >= end:
                    beyond[p] = max(offset, beyond.get(p, -1))
            for p, last in sorted(beyond.items()):
                violations.append(f"the final {op.value['isolation']} read got partition {p}'s records up to offset "
                                  f"{last}, at or above its high watermark {op.value['ends'].get(str(p), op.value['ends'].get(p))} "
                                  "(ListOffsets LATEST)")
    lost_txn = sorted(committed - present_committed)
    if lost_txn:
        violations.append(f"{len(lost_txn)} committed transactional record(s) missing: {_limit(lost_txn)}")
    duplicates: dict[str, list[str]] = {}
    excused = resent_after_epoch_bump or set()
    for name, values in (("read_uncommitted", uncommitted), ("read_committed", committed_final)):
        dups = sorted(v for v, n in Counter(values).items() if n > 1)
        if dups:
            duplicates[name] = dups
        dups = [v for v in dups if v not in excused]
        if dups:
            violations.append(f"{len(dups)} duplicated record(s) in the final {name} read: {_limit(dups)}")
    unknown = sorted(present - attempted)
    if unknown:
        violations.append(f"{len(unknown)} record(s) nobody wrote: {_limit(unknown)}")
    failed_present = sorted(present & sent_failed)
    if failed_present:
        violations.append(f"{len(failed_present)} record(s) whose send failed definitely: {_limit(failed_present)}")
    if reused:
        violations.append(f"{len(reused)} offset(s) reused for different data: {_limit(reused)}")
    dirty: dict[str, list[str]] = defaultdict(list)
    for process, records in committed_reads:
        for _, _, value in records:
            if value in aborted:
                dirty[process].append(value)
    for process, values in dirty.items():
        violations.append(f"{process} (read_committed) saw {len(values)} aborted record(s): {_limit(sorted(set(values)))}")
    violations.extend(replica_problems or [])
    stats = {"acknowledged": len(sent_ok), "committed": len(committed), "aborted": len(aborted),
             "read": len(uncommitted), "read_committed": len(committed_final), "offsets_seen": len(offsets),
             "resent_after_epoch_bump": len(excused & set(uncommitted))}
    return Verdict(not violations, violations, stats, duplicates)


__all__ = ["History", "Op", "Verdict", "check"]
