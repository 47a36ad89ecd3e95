"""The benchmark's tables."""

from __future__ import annotations

import pstats
import statistics
from pathlib import Path

from perf.kafka_tool import ToolFigures
from perf.latency import Latency
from perf.lifecycle import Lifecycle
from perf.measurement import Phase
from perf.saturation import BROKER_CORE, CLIENT_CORE, Saturation
from perf.workload import Throughput


def best(phases: list[Phase]) -> Phase | None:
    return max(phases, key=lambda p: p.rate) if phases else None


def median_rate(phases: list[Phase]) -> float:
    return statistics.median(p.rate for p in phases) if phases else float("nan")


def _cpu(phase: Phase) -> str:
    if phase.cpu is None:
        return "-"
    v = phase.cpu_per_million
    return f"{v:.2f}" if v < 100 else f" {v:,.0f}"


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
    secured = ("-ssl", "-sasl-ssl")  # tidelog-ssl is compared with kafka-ssl only, and so on
    for mine in ("tidelog", "tidelog-asyncio", "tidelog-ssl", "tidelog-sasl-ssl"):
        if mine not in done:
            continue
        mp, mc = best(done[mine].produce), best(done[mine].consume)
        assert mp is not None and mc is not None
        suffix = mine.removeprefix("tidelog")
        for other, o in done.items():
            if other.startswith("tidelog"):
                continue
            if (other != f"kafka{suffix}") if suffix in secured else other.endswith(secured):
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


def print_lifecycle(rows: list[Lifecycle], partitions: int) -> None:
    print(f"\nStart-up, idle memory and recovery, each on a fresh broker: seconds from starting the process to "
          f"the first acknowledged produce; RSS after holding {partitions:,} partitions idle; after SIGKILL, "
          "seconds from the new process's start to a produce acknowledged on the partition written")
    print(f"{'target':<16}{'start s':>9}{'RSS MB':>9}{'recover s':>11}  notes")
    for r in rows:
        start = f"{r.startup_s:>9.2f}" if r.startup_s is not None else f"{'-':>9}"
        rss = f"{r.rss_idle / 1e6:>9,.0f}" if r.rss_idle is not None else f"{'-':>9}"
        rec = f"{r.recovery_s:>11.2f}" if r.recovery_s is not None else f"{'-':>11}"
        notes = "; ".join(x for x in (r.rss_note and f"RSS: {r.rss_note}", r.recovery_note, r.error) if x)
        print(f"{r.target:<16}{start}{rss}{rec}  {notes}")


def print_saturation(rows: list[Saturation], clients: int) -> None:
    print(f"\nBroker-bound: the broker pinned to core {BROKER_CORE} (taskset), {clients} producers then {clients} "
          f"consumers on core {CLIENT_CORE}; core busy = share of that core busy during the phase (broker near "
          "100% = the broker is the bottleneck); CPU = broker CPU seconds per million records")
    print(f"{'target':<16}{'workload':<10}{'produce rec/s':>14}{'MB/s':>8}{'core b/c %':>12}{'CPU':>7}"
          f"{'consume rec/s':>15}{'MB/s':>8}{'core b/c %':>12}{'CPU':>7}  notes")
    def per_million(v: float | None, records: int) -> str:
        return f"{v / records * 1e6:>7.3f}" if v is not None and records else f"{'-':>7}"

    for s in rows:
        print(f"{s.target:<16}{s.workload:<10}{s.produce_rate:>14,.0f}{s.produce_mb:>8.1f}"
              f"{f'{s.produce_broker_core:.0%}/{s.produce_client_core:.0%}':>12}{per_million(s.produce_cpu, s.records)}"
              f"{s.consume_rate:>15,.0f}{s.consume_mb:>8.1f}"
              f"{f'{s.consume_broker_core:.0%}/{s.consume_client_core:.0%}':>12}{per_million(s.consume_cpu, s.records)}  {s.error}")


def print_tools(rows: list[ToolFigures], records: int) -> None:
    print(f"\nApache Kafka's kafka-producer-perf-test ({records:,} records x 100 bytes, --throughput -1, client "
          "defaults) then kafka-consumer-perf-test (the same records), as they report them")
    print(f"{'target':<16}{'produce rec/s':>14}{'MB/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'consume rec/s':>15}"
          f"{'MB/s':>8}{'fetch rec/s':>13}  notes")
    for f in rows:
        print(f"{f.target:<16}{f.produce_rate:>14,.0f}{f.produce_mb:>8.2f}{f.produce_p50_ms:>8.0f}"
              f"{f.produce_p99_ms:>8.0f}{f.consume_rate:>15,.0f}{f.consume_mb:>8.2f}{f.fetch_rate:>13,.0f}  {f.error}")
