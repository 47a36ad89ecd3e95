"""An Elle-like checker for Kafka transactions over a list-append workload (Jepsen's Elle is Clojure;
this is our own, smaller one).

Every partition is a *key*; a transaction appends values to keys (produces) and reads keys (polls
with read_committed). Values are unique, so a value names the transaction that wrote it, and the
final read_committed read of each partition is the key's *version order*. From those:

* **ww** edge ``T1 -> T2``: on some key, T2's value directly follows T1's in the version order;
* **wr** edge ``T1 -> T2``: T2 read a value T1 wrote.

and :func:`check` reports

* **G0** (write cycle): a cycle of ww edges;
* **G1c** (cyclic information flow): a cycle of ww and wr edges with at least one wr edge;
* **G1a / aborted read**: a read (by a transaction, or a read_committed poll, or the final
  read_committed read) returned a value of a transaction that aborted;
* **torn transaction**: a transaction whose writes are only partly in the final read_committed
  read (a committed one: some lost; one of unknown outcome: neither all nor none), and **lost
  transaction**: a committed one with none of them;
* **torn read** (an intermediate read): a read of a key that returned values that are not one
  contiguous run of the version order (it skipped a committed value between two it saw), or that
  are out of the version order;
* **duplicate append** (a value twice in a key's version order) and **garbage read** (a value
  nobody wrote).

Concurrent Kafka transactions writing the same partition interleave their records: a G0 cycle
between *different producers* on shared keys is what Kafka's protocol allows (Jepsen's Redpanda and
Bufstream analyses; transactions are not isolated from each other's writes). The workload therefore
gives every producer its own keys to write (it reads them all): then ww edges only order one
producer's transactions, and any G0 or G1c cycle is an anomaly.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise

ANOMALIES = ("G0", "G1c", "G1a", "torn-transaction", "lost-transaction", "torn-read", "duplicate-append",
             "garbage-read")


@dataclass
class Txn:
    id: str
    process: str
    #: "committed", "aborted" or "unknown" (an info outcome: it may have committed)
    status: str
    writes: list[tuple[int, str]] = field(default_factory=list)
    #: key -> the values read, in the order read
    reads: dict[int, list[str]] = field(default_factory=dict)


@dataclass
class AppendVerdict:
    anomalies: dict[str, list[str]] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.anomalies

    def describe(self) -> list[str]:
        stats = ", ".join(f"{k} {v}" for k, v in self.stats.items())
        lines = [f"elle: {'VALID' if self.valid else 'INVALID'} ({stats})"]
        for name, examples in self.anomalies.items():
            shown = "; ".join(examples[:3]) + (f" ... ({len(examples)} in all)" if len(examples) > 3 else "")
            lines.append(f"  anomaly {name}: {shown}")
        return lines


def _sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(component)
    return out


def _path(graph: dict[str, set[str]], start: str, goal: str, within: set[str]) -> list[str] | None:
    """A shortest path start ... goal inside ``within`` (BFS)."""
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = [node]
            while previous[path[-1]] is not None:
                path.append(previous[path[-1]])  # type: ignore[arg-type]
            return path[::-1]
        for child in graph.get(node, ()):
            if child in within and child not in previous:
                previous[child] = node
                queue.append(child)
    return None


def _describe_cycle(cycle: list[str], kinds: dict[tuple[str, str], set[str]]) -> str:
    parts = [cycle[0]]
    for a, b in pairwise(cycle):
        parts.append(f"-{'/'.join(sorted(kinds[(a, b)]))}-> {b}")
    return " ".join(parts)


def check(txns: Iterable[Txn], versions: dict[int, list[str]],
          other_reads: Iterable[tuple[str, int, list[str]]] = ()) -> AppendVerdict:
    """``versions``: each key's values in the final read_committed read, in offset order;
    ``other_reads``: (who, key, values) read with read_committed outside the transactions (pollers).
    """
    txns = list(txns)
    writer: dict[str, Txn] = {}
    for t in txns:
        for _, value in t.writes:
            writer[value] = t
    anomalies: dict[str, list[str]] = defaultdict(list)
    position: dict[int, dict[str, int]] = {}
    for key, values in versions.items():
        position[key] = {}
        for i, value in enumerate(values):
            if value in position[key]:
                anomalies["duplicate-append"].append(f"{value} at positions {position[key][value]} and {i} of key {key}")
            else:
                position[key][value] = i
    present = {v for values in versions.values() for v in values}
    # Reads: aborted, garbage, torn.
    reads = [(t.id, key, values) for t in txns for key, values in t.reads.items()]
    reads += [(who, key, values) for who, key, values in other_reads]
    reads.append(("final read_committed", -1, [v for values in versions.values() for v in values]))
    for who, key, values in reads:
        for value in values:
            w = writer.get(value)
            if w is None:
                anomalies["garbage-read"].append(f"{who} read {value} (key {key}), which nobody wrote")
            elif w.status == "aborted":
                anomalies["G1a"].append(f"{who} read {value} (key {key}) written by aborted {w.id}")
        if key < 0 or not values:
            continue
        where = [position.get(key, {}).get(v) for v in values]
        if None in where:
            continue  # a read value missing from the final read: lost, reported by the history checker
        if where != sorted(where) or len(set(where)) != len(where):
            anomalies["torn-read"].append(f"{who} read key {key} out of the version order: positions {where}")
        elif where[-1] - where[0] + 1 != len(where):
            skipped = [versions[key][i] for i in range(where[0], where[-1] + 1) if i not in set(where)]
            anomalies["torn-read"].append(f"{who} read key {key} from {values[0]} to {values[-1]} but skipped "
                                          f"{', '.join(skipped[:3])}")
    # Transactions all or nothing.
    for t in txns:
        if not t.writes:
            continue
        seen = [v for _, v in t.writes if v in present]
        if t.status in ("committed", "unknown") and 0 < len(seen) < len(t.writes):
            missing = [v for _, v in t.writes if v not in present]
            anomalies["torn-transaction"].append(f"{t.status} {t.id}: {', '.join(seen[:3])} visible, "
                                                 f"{', '.join(missing[:3])} not")
        elif t.status == "committed" and not seen:
            anomalies["lost-transaction"].append(f"committed {t.id}: none of {len(t.writes)} write(s) visible")
    # Dependency graph.
    kinds: dict[tuple[str, str], set[str]] = defaultdict(set)
    for values in versions.values():
        for a, b in pairwise(values):
            ta, tb = writer.get(a), writer.get(b)
            if ta is not None and tb is not None and ta is not tb:
                kinds[(ta.id, tb.id)].add("ww")
    for t in txns:
        for values in t.reads.values():
            for value in values:
                w = writer.get(value)
                if w is not None and w is not t and w.status != "aborted":
                    kinds[(w.id, t.id)].add("wr")
    ww: dict[str, set[str]] = defaultdict(set)
    both: dict[str, set[str]] = defaultdict(set)
    for (a, b), k in kinds.items():
        both[a].add(b)
        if "ww" in k:
            ww[a].add(b)
    for component in _sccs(dict(ww)):
        members = set(component)
        a = component[0]
        b = next(c for c in ww[a] if c in members)
        cycle = [a, *(_path(ww, b, a, members) or [])]
        anomalies["G0"].append(_describe_cycle(cycle, kinds))
    for component in _sccs(dict(both)):
        members = set(component)
        wr = next(((a, b) for a in component for b in both[a] if b in members and "wr" in kinds[(a, b)]), None)
        if wr is None:
            continue  # only ww edges: reported as G0
        cycle = [wr[0], *(_path(both, wr[1], wr[0], members) or [])]
        anomalies["G1c"].append(_describe_cycle(cycle, kinds))
    edges = Counter(k for ks in kinds.values() for k in ks)
    stats = {"transactions": len(txns), "committed": sum(t.status == "committed" for t in txns),
             "aborted": sum(t.status == "aborted" for t in txns), "unknown": sum(t.status == "unknown" for t in txns),
             "appends_visible": len(present), "reads": len(reads) - 1, "ww_edges": edges["ww"],
             "wr_edges": edges["wr"]}
    ordered = {name: anomalies[name] for name in ANOMALIES if anomalies.get(name)}
    return AppendVerdict(ordered, stats)


__all__ = ["ANOMALIES", "AppendVerdict", "Txn", "check"]
