"""What the client-side commands share: building confluent-kafka clients, a bounded "is the broker
there?" check, noticing a broker that dies mid-command, errors as exit codes, and a progress line.

Exit codes, the same for every command:

* 0: done;
* 1: the broker or the operation failed (broker unreachable or lost, topic missing, a delivery failed ...),
  reported as one line ``tidelog <command>: <what went wrong>`` on stderr;
* 2: bad arguments (argparse's usage error, or a value only the command can check);
* 130: interrupted (Ctrl-C or SIGTERM) where the command has no natural end, such as ``perf``.

SIGTERM is turned into ``KeyboardInterrupt`` while a command runs, so ``kill`` stops a command the way
Ctrl-C does: a group consumer commits, leaves its group and closes.

These commands are Kafka clients and nothing more: they talk to any Kafka-compatible broker and never
import broker internals. librdkafka's own log lines are silenced; its errors surface as the messages
above. Not thread-safe (a CLI process runs one command).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ClusterMetadata

from tidelog.cli.argument import add_bootstrap_argument, add_command_config_argument

#: How long to wait for the first Metadata answer before saying the broker cannot be reached; also how
#: long a lost broker may stay away before a running command gives up.
CONNECT_TIMEOUT_S = 5.0
#: librdkafka keeps retrying a refused connection; once every broker is down for this long, give up early.
REFUSED_GRACE_S = 1.0
#: How long an admin request (CreateTopics, DescribeConfigs ...) may take.
REQUEST_TIMEOUT_S = 15.0
#: Set to 1 to see the Python traceback of an unexpected error instead of the one-line report.
DEBUG_ENV = "TIDELOG_DEBUG"

_SILENT = logging.getLogger("tidelog.cli.librdkafka")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False

# Client-side errors that mean "no broker answered": the connection was refused or dropped, the name
# did not resolve, or every broker is down.
_UNREACHABLE = {KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE, KafkaError._TRANSPORT, KafkaError._TIMED_OUT}
_GIVE_UP_EARLY = {KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE}
_CONNECTION_TROUBLE = {KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._RESOLVE}


class CliError(Exception):
    """A failure to report as one line on stderr, with the command's exit code."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class BrokerLost(CliError):
    """The broker went away while the command ran and did not come back in time."""


# ------------------------------------------------------------------------------------------ running


def command(parser: argparse.ArgumentParser, fn: Callable[[argparse.Namespace], int]) -> None:
    """Make ``parser`` run ``fn``: adds ``--bootstrap-server`` and ``--command-config`` and wraps ``fn``
    with :func:`entry`."""
    add_bootstrap_argument(parser)
    add_command_config_argument(parser)
    parser.set_defaults(func=entry(fn, parser.prog), prog=parser.prog, parser=parser)


