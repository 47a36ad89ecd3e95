"""A real Apache Kafka broker for tests: KRaft, one node that is both broker and controller.

    with KafkaProcess(tmp_path, classpath=maven.build()) as kafka:
        Producer({"bootstrap.servers": kafka.bootstrap})

Shaped like :class:`tidelog.testing.BrokerProcess` (``start/stop/kill/restart``, ``bootstrap``,
``data_dir``, ``overrides`` as server properties), so a test can run the same steps against either
broker. ``start()`` does what Kafka's quickstart does: picks free loopback ports (the client port
and the controller port), writes ``server.properties`` into ``data_dir``, formats the log dir once
with a random cluster id (``kafka-storage format``), then runs ``kafka.Kafka`` with the heap
kafka-server-start.sh sets (-Xmx1G -Xms1G) and waits for "Kafka Server started" in its log
(``data_dir/kafka.log``) and until it answers ListOffsets for every partition (after a restart the
broker announces itself before it leads its partitions again). ``restart()`` keeps the ports, the
cluster id and the data.
Not thread-safe.

By hand (prints ``listening on 127.0.0.1:PORT``, runs until Ctrl-C)::

    .venv/bin/python -m tests.oracle.kafka [--port 9092] [--data-dir DIR] [--override key=value ...]
"""

from __future__ import annotations

import argparse
import base64
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.oracle import jvm, maven
from tidelog.testing.server_process import ServerProcess

#: Server properties of the single node, as Kafka's config/server.properties has them for a combined
#: broker+controller, with the internal topics at replication factor 1 (there is one broker).
#: node.id is 0, Tidelog's default broker.id, so node ids compare equal between the two brokers.
DEFAULTS = {
    "process.roles": "broker,controller",
    "node.id": "0",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}
