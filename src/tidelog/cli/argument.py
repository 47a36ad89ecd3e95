"""Command-line arguments the client-side commands share: where the broker is, which topic, and argparse
``type=`` checkers that turn a bad value into argparse's usage error (exit 2) instead of a traceback.

Where the broker is, first match wins:

1. ``--bootstrap-server`` after the sub-command (``tidelog topics list --bootstrap-server b:9092``);
2. ``--bootstrap-server`` before it (``tidelog --bootstrap-server b:9092 topics list``);
3. the ``TIDELOG_BOOTSTRAP_SERVERS`` environment variable;
4. ``localhost:9092``.

A topic can be named positionally (``tidelog produce orders``) or with Kafka's ``--topic orders``
(:func:`add_topic_argument`); :func:`resolve` checks such pairs after parsing, with the
sub-command's usage on error. Pure functions of their input; nothing here touches the network.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterable
from datetime import datetime

DEFAULT_BOOTSTRAP = "localhost:9092"
BOOTSTRAP_ENV = "TIDELOG_BOOTSTRAP_SERVERS"
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\],]+)(:(\d{1,5}))?$")
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")

#: Post-parse checks of a command: ``check(args)`` raises :class:`argparse.ArgumentError`-like
#: ``ValueError`` with the message to show under the command's usage.
Check = Callable[[argparse.Namespace], None]


# ------------------------------------------------------------------------------------------ the broker


def bootstrap_servers(text: str) -> str:
    """argparse ``type=`` for ``HOST:PORT[,HOST:PORT...]`` (the port defaults to 9092, as librdkafka's)."""
    entries = [e.strip() for e in text.split(",")]
    if not text.strip() or not all(entries):
        raise argparse.ArgumentTypeError(f"expected HOST:PORT[,HOST:PORT...], got {text!r}")
    for e in entries:
        m = _HOST_PORT.match(e)
        if m is None or (m.group(3) is not None and not 0 < int(m.group(3)) < 65536):
            raise argparse.ArgumentTypeError(f"expected HOST:PORT[,HOST:PORT...], got {text!r} (bad entry {e!r})")
    return ",".join(entries)


def add_bootstrap_argument(parser: argparse.ArgumentParser, top_level: bool = False) -> None:
    """``--bootstrap-server``. The top-level option defaults to None; a sub-command's leaves the attribute
    alone unless given (argparse would otherwise overwrite the top-level value with its default)."""
    parser.add_argument(
        "--bootstrap-server", type=bootstrap_servers, metavar="HOST:PORT",
        default=None if top_level else argparse.SUPPRESS,
        help=f"broker(s) to connect to, comma-separated (default: ${BOOTSTRAP_ENV}, else {DEFAULT_BOOTSTRAP})",
    )


def resolve_bootstrap(args: argparse.Namespace) -> None:
    """Fill ``args.bootstrap_server`` from the option, the environment or the default."""
    if getattr(args, "bootstrap_server", None):
        return
    env = os.environ.get(BOOTSTRAP_ENV, "").strip()
    if env:
        try:
            args.bootstrap_server = bootstrap_servers(env)
        except argparse.ArgumentTypeError as e:
            raise ValueError(f"{BOOTSTRAP_ENV}: {e}") from None
    else:
        args.bootstrap_server = DEFAULT_BOOTSTRAP


COMMAND_CONFIG_ENV = "TIDELOG_COMMAND_CONFIG"


def add_command_config_argument(parser: argparse.ArgumentParser, top_level: bool = False) -> None:
    """``--command-config FILE``: client properties for a secured listener. As with --bootstrap-server,
    a sub-command's option leaves the attribute alone unless given."""
    parser.add_argument(
        "--command-config", metavar="FILE", default=None if top_level else argparse.SUPPRESS,
        help="client properties for a secured listener (security.protocol, sasl.mechanism, sasl.username, "
             f"sasl.password, ssl.ca.location ...; default: ${COMMAND_CONFIG_ENV})")


def resolve_command_config(args: argparse.Namespace) -> None:
    """Fill ``args.client_properties`` from ``--command-config`` or ``$TIDELOG_COMMAND_CONFIG`` (empty
    without either). Raises ValueError when the file cannot be read."""
    from tidelog.config import parse_properties

    path = getattr(args, "command_config", None) or os.environ.get(COMMAND_CONFIG_ENV, "").strip() or None
    args.client_properties = {}
    if path is None:
        return
    try:
        with open(path, encoding="utf-8") as f:
            args.client_properties = parse_properties(f.read())
    except OSError as e:
        raise ValueError(f"cannot read --command-config {path}: {e.strerror}") from None


# ------------------------------------------------------------------------------------------ topics


def topic_name(text: str) -> str:
    """argparse ``type=`` for a topic name (Kafka's legal characters, 1 to 249 of them)."""
    if not _TOPIC_NAME.match(text) or text in (".", ".."):
        raise argparse.ArgumentTypeError(
            f"invalid topic name {text!r}: use 1 to 249 letters, digits, '.', '_' or '-'")
    return text


def add_topic_argument(parser: argparse.ArgumentParser, help_text: str, many: bool = False,
                       required: bool = True) -> None:
    """A topic given as ``TOPIC`` or ``--topic TOPIC`` (``many``: several, each way, repeatable).

    :func:`resolve` leaves the result in ``args.topic`` (``args.topics`` when ``many``)."""
    if many:
        parser.add_argument("topic_positional", nargs="*", type=topic_name, metavar="TOPIC", help=help_text)
        parser.add_argument("--topic", dest="topic_option", action="append", default=[], type=topic_name,
                            metavar="TOPIC", help="the same as TOPIC (repeatable), as Kafka's tools take it")
    else:
        parser.add_argument("topic_positional", nargs="?", type=topic_name, metavar="TOPIC", help=help_text)
        parser.add_argument("--topic", dest="topic_option", type=topic_name, metavar="TOPIC",
                            help="the same as TOPIC, as Kafka's tools take it")
    add_check(parser, _topic_check(many, required))


def _topic_check(many: bool, required: bool) -> Check:
    def check(args: argparse.Namespace) -> None:
        positional, option = args.topic_positional, args.topic_option
        if many:
            args.topics = list(dict.fromkeys([*positional, *option]))
            if required and not args.topics:
                raise ValueError("the following arguments are required: TOPIC (or --topic TOPIC)")
            return
        if positional is not None and option is not None and positional != option:
            raise ValueError(f"two topics given ({positional!r} and --topic {option!r}); name one")
        args.topic = positional if positional is not None else option
        if required and args.topic is None:
            raise ValueError("the following arguments are required: TOPIC (or --topic TOPIC)")

    return check


def add_check(parser: argparse.ArgumentParser, check: Check) -> None:
    """Run ``check(args)`` after parsing (see :func:`resolve`)."""
    checks = list(parser.get_default("checks") or ())
    parser.set_defaults(checks=[*checks, check])


def resolve(args: argparse.Namespace) -> None:
    """Run the post-parse checks of the chosen command; a ``ValueError`` is a usage error."""
    for check in getattr(args, "checks", None) or ():
        check(args)


# ------------------------------------------------------------------------------------------ value types


def key_value(text: str) -> tuple[str, str]:
    """argparse ``type=`` for ``KEY=VALUE`` (the value may be empty or contain ``=``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def port(text: str) -> int:
    """argparse ``type=`` for a TCP port, 0 (pick a free one) .. 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is not between 0 and 65535")
    return value


def overrides(items: Iterable[str]) -> dict[str, str]:
    """The broker properties of repeated ``--override KEY=VALUE`` options (key and value stripped, the
    last of a key wins); ValueError naming the first item that is not ``KEY=VALUE``."""
    props: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--override expects KEY=VALUE, got {item!r}")
        props[key.strip()] = value.strip()
    return props


def _integer(text: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected a number >= {low}, got {value}")
    if value > high:
        raise argparse.ArgumentTypeError(f"expected a number <= {high}, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """0 .. 2^31-1 (partition numbers, counts)."""
    return _integer(text, 0, INT32_MAX)


def positive_int(text: str) -> int:
    """1 .. 2^31-1."""
    return _integer(text, 1, INT32_MAX)


def offset(text: str) -> int:
    """An offset: 0 .. 2^63-1."""
    return _integer(text, 0, INT64_MAX)


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """argparse ``type=`` for an integer within ``low .. high``."""

    def parse(text: str) -> int:
        return _integer(text, low, high)

    parse.__name__ = "number"
    return parse


def partition_list(text: str) -> list[int]:
    """``0,2,5-7`` -> ``[0, 2, 5, 6, 7]`` (sorted, without repeats)."""
    numbers: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            low = int(first)
            high = int(last) if dash else low
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected partitions such as 0,2 or 0-3, got {text!r}") from None
        if low < 0 or high < low or high > INT32_MAX:
            raise argparse.ArgumentTypeError(f"bad partition range {part.strip()!r} in {text!r}")
        if high - low > 100_000:
            raise argparse.ArgumentTypeError(f"partition range {part.strip()!r} is too long")
        numbers.update(range(low, high + 1))
    return sorted(numbers)


def timestamp_ms(text: str) -> int:
    """argparse ``type=``: epoch milliseconds, or an ISO 8601 date-time (naive = local time)."""
    if text.isdigit():
        return _integer(text, 0, INT64_MAX)
    try:
        moment = datetime.fromisoformat(text)
        return int(moment.timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        raise argparse.ArgumentTypeError(
            f"expected epoch milliseconds or an ISO 8601 date-time such as 2024-05-01T12:00:00Z, got {text!r}"
        ) from None


__all__ = [
    "BOOTSTRAP_ENV",
    "COMMAND_CONFIG_ENV",
    "DEFAULT_BOOTSTRAP",
    "INT32_MAX",
    "INT64_MAX",
    "add_bootstrap_argument",
    "add_check",
    "add_command_config_argument",
    "add_topic_argument",
    "bootstrap_servers",
    "bounded_int",
    "key_value",
    "non_negative_int",
    "offset",
    "overrides",
    "partition_list",
    "port",
    "positive_int",
    "resolve",
    "resolve_bootstrap",
    "resolve_command_config",
    "timestamp_ms",
    "topic_name",
]