def entry(fn: Callable[[argparse.Namespace], int], prog: str) -> Callable[[argparse.Namespace], int]:
    """Wrap a command: SIGTERM acts as Ctrl-C, and :class:`CliError`, client exceptions and anything
    unexpected become one stderr line and an exit code (never a traceback, unless $TIDELOG_DEBUG)."""

    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        with _sigterm_interrupts():
            try:
                return fn(args)
            except CliError as e:
                print(f"{prog}: {e}", file=sys.stderr)
                return e.exit_code
            except KafkaException as e:
                print(f"{prog}: {describe_error(e)}", file=sys.stderr)
                return 1
            except (KeyboardInterrupt, BrokenPipeError):
                raise
            except Exception as e:
                if os.environ.get(DEBUG_ENV):
                    raise
                print(f"{prog}: unexpected error: {type(e).__name__}: {e} (set {DEBUG_ENV}=1 for details)",
                      file=sys.stderr)
                return 1

    return run


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """While active, SIGTERM raises KeyboardInterrupt in the main thread (the old handler comes back after)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class Interrupt:
    """Ctrl-C or SIGTERM, noted rather than raised: see :func:`deferred_interrupts`."""

    def __init__(self) -> None:
        self.requested = False

    def note(self, signum: int, frame: object) -> None:
        self.requested = True

    def check(self) -> None:
        """Raise the noted interrupt as KeyboardInterrupt, here, in Python code."""
        if self.requested:
            raise KeyboardInterrupt


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[Interrupt]:
    """While active, SIGINT and SIGTERM only set a flag that the caller's loop checks between client
    calls. A KeyboardInterrupt raised inside a confluent-kafka call can be lost on its way out (2.16's
    ``poll()`` then fails with "SystemError: ... returned NULL without setting an exception")."""
    interrupt = Interrupt()
    if threading.current_thread() is not threading.main_thread():
        yield interrupt
        return
    previous = {sig: signal.signal(sig, interrupt.note) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield interrupt
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def describe_error(error: KafkaError | KafkaException | BaseException) -> str:
    """One readable line for a client or broker error."""
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        error = error.args[0]
    if isinstance(error, KafkaError):
        text = error.str()
        if text.startswith("Broker: "):
            text = text[len("Broker: "):]
        return f"{text} ({error.name()})"
    return str(error)


def error_code(error: BaseException) -> int | None:
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        return error.args[0].code()
    return None


# ------------------------------------------------------------------------------------------ the cluster


class Cluster:
    """The broker(s) a command talks to: builds confluent-kafka clients with the shared settings, checks
    reachability with a bounded wait (librdkafka alone would retry forever) and notices a broker lost
    while the command runs (:meth:`check_connection`)."""

    def __init__(self, bootstrap: str, properties: dict[str, Any] | None = None) -> None:
        self.bootstrap = bootstrap
        #: client properties from --command-config (security.protocol, sasl.*, ssl.* ...)
        self.properties = dict(properties or {})
        self.errors: list[KafkaError] = []
        self._trouble = False

    def config(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Client properties: the bootstrap servers, silenced librdkafka logs, errors collected, ``extra``."""
        conf: dict[str, Any] = {**self.properties, "bootstrap.servers": self.bootstrap, "logger": _SILENT,
                                "error_cb": self._on_error}
        conf.update(extra or {})
        return conf

    def _on_error(self, error: KafkaError) -> None:
        if len(self.errors) < 100:
            self.errors.append(error)
        if error.code() in _CONNECTION_TROUBLE:
            self._trouble = True

    def admin(self) -> AdminClient:
        return AdminClient(self.config())

    def metadata(self, client: Any, topic: str | None = None,
                 timeout_s: float = CONNECT_TIMEOUT_S) -> ClusterMetadata:
        """Metadata of every topic (or of ``topic``, which a producer's request may auto-create).

        Raises ``CliError("cannot reach the broker at ...")`` when no broker answers within ``timeout_s``.
        Asks in short slices so that a refused connection (every broker down) fails after about a second
        instead of the whole ``timeout_s``. ``client`` is an AdminClient or a Producer (anything whose
        ``poll(0)`` serves callbacks without consuming records)."""
        start = time.monotonic()
        while True:
            try:
                metadata = client.list_topics(topic, timeout=0.5)
                if topic is None or not _retriable(metadata.topics.get(topic)):
                    self._trouble = False
                    return metadata
            except KafkaException as e:
                if error_code(e) not in _UNREACHABLE:
                    raise
                client.poll(0)  # serves error_cb
                elapsed = time.monotonic() - start
                refused = elapsed >= REFUSED_GRACE_S and any(err.code() in _GIVE_UP_EARLY for err in self.errors)
                if refused or elapsed >= timeout_s:
                    raise CliError(f"cannot reach the broker at {self.bootstrap}") from None
                continue
            if time.monotonic() - start >= timeout_s:
                return metadata
            time.sleep(0.1)  # the topic is being created (LEADER_NOT_AVAILABLE): ask again

    def connect(self) -> tuple[AdminClient, ClusterMetadata]:
        admin = self.admin()
        return admin, self.metadata(admin)

    def topic_refusal(self, topic: str) -> str | None:
        """The broker's refusal of ``topic``, if it refuses this user: all-topics Metadata leaves out the
        topics a user may not describe (as Kafka's does), which looks like a missing topic. Asked by name
        (with Tidelog's own codec, never auto-creating) the broker says TOPIC_AUTHORIZATION_FAILED."""
        from tidelog.cli.broker_connection import BrokerConnection, wire_error
        from tidelog.errors import ErrorCode
        from tidelog.protocol.messages import MetadataRequest

        request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                  allow_auto_topic_creation=False)
        try:
            with BrokerConnection.open(self.bootstrap.split(",")[0], self.properties) as conn:
                answer = conn.request(request)
        except CliError:
            return None
        for t in answer.topics:
            if t.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                return wire_error(t.error_code, "Not authorized to access this topic")
        return None

    def check_connection(self, client: Any, lost_after_s: float = CONNECT_TIMEOUT_S) -> None:
        """Cheap unless librdkafka reported a dropped or refused connection since the last call; then ask
        for metadata until a broker answers (go on) or ``lost_after_s`` pass (:class:`BrokerLost`).

        ``client`` is the Producer or Consumer whose ``poll``/``consume``/``flush`` serves the error
        callbacks; call this from the loop that calls those."""
        if not self._trouble:
            return
        self._trouble = False
        deadline = time.monotonic() + lost_after_s
        while True:
            try:
                client.list_topics(timeout=0.5)
                return
            except KafkaException as e:
                if error_code(e) not in _UNREACHABLE:
                    raise
            if time.monotonic() >= deadline:
                raise BrokerLost(f"lost the broker at {self.bootstrap} (no answer for {lost_after_s:.0f} s)")


