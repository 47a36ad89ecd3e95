"""The benchmark's tables."""

from __future__ import annotations

import pstats
import statistics
from pathlib import Path

from perf.latency import Latency
from perf.measurement import Phase
from perf.workload import Throughput


def best(phases: list[Phase]) -> Phase | None:
    return max(phases, key=lambda p: p.rate) if phases else None


def median_rate(phases: list[Phase]) -> float:
    return statistics.median(p.rate for p in phases) if phases else float("nan")


def _cpu(phase: Phase) -> str:
    return f"{phase.cpu_per_million:.2f}" if phase.cpu is not None else "-"


def print_throughput(rows: list[Throughput], records: int, value_bytes: int, repeats: int) -> None:
    print(f"\nThroughput: {records:,} records x {value_bytes} bytes, one partition; best of {repeats} "
          "(median in brackets); broker CPU = CPU seconds the broker process used per million records")
    print(f"{'target':<16}{'produce rec/s':>24}{'MB/s':>7}{'CPU':>6}{'consume rec/s':>26}{'MB/s':>7}{'CPU':>6}  notes")
    for r in rows:
        p, c = best(r.produce), best(r.consume)
        if p is None or c is None:
            print(f"{r.target:<16}{'-':>24}{'-':>7}{'-':>6}{'-':>26}{'-':>7}{'-':>6}  {r.error}")
            continue
        pm, cm = median_rate(r.produce), median_rate(r.consume)
        notes = "; ".join(x for x in (r.note, r.error) if x)
        print(f"{r.target:<16}{p.rate:>13,.0f} ({pm:>8,.0f}){p.rate * value_bytes / 1e6:>7.1f}{_cpu(p):>6}"
              f"{c.rate:>15,.0f} ({cm:>8,.0f}){c.rate * value_bytes / 1e6:>7.1f}{_cpu(c):>6}  {notes}")
    done = {r.target: r for r in rows if r.produce and r.consume}
    for mine in ("tidelog", "tidelog-asyncio"):
        if mine not in done:
            continue
        mp, mc = best(done[mine].produce), best(done[mine].consume)
        assert mp is not None and mc is not None
        for other, o in done.items():
            if other.startswith("tidelog"):
                continue
            op, oc = best(o.produce), best(o.consume)
            assert op is not None and oc is not None
            cpu = ""
            if all(x.cpu for x in (mp, mc, op, oc)):
                cpu = (f"; broker CPU per record {mp.cpu_per_million / op.cpu_per_million:.2f}x and "
                       f"{mc.cpu_per_million / oc.cpu_per_million:.2f}x theirs")
            print(f"  {mine} / {other}: produce {mp.rate / op.rate:.2f}, consume {mc.rate / oc.rate:.2f}{cpu}")


def print_latency(rows: list[Latency], rate_: int, value_bytes: int, skipped: dict[str, str]) -> None:
    print(f"\nEnd-to-end latency at {rate_:,} records/s x {value_bytes} bytes = {rate_ * value_bytes / 1e6:.0f} MB/s "
          "(producer linger.ms=5, acks=1; consumer poll()), milliseconds; broker CPU in cores")
    print(f"{'target':<16}{'sent rec/s':>11}{'p50':>9}{'p99':>9}{'p99.9':>9}{'max':>9}{'CPU':>6}  notes")
    for r in rows:
        cpu = f"{r.cpu:>6.2f}" if r.cpu is not None else f"{'-':>6}"
        print(f"{r.target:<16}{r.rate:>11,.0f}{r.p50:>9.2f}{r.p99:>9.2f}{r.p999:>9.2f}{r.max:>9.2f}{cpu}  {r.error}")
    for name, why in skipped.items():
        print(f"{name:<16}{'-':>11}{'-':>9}{'-':>9}{'-':>9}{'-':>9}{'-':>6}  {why}")


def print_profile(path: Path, title: str, top: int) -> None:
    print(f"\n--- {title}: {path} (top {top} by own time, then by cumulative time)")
    stats = pstats.Stats(str(path))
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