READY = "Kafka Server started"
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def random_cluster_id() -> str:
    """What ``kafka-storage random-uuid`` prints: 16 random bytes, URL-safe base64 without padding,
    never starting with '-' (Kafka's Uuid.randomUuid rule)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class KafkaProcess(ServerProcess):
    stop_timeout = 60.0
    #: JIT options for the broker's JVM. Empty by default: the broker runs with the JIT as Kafka configures it,
    #: which the benchmarks (bench/) measure against. The test suite sets
    #: :data:`~tests.oracle.jvm.QUICK_START_OPTS` (tests/oracle/fixtures.py): its brokers live for one
    #: module, and with the C1 compiler alone a broker starts in ~6 s instead of ~15 s on a busy 2-core
    #: machine and spends about half the CPU time on the wire differential suite (15 s instead of 34 s).
    jit_options: tuple[str, ...] = ()

    def __init__(self, data_dir: Path, *, overrides: dict[str, str] | None = None, port: int = 0,
                 classpath: str | None = None, start_timeout: float = 120.0,
                 heap: list[str] | None = None) -> None:
        self.data_dir = Path(data_dir)
        #: JVM heap options instead of kafka-server-start.sh's -Xmx1G -Xms1G (several nodes on one machine).
        self.heap = heap
        #: more JVM options for kafka.Kafka (e.g. ``-Dorg.slf4j.simpleLogger.log.kafka.request.logger=debug``)
        self.jvm_options: list[str] = []
        self.overrides = dict(overrides or {})
        self.port = port
        self.controller_port = 0
        self.classpath = classpath
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.cluster_id: str | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def log_dir(self) -> Path:
        """Kafka's log.dirs: partition logs and the KRaft metadata log."""
        return self.data_dir / "logs"

    @property
    def log_file(self) -> Path:
        """The broker's stdout and stderr (slf4j-simple at INFO)."""
        return self.data_dir / "kafka.log"

    @property
    def properties_file(self) -> Path:
        return self.data_dir / "server.properties"

    def properties(self) -> dict[str, str]:
        props = dict(DEFAULTS)
        props.update({
            "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}",
            "controller.quorum.voters": f"{DEFAULTS['node.id']}@{HOST}:{self.controller_port}",
            "log.dirs": str(self.log_dir),
        })
        props.update(self.overrides)
        return props

    def _write_properties(self) -> None:
        lines = [f"{key}={value}" for key, value in self.properties().items()]
        self.properties_file.write_text("# written by tests/oracle/kafka.py\n" + "\n".join(lines) + "\n")

    def _format(self) -> None:
        """kafka-storage format, once per data dir (a restart keeps the formatted log dir)."""
        if (self.log_dir / "meta.properties").exists():
            return
        self.cluster_id = self.cluster_id or random_cluster_id()
        done = jvm.run_tool(self.classpath, "kafka-storage", "format", "-t", self.cluster_id,
                            "-c", self.properties_file, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed ({done.returncode}):\n{done.stdout}{done.stderr}")

    def start(self) -> KafkaProcess:
        if self.classpath is None:
            self.classpath = maven.build()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        picked = (self.port == 0, self.controller_port == 0)
        for attempt in range(3):
            self.port = self.port or free_port()
            self.controller_port = self.controller_port or free_port()
            self._write_properties()
            self._format()
            failure = self._run_until_ready()
            if failure is None:
                return self
            # a port picked free was taken by someone else before Kafka bound it: pick again
            if "Address already in use" not in failure or not any(picked) or attempt == 2:
                raise RuntimeError(failure)
            self.port = 0 if picked[0] else self.port
            self.controller_port = 0 if picked[1] else self.controller_port
        raise AssertionError("unreachable")

    def _run_until_ready(self) -> str | None:
        """Start kafka.Kafka and wait until it serves; None, or why it did not (the process is gone then)."""
        log_start = self.log_file.stat().st_size if self.log_file.exists() else 0
        cmd = jvm.tool_command(self.classpath, "kafka-server-start", [str(self.properties_file)])
        cmd[cmd.index("-cp"):cmd.index("-cp")] = self.jit_options  # after the heap, which may be replaced below
        if self.heap is not None:
            default = jvm.HEAP["kafka-server-start"]
            cmd[1:1 + len(default)] = self.heap
        cmd.insert(1, "-Dorg.slf4j.simpleLogger.defaultLogLevel=info")
        # The config dumps (hundreds of lines per client and server config) at INFO drown everything else.
        cmd.insert(1, "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.common.config.AbstractConfig=warn")
        cmd[1:1] = self.jvm_options
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if READY in self._log_since(log_start) and self._partitions_led():
                return None
            time.sleep(0.2)
        code = self.proc.poll()
        self.kill()
        state = f"exited with {code}" if code is not None else f"not ready after {self.start_timeout:.0f} s"
        lines = self._log_since(log_start).splitlines()
        errors = [line for line in lines if " ERROR " in line or "Exception" in line][:10]
        return "\n".join([f"Kafka {state} (log: {self.log_file}); its first errors:", *errors, "and its last lines:",
                          *lines[-20:]])

    def _partitions_led(self) -> bool:
        """Whether this broker leads every partition: ListOffsets (served by the partitions' leader,
        unlike Metadata) answers for all of them. After a restart the broker says it started, and
        Metadata names it leader, a moment before it leads its partitions again."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        try:
            metadata = admin.list_topics(timeout=5)
            partitions = [TopicPartition(t.topic, p) for t in metadata.topics.values() for p in t.partitions]
            if partitions:
                for future in admin.list_offsets({tp: OffsetSpec.latest() for tp in partitions},
                                                 request_timeout=5).values():
                    future.result()
        except KafkaException:
            return False
        return bool(metadata.brokers)

    def _log_since(self, offset: int) -> str:
        with self.log_file.open("rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.oracle.kafka",
                                     description="Run Apache Kafka (the version tests/java/pom.xml pins) "
                                                 "as a one-node KRaft cluster on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="client port (default: a free one)")
    parser.add_argument("--data-dir", type=Path, help="where the logs and server.properties go (default: a temp dir)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a server property (repeatable)")
    args = parser.parse_args(argv)
    overrides = {}
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"kafka: --override wants KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        overrides[key] = value
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="kafka-oracle-"))
    began = time.monotonic()
    try:
        classpath = maven.build()
    except maven.BuildError as e:
        print(f"kafka: {e}", file=sys.stderr)
        return 1
    kafka = KafkaProcess(data_dir, overrides=overrides, port=args.port, classpath=classpath)
    try:
        kafka.start()
    except RuntimeError as e:
        print(f"kafka: {e}", file=sys.stderr)
        return 1
    print(f"listening on {kafka.bootstrap} (Kafka log: {kafka.log_file}; "
          f"ready in {time.monotonic() - began:.1f} s)", flush=True)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    try:
        while not stopping and kafka.alive:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        kafka.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