def _retriable(topic_metadata: Any) -> bool:
    error = getattr(topic_metadata, "error", None)
    return error is not None and error.code() == KafkaError.LEADER_NOT_AVAILABLE


def require_topic(metadata: ClusterMetadata, topic: str, cluster: Cluster | None = None) -> int:
    """The topic's partition count; ``CliError`` when it does not exist, or (asked of ``cluster``) when
    the broker refuses this user the topic."""
    t = metadata.topics.get(topic)
    if t is None or (t.error is not None and t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
        refusal = cluster.topic_refusal(topic) if cluster is not None else None
        raise CliError(f"topic {topic!r}: {refusal}" if refusal else f"topic {topic!r} does not exist")
    if t.error is not None:
        raise CliError(f"topic {topic!r}: {describe_error(t.error)}")
    return len(t.partitions)


def internal_topics(admin: AdminClient, names: Sequence[str]) -> set[str]:
    """Which of ``names`` the broker flags as internal (``__consumer_offsets``, ``__transaction_state``):
    Metadata's ``is_internal``, through DescribeTopics."""
    if not names:
        return set()
    futures = admin.describe_topics(TopicCollection(list(names)), request_timeout=REQUEST_TIMEOUT_S)
    internal = set()
    for name, future in futures.items():
        try:
            if future.result().is_internal:
                internal.add(name)
        except KafkaException as e:
            if error_code(e) != KafkaError.UNKNOWN_TOPIC_OR_PART:  # deleted meanwhile: not listed anyway
                raise CliError(f"cannot describe topic {name!r}: {describe_error(e)}") from None
    return internal


def require_topics(metadata: ClusterMetadata, names: Sequence[str], cluster: Cluster | None = None) -> None:
    """``CliError`` naming every topic of ``names`` that does not exist (or that ``cluster``'s broker
    refuses this user)."""
    missing = [n for n in names if n not in metadata.topics]
    for name in missing if cluster is not None else ():
        refusal = cluster.topic_refusal(name)
        if refusal:
            raise CliError(f"topic {name!r}: {refusal}")
    if missing:
        raise CliError(", ".join(f"topic {n!r}" for n in missing) + (" does not exist" if len(missing) == 1
                                                                       else " do not exist"))


def require_partition(topic: str, partition: int | None, partition_count: int) -> None:
    if partition is not None and partition >= partition_count:
        raise CliError(f"topic {topic!r} has {partition_count} partition(s); there is no partition {partition}")


def close_consumer(consumer: Any, prog: str, timeout_s: float = 10.0) -> None:
    """``consumer.close()`` with a bound: closing a group member commits its offsets and leaves the
    group, which librdkafka waits for without limit when the group coordinator cannot be found."""
    done = threading.Event()

    def close() -> None:
        try:
            consumer.close()
        except (KafkaException, RuntimeError):
            pass
        done.set()

    threading.Thread(target=close, name="consumer-close", daemon=True).start()
    if not done.wait(timeout_s) and timeout_s >= 1:
        print(f"{prog}: gave up closing the consumer after {timeout_s:.0f} s (offsets may not be committed)",
              file=sys.stderr)


# ------------------------------------------------------------------------------------------ progress


class Progress:
    """A one-line progress bar on stderr, redrawn at most a few times a second.

    Shown only when the stream is a terminal (unless ``enabled`` says otherwise), so piped output and
    logs stay clean."""

    def __init__(self, total: int, unit: str = "records", stream: TextIO | None = None,
                 enabled: bool | None = None, width: int = 30) -> None:
        self.total = max(total, 1)
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.width = width
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._drawn = False

    def update(self, done: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < 0.25:
            return
        self._last_draw = now
        share = min(done / self.total, 1.0)
        filled = int(share * self.width)
        rate = done / max(now - self._start, 1e-9)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r[{bar}] {share:6.1%} {done}/{self.total} {self.unit}  {rate:,.0f} {self.unit}/s ")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r" + " " * (self.width + 70) + "\r")
            self.stream.flush()
            self._drawn = False


def percentile(sorted_values: Sequence[float], share: float) -> float:
    """Nearest-rank percentile of already sorted values (0 for none)."""
    if not sorted_values:
        return 0.0
    rank = min(max(math.ceil(share * len(sorted_values)) - 1, 0), len(sorted_values) - 1)
    return sorted_values[rank]


__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEBUG_ENV",
    "REQUEST_TIMEOUT_S",
    "BrokerLost",
    "CliError",
    "Cluster",
    "Progress",
    "close_consumer",
    "command",
    "describe_error",
    "entry",
    "error_code",
    "internal_topics",
    "percentile",
    "require_partition",
    "require_topic",
    "require_topics",
]
