"""How fast a test broker is ready: from ``tidelog.Broker()`` (what the pytest fixtures call) to the first
acknowledged produce, and its memory, against Apache Kafka 4.4 started as the oracle starts it.

Run from the repository root::

    .venv/bin/python bench/startup.py              # 5 rounds of each Tidelog mode, 1 of Kafka
    .venv/bin/python bench/startup.py --quick      # 1 round, no Kafka (the smoke run of test_bench_scripts)
    .venv/bin/python bench/startup.py --profile    # + where start-up spends its time (cProfile, importtime)

Each round is a fresh Python process (``bench/startup.py --round MODE``) that imports confluent-kafka
(the client's own cost is not the broker's), then takes the time and starts the broker:

* ``thread``: ``tidelog.Broker()``, the broker in that process on its own event loop (the default of the
  fixtures). RSS: the whole process's resident memory after the produce, minus the same process's RSS
  just before ``Broker()`` (interpreter + confluent-kafka): what the broker added.
* ``subprocess``: ``tidelog.Broker(mode="subprocess")``, ``tidelog serve`` as a child. RSS: the child's.
* ``kafka``: tests/oracle/kafka.py's KafkaProcess (KRaft, one node, ``kafka-storage format`` then
  ``kafka.Kafka`` with kafka-server-start.sh's heap), timed from ``start()``; RSS: the JVM's. Needs java
  and mvn (the oracle's toolchain); skipped with a note when missing.

The first acknowledged produce: one record to a new topic (auto-created) with ``acks=all``, timed until
its delivery report. Ratios are Kafka / Tidelog. Timings on a loaded machine are longer: the load
average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rss_kib(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def first_produce(bootstrap: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    errors: list = []
    producer.produce("startup", b"first", on_delivery=lambda err, _msg: errors.append(err))
    if producer.flush(60) or errors != [None]:
        raise SystemExit(f"the first produce failed: {errors}")


def run_round(mode: str) -> dict:
    """One measurement, in this (fresh) process."""
    import confluent_kafka  # noqa: F401  (the client's import is not the broker's start-up)

    if mode == "kafka":
        sys.path.insert(0, str(ROOT))
        from tests.oracle import maven
        from tests.oracle.kafka import KafkaProcess

        classpath = maven.build()
        with tempfile.TemporaryDirectory() as tmp:
            kafka = KafkaProcess(Path(tmp))
            t0 = time.perf_counter()
            kafka.start()
            try:
                first_produce(kafka.bootstrap)
                seconds = time.perf_counter() - t0
                rss = rss_kib(kafka.proc.pid)  # type: ignore[union-attr]
            finally:
                kafka.stop()
        del classpath
        return {"seconds": seconds, "rss_kib": rss}
    before = rss_kib()
    t0 = time.perf_counter()
    import tidelog

    broker = tidelog.Broker(mode=mode)
    with broker:
        first_produce(broker.bootstrap_servers)
        seconds = time.perf_counter() - t0
        rss = rss_kib(broker.proc.pid) if mode == "subprocess" else rss_kib() - before  # type: ignore[union-attr]
    return {"seconds": seconds, "rss_kib": rss}


def measure(mode: str, rounds: int) -> dict | None:
    samples = []
    for _ in range(rounds):
        done = subprocess.run([sys.executable, __file__, "--round", mode], capture_output=True, text=True,
                              timeout=600, cwd=ROOT)
        if done.returncode != 0:
            print(f"{mode}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
            return None
        samples.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {"seconds": statistics.median(s["seconds"] for s in samples),
            "rss_mib": statistics.median(s["rss_kib"] for s in samples) / 1024, "rounds": rounds}


def profile() -> None:
    """cProfile of Broker() to the first produce (thread mode), and the slowest imports."""
    code = ("import cProfile, pstats, confluent_kafka, sys; sys.path.insert(0, 'bench'); import startup;"
            "cProfile.run('startup.run_round(\"thread\")', '/tmp/tidelog-startup.prof');"
            "s = pstats.Stats('/tmp/tidelog-startup.prof'); s.sort_stats('cumulative').print_stats(25)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    print("cProfile, cumulative (Broker() to the first acknowledged produce, thread mode):")
    print("\n".join(line for line in done.stdout.splitlines()[:60] if line.strip()))
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import tidelog.server.broker"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    total = max((us for us, _ in rows), default=0)
    print(f"\nimport tidelog.server.broker: {total / 1e6:.3f} s; largest cumulative imports:")
    for us, name in sorted(rows, reverse=True)[:20]:
        print(f"  {us / 1e6:7.3f} s  {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per Tidelog mode (median)")
    parser.add_argument("--quick", action="store_true", help="1 round, no Kafka")
    parser.add_argument("--no-kafka", action="store_true", help="skip Apache Kafka")
    parser.add_argument("--profile", action="store_true", help="also print cProfile and -X importtime summaries")
    parser.add_argument("--round", choices=["thread", "subprocess", "kafka"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.round:
        print(json.dumps(run_round(args.round)))
        return 0
    rounds = 1 if args.quick else args.rounds
    results = {mode: measure(mode, rounds) for mode in ("thread", "subprocess")}
    import shutil

    if args.quick or args.no_kafka:
        kafka_note = "not run (--quick / --no-kafka)"
    elif not (shutil.which("java") and shutil.which("mvn")):
        kafka_note = "not run: java and mvn are needed"
    else:
        results["kafka"] = measure("kafka", 1)
        kafka_note = ""
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; median of {rounds} fresh processes")
    print(f"{'broker':<28} {'to first ack (s)':>16} {'RSS (MiB)':>10}")
    names = {"thread": "tidelog.Broker() thread", "subprocess": "tidelog.Broker() subprocess",
             "kafka": "Apache Kafka 4.4 (oracle)"}
    for mode, r in results.items():
        if r is not None:
            print(f"{names[mode]:<28} {r['seconds']:>16.3f} {r['rss_mib']:>10.1f}")
    kafka = results.get("kafka")
    if kafka:
        for mode in ("thread", "subprocess"):
            r = results[mode]
            if r:
                print(f"Kafka / {mode}: time x{kafka['seconds'] / r['seconds']:.1f}, "
                      f"RSS x{kafka['rss_mib'] / r['rss_mib']:.1f}")
    else:
        print(f"Apache Kafka: {kafka_note}")
    if args.profile:
        print()
        profile()
    return 0 if all(r is not None for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
