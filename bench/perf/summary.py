"""The closing table: every figure of the run, one row per figure and one column per target, with the
ratios tidelog/kafka and tidelog/null and the rows where Tidelog does worse than Kafka."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from perf.kafka_tool import ToolFigures
from perf.latency import Latency
from perf.lifecycle import Lifecycle
from perf.report import best
from perf.saturation import Saturation
from perf.workload import Throughput

HIGHER, LOWER = "higher", "lower"


@dataclass
class Row:
    label: str
    better: str  # HIGHER or LOWER is better
    values: dict[str, float] = field(default_factory=dict)
    fmt: str = ",.0f"

    def put(self, target: str, value: float | None) -> None:
        if value is not None and not math.isnan(value):
            self.values[target] = value

    def ratio(self, mine: str, other: str) -> float | None:
        a, b = self.values.get(mine), self.values.get(other)
        return a / b if a is not None and b else None

    def loses(self, mine: str, other: str) -> bool:
        r = self.ratio(mine, other)
        return r is not None and (r < 1 if self.better == HIGHER else r > 1)


def _median_cpu(phases) -> float | None:
    cpus = [p.cpu_per_million for p in phases if p.cpu is not None]
    return statistics.median(cpus) if cpus else None


def throughput_rows(rows: list[Throughput], title: str, value_bytes: int) -> list[Row]:
    out = [Row(f"{title} produce rec/s", HIGHER), Row(f"{title} produce MB/s", HIGHER, fmt=",.1f"),
           Row(f"{title} consume rec/s", HIGHER), Row(f"{title} consume MB/s", HIGHER, fmt=",.1f")]
    for r in rows:
        p, c = best(r.produce), best(r.consume)
        if p is None or c is None or r.error:
            continue
        out[0].put(r.target, p.rate)
        out[1].put(r.target, p.rate * value_bytes / 1e6)
        out[2].put(r.target, c.rate)
        out[3].put(r.target, c.rate * value_bytes / 1e6)
    return out


def cpu_rows(rows: list[Throughput], title: str, per: str, scale: float) -> list[Row]:
    out = [Row(f"{title} broker CPU s {per}, produce", LOWER, fmt=".3f"),
           Row(f"{title} broker CPU s {per}, consume", LOWER, fmt=".3f")]
    for r in rows:
        if r.error:
            continue
        for row, phases in zip(out, (r.produce, r.consume), strict=True):
            cpu = _median_cpu(phases)
            row.put(r.target, cpu * scale if cpu is not None else None)
    return out


def build(small: list[Throughput], big: list[Throughput], value_bytes: int, big_value_bytes: int,
          latency: list[Latency], lifecycle: list[Lifecycle], bound: list[Saturation],
          tools: list[ToolFigures], recovery_mib: int, latency_mb: float) -> list[Row]:
    rows = throughput_rows(small, f"{value_bytes} B records:", value_bytes)
    rows += throughput_rows(big, "1 MiB batches:", big_value_bytes)
    lat = [Row(f"latency at {latency_mb:.0f} MB/s p50 ms", LOWER, fmt=".2f"),
           Row(f"latency at {latency_mb:.0f} MB/s p99 ms", LOWER, fmt=".2f")]
    for r in latency:
        if not r.error:
            lat[0].put(r.target, r.p50)
            lat[1].put(r.target, r.p99)
    rows += lat
    rows += cpu_rows(small, f"{value_bytes} B:", "per M records", 1.0)
    # per GB of values: CPU s per million records / (records per GB)
    rows += cpu_rows(big, "1 MiB batches:", "per GB", 1e9 / big_value_bytes / 1e6)
    life = [Row("RSS idle, 1,000 partitions, MB", LOWER, fmt=",.0f"), Row("start to first produce, s", LOWER, fmt=".2f"),
            Row(f"kill -9 with {recovery_mib:,} MiB: serving again, s", LOWER, fmt=".2f")]
    for r in lifecycle:
        life[0].put(r.target, r.rss_idle / 1e6 if r.rss_idle is not None else None)
        life[1].put(r.target, r.startup_s)
        life[2].put(r.target, r.recovery_s)
    rows += life
    for workload in dict.fromkeys(s.workload for s in bound):
        b = [Row(f"broker-bound {workload}: produce rec/s", HIGHER), Row(f"broker-bound {workload}: produce MB/s",
                                                                          HIGHER, fmt=",.1f"),
             Row(f"broker-bound {workload}: consume rec/s", HIGHER), Row(f"broker-bound {workload}: consume MB/s",
                                                                          HIGHER, fmt=",.1f")]
        for s in bound:
            if s.workload == workload and not s.error:
                for row, v in zip(b, (s.produce_rate, s.produce_mb, s.consume_rate, s.consume_mb), strict=True):
                    row.put(s.target, v)
        rows += b
    t = [Row("kafka-producer-perf-test rec/s", HIGHER), Row("kafka-producer-perf-test MB/s", HIGHER, fmt=",.2f"),
         Row("kafka-producer-perf-test p99 ms", LOWER, fmt=",.0f"), Row("kafka-consumer-perf-test rec/s", HIGHER),
         Row("kafka-consumer-perf-test MB/s", HIGHER, fmt=",.2f"),
         Row("kafka-consumer-perf-test fetch rec/s", HIGHER)]
    for f in tools:
        if not f.error:
            for row, v in zip(t, (f.produce_rate, f.produce_mb, f.produce_p99_ms, f.consume_rate, f.consume_mb,
                                  f.fetch_rate), strict=True):
                row.put(f.target, v)
    rows += t
    return [r for r in rows if r.values]


def print_summary(rows: list[Row], targets: list[str]) -> list[str]:
    """Print the table; returns the labels of the rows where tidelog does worse than kafka."""
    cols = [t for t in targets if any(t in r.values for r in rows)]
    print("\nSummary: every figure of this run (ratios: tidelog / kafka and tidelog / null; "
          "'better' says which way is better; * = Tidelog worse than Kafka)")
    head = f"{'figure':<46}{'better':>7}" + "".join(f"{c:>18}" for c in cols) + f"{'t/kafka':>9}{'t/null':>8}"
    print(head)
    losing = []
    for r in rows:
        cells = "".join(f"{format(r.values[c], r.fmt):>18}" if c in r.values else f"{'-':>18}" for c in cols)
        rk, rn = r.ratio("tidelog", "kafka"), r.ratio("tidelog", "null")
        mark = "*" if r.loses("tidelog", "kafka") else " "
        if mark == "*":
            losing.append(r.label)
        print(f"{r.label:<46}{r.better:>7}{cells}{f'{rk:.2f}' if rk is not None else '-':>8}{mark}"
              f"{f'{rn:.2f}' if rn is not None else '-':>8}")
    if "kafka" in cols and "tidelog" in cols:
        print("Rows where Tidelog loses to Kafka: " + ("; ".join(losing) if losing else "none"))
    return losing
