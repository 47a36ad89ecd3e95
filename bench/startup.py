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
  Then a second ``Broker()`` in the same process ("again"): the modules are loaded, so this is what
  every fixture broker after the first of a test session costs (``tidelog_broker_function``).
* ``subprocess``: ``tidelog.Broker(mode="subprocess")``, ``tidelog serve`` as a child. RSS: the child's.
* ``kafka``: tests/oracle/kafka.py's KafkaProcess (KRaft, one node, ``kafka-storage format`` then
  ``kafka.Kafka`` with kafka-server-start.sh's heap), timed from ``start()``; RSS: the JVM's. Needs java
  and mvn (the oracle's toolchain); skipped with a note when missing.

The first acknowledged produce: one record to a new topic (auto-created) with ``acks=all``, timed until
its delivery report. Besides the wall time, the CPU time the broker used until then (user + system;
for ``thread`` the whole process's, less the client's import): on a loaded machine the wall time
grows with the load, the CPU time much less. Ratios are Kafka / Tidelog; the load average is printed
with the figures.
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
                cpu = cpu_seconds(kafka.proc.pid)  # type: ignore[union-attr]  (kafka-storage format: not counted)
            finally:
                kafka.stop()
        del classpath
        return {"seconds": seconds, "rss_kib": rss, "cpu": cpu}
    before = rss_kib()
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    import tidelog

    broker = tidelog.Broker(mode=mode)
    with broker:
        first_produce(broker.bootstrap_servers)
        seconds = time.perf_counter() - t0
        if mode == "subprocess":
            rss = rss_kib(broker.proc.pid)  # type: ignore[union-attr]
            cpu = cpu_seconds(broker.proc.pid)  # type: ignore[union-attr]
        else:  # this process's CPU: the broker's thread, and librdkafka's threads (a few ms)
            rss, cpu = rss_kib() - before, time.process_time() - cpu0
    result = {"seconds": seconds, "rss_kib": rss, "cpu": cpu}
    if mode == "thread":  # a second broker in the same process: what every later fixture pays
        t0, cpu0 = time.perf_counter(), time.process_time()
        with tidelog.Broker(mode=mode) as again:
            first_produce(again.bootstrap_servers)
            result["again"] = {"seconds": time.perf_counter() - t0, "cpu": time.process_time() - cpu0,
                               "rss_kib": rss}
    return result


def user_env() -> dict[str, str]:
    """As after ``pip install tidelog``, which compiles every module to bytecode: .pyc files are written
    and used (under ~/.cache/tidelog/pycache, not in the source tree), even where the environment sets
    PYTHONDONTWRITEBYTECODE (without bytecode, every start compiles ~300 modules: seconds)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(Path.home() / ".cache" / "tidelog" / "pycache")
    return env


def measure(mode: str, rounds: int) -> dict | None:
    samples = []
    warm_up = mode != "kafka"  # a first Tidelog round fills the bytecode and page caches: not counted
    for i in range(rounds + warm_up):
        done = subprocess.run([sys.executable, __file__, "--round", mode], capture_output=True, text=True,
                              timeout=600, cwd=ROOT, env=user_env())
        if warm_up and i == 0 and done.returncode == 0:
            continue
        if done.returncode != 0:
            print(f"{mode}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
            return None
        samples.append(json.loads(done.stdout.strip().splitlines()[-1]))
    out = {"seconds": statistics.median(s["seconds"] for s in samples),
           "cpu": statistics.median(s["cpu"] for s in samples),
           "rss_mib": statistics.median(s["rss_kib"] for s in samples) / 1024, "rounds": rounds}
    if all("again" in s for s in samples):
        out["again"] = {"seconds": statistics.median(s["again"]["seconds"] for s in samples),
                        "cpu": statistics.median(s["again"]["cpu"] for s in samples), "rss_mib": out["rss_mib"]}
    return out


def profiled_start() -> None:
    """cProfile of the broker's start and first produce, on this thread's event loop (in thread mode the
    same work runs on the broker's thread, where a profiler of the caller's thread does not see it)."""
    import asyncio
    import cProfile
    import pstats

    import confluent_kafka  # noqa: F401

    profiler = cProfile.Profile()
    profiler.enable()
    from tidelog.config import BrokerConfig
    from tidelog.embedded import TEST_DEFAULTS
    from tidelog.server.broker import Broker

    async def main(data_dir: str) -> None:
        config = BrokerConfig.from_props({**TEST_DEFAULTS, "listeners": "PLAINTEXT://127.0.0.1:0",
                                          "log.dirs": data_dir, "metrics.listener": ""})
        broker = Broker(config)
        await broker.start()
        await asyncio.get_running_loop().run_in_executor(None, first_produce, f"127.0.0.1:{broker.port}")
        profiler.disable()
        await broker.stop()

    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(tmp))
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(30)


def profile() -> None:
    """cProfile of the start, and the slowest imports (-X importtime)."""
    done = subprocess.run([sys.executable, __file__, "--profile-round"], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, env=user_env())
    print("cProfile, cumulative (imports, Broker(config), start(), the first acknowledged produce):")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    print("\n".join(lines[:45]) or done.stderr[-2000:])
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import tidelog.server.broker"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600, env=user_env())
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
    parser.add_argument("--profile-round", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.profile_round:
        profiled_start()
        return 0
    if args.round:
        print(json.dumps(run_round(args.round)))
        return 0
    rounds = 1 if args.quick else args.rounds
    results = {mode: measure(mode, rounds) for mode in ("thread", "subprocess")}
    if results["thread"] and "again" in results["thread"]:
        results = {"thread": results["thread"], "thread-again": results["thread"].pop("again"),
                   "subprocess": results["subprocess"]}
    import shutil

    if args.quick or args.no_kafka:
        kafka_note = "not run (--quick / --no-kafka)"
    elif not (shutil.which("java") and shutil.which("mvn")):
        kafka_note = "not run: java and mvn are needed"
    else:
        results["kafka"] = measure("kafka", 1)
        kafka_note = ""
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; median of {rounds} fresh processes")
    print(f"{'broker':<28} {'to first ack (s)':>16} {'CPU (s)':>8} {'RSS (MiB)':>10}")
    names = {"thread": "tidelog.Broker() thread", "thread-again": "  again, same process",
             "subprocess": "tidelog.Broker() subprocess",
             "kafka": "Apache Kafka 4.4 (oracle)"}
    for mode, r in results.items():
        if r is not None:
            print(f"{names[mode]:<28} {r['seconds']:>16.3f} {r['cpu']:>8.3f} {r['rss_mib']:>10.1f}")
    kafka = results.get("kafka")
    if kafka:
        for mode in ("thread", "subprocess"):
            r = results[mode]
            if r:
                print(f"Kafka / {mode}: time x{kafka['seconds'] / r['seconds']:.1f}, "
                      f"CPU x{kafka['cpu'] / r['cpu']:.1f}, RSS x{kafka['rss_mib'] / r['rss_mib']:.1f}")
    else:
        print(f"Apache Kafka: {kafka_note}")
    if args.profile:
        print()
        profile()
    return 0 if all(r is not None for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
