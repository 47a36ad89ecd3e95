"""What the client-side commands (topics, produce, consume, perf) share: the ``--bootstrap-server``
option, building confluent-kafka clients, a fast "is the broker there?" check, errors as exit codes,
and a stderr progress line.

Exit codes, the same for every command:

* 0: done;
* 1: the broker or the operation failed (broker unreachable, topic missing, a delivery failed ...),
  reported as one line ``tidelog <command>: <what went wrong>`` on stderr;
* 2: bad arguments (argparse's own code; ``KEY=VALUE`` options are checked by :func:`key_value`).

These commands are Kafka clients and nothing more: they talk to any Kafka-compatible broker and never
import broker internals. librdkafka's own log lines are silenced; its errors surface as the messages
above. Not thread-safe (a CLI process runs one command).
"""

from __future__ import annotations

import argparse
import functools
import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TextIO

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata

DEFAULT_BOOTSTRAP = "localhost:9092"
#: How long to wait for the first Metadata answer before saying the broker cannot be reached.
CONNECT_TIMEOUT_S = 5.0
#: librdkafka keeps retrying a refused connection; once every broker is down for this long, give up early.
REFUSED_GRACE_S = 1.0
#: How long an admin request (CreateTopics, DescribeConfigs ...) may take.
REQUEST_TIMEOUT_S = 15.0

_SILENT = logging.getLogger("tidelog.cli.librdkafka")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False

# Client-side errors that mean "no broker answered": the connection was refused, the name did not
# resolve, or every broker is down.
_UNREACHABLE = {KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE, KafkaError._TRANSPORT, KafkaError._TIMED_OUT}
_GIVE_UP_EARLY = {KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE}


class CliError(Exception):
    """A failure to report as one line on stderr, with the command's exit code."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


# ------------------------------------------------------------------------------------------ arguments


def add_bootstrap_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT",
        help=f"broker(s) to connect to, comma-separated (default {DEFAULT_BOOTSTRAP})",
    )


def key_value(text: str) -> tuple[str, str]:
    """argparse ``type=`` for ``KEY=VALUE`` (the value may be empty or contain ``=``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a number > 0, got 0")
    return value


# ------------------------------------------------------------------------------------------ running


def entry(fn: Callable[[argparse.Namespace], int], prog: str) -> Callable[[argparse.Namespace], int]:
    """Wrap a command so that :class:`CliError` and client exceptions become one stderr line + exit code."""

    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except CliError as e:
            print(f"{prog}: {e}", file=sys.stderr)
            return e.exit_code
        except KafkaException as e:
            print(f"{prog}: {describe_error(e)}", file=sys.stderr)
            return 1

    return run


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


class Cluster:
    """The broker(s) a command talks to: builds confluent-kafka clients with the shared settings and
    checks reachability with a bounded wait (librdkafka alone would retry forever)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.errors: list[KafkaError] = []

    def config(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Client properties: the bootstrap servers, silenced librdkafka logs, errors collected, ``extra``."""
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "logger": _SILENT, "error_cb": self._on_error}
        conf.update(extra or {})
        return conf

    def _on_error(self, error: KafkaError) -> None:
        self.errors.append(error)

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


def _retriable(topic_metadata: Any) -> bool:
    error = getattr(topic_metadata, "error", None)
    return error is not None and error.code() == KafkaError.LEADER_NOT_AVAILABLE


def require_topic(metadata: ClusterMetadata, topic: str) -> int:
    """The topic's partition count; ``CliError`` when it does not exist."""
    t = metadata.topics.get(topic)
    if t is None or (t.error is not None and t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
        raise CliError(f"topic {topic!r} does not exist")
    if t.error is not None:
        raise CliError(f"topic {topic!r}: {describe_error(t.error)}")
    return len(t.partitions)


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
    if not done.wait(timeout_s):
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


def timestamp_ms(text: str) -> int:
    """An argparse type: epoch milliseconds, or an ISO 8601 date-time (naive = local time)."""
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected epoch milliseconds or an ISO 8601 date-time such as 2024-05-01T12:00:00Z, got {text!r}"
        ) from None
    return int(moment.timestamp() * 1000)


__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEFAULT_BOOTSTRAP",
    "REQUEST_TIMEOUT_S",
    "CliError",
    "Cluster",
    "Progress",
    "add_bootstrap_argument",
    "close_consumer",
    "describe_error",
    "entry",
    "error_code",
    "key_value",
    "non_negative_int",
    "percentile",
    "positive_int",
    "require_partition",
    "require_topic",
    "timestamp_ms",
]
