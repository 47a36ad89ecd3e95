"""Typed config values: a :class:`ConfigDef` (a key, how its value is parsed and checked, its default)
and the parsers the config tables in :mod:`tidelog.config` are built from. A parser takes the key (for
its error message) and the raw value, and returns the checked value or raises :class:`ConfigError`
naming the key, the value and what is allowed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tidelog.errors import ConfigError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


# ----------------------------------------------------------------------------------------- parsing


def parse_int(lo: int, hi: int) -> Callable[[str, Any], int]:
    def parse(key: str, raw: Any) -> int:
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise ConfigError(f"Invalid value {raw!r} for configuration {key}: not a number") from None
        if not lo <= value <= hi:
            raise ConfigError(f"Invalid value {value} for configuration {key}: must be between {lo} and {hi}")
        return value

    return parse


def parse_float(lo: float, hi: float) -> Callable[[str, Any], float]:
    def parse(key: str, raw: Any) -> float:
        try:
            value = float(str(raw).strip())
        except ValueError:
            raise ConfigError(f"Invalid value {raw!r} for configuration {key}: not a number") from None
        if not lo <= value <= hi:
            raise ConfigError(f"Invalid value {value} for configuration {key}: must be between {lo} and {hi}")
        return value

    return parse


def parse_bool(key: str, raw: Any) -> bool:
    text = str(raw).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ConfigError(f"Invalid value {raw!r} for configuration {key}: expected true or false")


def parse_choice(*choices: str) -> Callable[[str, Any], str]:
    def parse(key: str, raw: Any) -> str:
        value = str(raw).strip()
        if value not in choices:
            raise ConfigError(f"Invalid value {value!r} for configuration {key}: must be one of {', '.join(choices)}")
        return value

    return parse


def parse_choice_ignoring_case(*choices: str) -> Callable[[str, Any], str]:
    """One of ``choices`` in any case (Kafka's CaseInsensitiveValidString); the value is lower-cased."""
    def parse(key: str, raw: Any) -> str:
        value = str(raw).strip().lower()
        if value not in choices:
            raise ConfigError(f"Invalid value {str(raw).strip()!r} for configuration {key}: must be one of "
                              f"{', '.join(choices)} (in any case)")
        return value

    return parse


def parse_cleanup_policy(key: str, raw: Any) -> str:
    items = [p.strip() for p in str(raw).split(",") if p.strip()]
    if not items or any(p not in ("delete", "compact") for p in items) or len(set(items)) != len(items):
        raise ConfigError(f"Invalid value {raw!r} for configuration {key}: must be delete, compact or compact,delete")
    return ",".join(sorted(items))  # canonical: "compact,delete"


def parse_string(key: str, raw: Any) -> str:
    return str(raw).strip()


def parse_list(key: str, raw: Any) -> tuple[str, ...]:
    items = tuple(p.strip() for p in str(raw).split(",") if p.strip())
    if not items:
        raise ConfigError(f"Invalid value {raw!r} for configuration {key}: expected a comma-separated list")
    return items


def parse_log_dirs(key: str, raw: Any) -> tuple[str, ...]:
    """``log.dirs``: directory paths separated by commas. An entry that cannot be meant as a path is
    refused, so that text pasted from a program's output (``/tmp/x/broker-1, console http://...``) does
    not silently become directories named after it: a URL (``://``), a control character, or a second
    path after a space (``/a /b``: log dirs are separated by commas)."""
    dirs = parse_list(key, raw)
    for d in dirs:
        why = None
        if "://" in d:
            why = "a URL, not a directory path"
        elif any(ord(c) < 32 for c in d):
            why = "a control character in a directory path"
        elif any(c.isspace() and d[i + 1:i + 2] in ("/", "~") for i, c in enumerate(d)):
            why = "two paths separated by a space (separate log dirs with commas)"
        if why is not None:
            raise ConfigError(f"Invalid value {d!r} for configuration {key}: {why}")
    return dirs


SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def parse_sasl_mechanisms(key: str, raw: Any) -> tuple[str, ...]:
    items = tuple(p.strip().upper() for p in str(raw).split(",") if p.strip())
    for item in items:
        if item not in SASL_MECHANISMS:
            raise ConfigError(f"Invalid value {item!r} for configuration {key}: Tidelog serves "
                              f"{', '.join(SASL_MECHANISMS)}")
    return items


def parse_pem_type(key: str, raw: Any) -> str:
    value = str(raw).strip().upper()
    if value != "PEM":
        raise ConfigError(f"Invalid value {str(raw).strip()!r} for configuration {key}: Tidelog reads PEM only "
                          "(convert a JKS or PKCS12 store with keytool/openssl, see docs/security.md)")
    return value



#: ``console.authentication`` values (empty: decided by ``authorizer.class.name``).
CONSOLE_AUTHENTICATIONS = ("none", "sasl")


def parse_console_authentication(key: str, raw: Any) -> str:
    value = str(raw).strip().lower()
    if value and value not in CONSOLE_AUTHENTICATIONS:
        raise ConfigError(f"Invalid value {raw!r} for configuration {key}: must be empty, none or sasl")
    return value


#: ``authorizer.class.name`` values Tidelog serves (Kafka's class names).
AUTHORIZER_CLASS_NAMES = ("org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                          "kafka.security.authorizer.AclAuthorizer")


def parse_authorizer(key: str, raw: Any) -> str:
    value = str(raw).strip()
    if value and value not in AUTHORIZER_CLASS_NAMES:
        raise ConfigError(f"Invalid value {value!r} for configuration {key}: must be empty or one of "
                          + ", ".join(AUTHORIZER_CLASS_NAMES))
    return value


def parse_super_users(key: str, raw: Any) -> tuple[str, ...]:
    users = tuple(u.strip() for u in str(raw).split(";") if u.strip())
    for user in users:
        kind, sep, name = user.partition(":")
        if not sep or not kind or not name:
            raise ConfigError(f"Invalid value {raw!r} for configuration {key}: {user!r} is not a principal "
                              "(expected Type:name, e.g. User:admin)")
    return users


COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

#: ``confluent.{key,value}.subject.name.strategy`` values: Confluent's serializers' class names (the
#: short names are accepted too and stored as the class name).
SUBJECT_NAME_STRATEGY_PACKAGE = "io.confluent.kafka.serializers.subject."
TOPIC_NAME_STRATEGY = SUBJECT_NAME_STRATEGY_PACKAGE + "TopicNameStrategy"
RECORD_NAME_STRATEGY = SUBJECT_NAME_STRATEGY_PACKAGE + "RecordNameStrategy"
TOPIC_RECORD_NAME_STRATEGY = SUBJECT_NAME_STRATEGY_PACKAGE + "TopicRecordNameStrategy"
SUBJECT_NAME_STRATEGIES = (TOPIC_NAME_STRATEGY, RECORD_NAME_STRATEGY, TOPIC_RECORD_NAME_STRATEGY)


def parse_subject_name_strategy(key: str, raw: Any) -> str:
    value = str(raw).strip()
    full = value if "." in value else SUBJECT_NAME_STRATEGY_PACKAGE + value
    if full not in SUBJECT_NAME_STRATEGIES:
        raise ConfigError(f"Invalid value {value!r} for configuration {key}: must be one of "
                          + ", ".join(SUBJECT_NAME_STRATEGIES))
    return full


@dataclass(frozen=True)
class ConfigDef:
    name: str
    parse: Callable[[str, Any], Any]
    default: Any
    doc: str
    #: server.properties key that supplies the default of a topic config (None for broker-only keys).
    broker_synonym: str | None = None
    topic: bool = True
    #: A secret (Kafka's PASSWORD type): never logged, DescribeConfigs reports it sensitive with a null value.
    sensitive: bool = False


def long_value(lo: int = 0) -> Callable[[str, Any], int]:
    return parse_int(lo, LONG_MAX)


def int_value(lo: int = 0) -> Callable[[str, Any], int]:
    return parse_int(lo, INT_MAX)


def optional(parse: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    """An empty value means none."""
    return lambda key, raw: None if str(raw).strip() == "" else parse(key, raw)


__all__ = [
    "AUTHORIZER_CLASS_NAMES",
    "COMPRESSION_TYPES",
    "CONSOLE_AUTHENTICATIONS",
    "INT_MAX",
    "LONG_MAX",
    "RECORD_NAME_STRATEGY",
    "SASL_MECHANISMS",
    "SUBJECT_NAME_STRATEGIES",
    "TOPIC_NAME_STRATEGY",
    "TOPIC_RECORD_NAME_STRATEGY",
    "ConfigDef",
    "int_value",
    "long_value",
    "optional",
    "parse_authorizer",
    "parse_bool",
    "parse_choice",
    "parse_choice_ignoring_case",
    "parse_cleanup_policy",
    "parse_console_authentication",
    "parse_float",
    "parse_int",
    "parse_list",
    "parse_pem_type",
    "parse_sasl_mechanisms",
    "parse_string",
    "parse_subject_name_strategy",
    "parse_super_users",
]
