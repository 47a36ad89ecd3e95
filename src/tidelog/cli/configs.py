"""``tidelog configs describe|alter``: broker and topic configs, as ``kafka-configs.sh`` handles them
(DescribeConfigs and IncrementalAlterConfigs through the admin API), and the config table that
``tidelog topics describe --all`` shares.

The entity is named as Kafka's tool names it: ``--entity-type brokers|topics`` with ``--entity-name``,
or the shortcuts ``--broker ID`` and ``--topic NAME``. (Kafka's ``--entity-default``, the cluster-wide
broker default, is left out: confluent-kafka cannot address a broker resource with an empty name. On a
single node the broker's own dynamic configs are the cluster's.) ``describe`` without ``--all`` lists the values set
dynamically on the entity (overrides); with ``--all`` every effective config::

    NAME          VALUE    SOURCE                DEFAULT    READ-ONLY
    retention.ms  3600000  DYNAMIC_TOPIC_CONFIG  604800000  false

SOURCE is where the value comes from (DescribeConfigs' config source) and DEFAULT the built-in default:
the value itself when its source is DEFAULT_CONFIG, else the DEFAULT_CONFIG synonym, written
``name=value`` when the synonym has another name (``retention.ms``'s default is
``log.retention.hours=168``), ``-`` where the broker reports none. ``alter`` takes Kafka's
``--add-config k1=v1,k2=[a,b]`` (a list value in brackets) and ``--delete-config k1,k2``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from tidelog.cli.argument import add_check, topic_name
from tidelog.cli.client import REQUEST_TIMEOUT_S, CliError, Cluster, command, describe_error
from tidelog.cli.table import MISSING, table

ENTITY_TYPES = {"brokers": ResourceType.BROKER, "topics": ResourceType.TOPIC}
_DYNAMIC = {ConfigSource.DYNAMIC_TOPIC_CONFIG.value, ConfigSource.DYNAMIC_BROKER_CONFIG.value,
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value}
_HEADERS = ["NAME", "VALUE", "SOURCE", "DEFAULT", "READ-ONLY"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "configs", help="describe or change broker and topic configs (kafka-configs.sh)",
        description="Describe or change the configs of a broker or a topic through the admin API "
        "(DescribeConfigs, IncrementalAlterConfigs).",
    )
    actions = p.add_subparsers(dest="configs_command", metavar="ACTION", required=True)

    describe = actions.add_parser(
        "describe", help="show an entity's config overrides, or with --all every config",
        description="Show the configs set dynamically on a broker or topic; with --all, every effective "
        "config with its source and default value. Without a name: every broker (or every topic).",
    )
    _add_entity_arguments(describe)
    describe.add_argument("--all", action="store_true",
                          help="every effective config, with its source and built-in default")
    add_check(describe, _entity_check(require_name=False))
    command(describe, _describe)

    alter = actions.add_parser(
        "alter", help="set or remove config overrides of a broker or topic",
        description="Change configs with IncrementalAlterConfigs: --add-config sets values, --delete-config "
        "removes overrides (the entity falls back to its default). Configs you do not name stay as they are.",
    )
    _add_entity_arguments(alter)
    alter.add_argument("--add-config", type=_config_assignments, action="append", default=[],
                       metavar="K=V[,K=V...]", help="configs to set; a list value goes in brackets: k=[a,b] "
                       "(repeatable)")
    alter.add_argument("--delete-config", type=_config_names, action="append", default=[],
                       metavar="K[,K...]", help="config overrides to remove (repeatable)")
    add_check(alter, _entity_check(require_name=True))
    add_check(alter, _changes_check)
    command(alter, _alter)


def _add_entity_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--entity-type", choices=sorted(ENTITY_TYPES), help="brokers or topics")
    parser.add_argument("--entity-name", metavar="NAME", help="the broker id or topic name")
    parser.add_argument("--broker", metavar="ID", help="the same as --entity-type brokers --entity-name ID")
    parser.add_argument("--topic", type=topic_name, metavar="NAME",
                        help="the same as --entity-type topics --entity-name NAME")


def _entity_check(require_name: bool):
    def check(args: argparse.Namespace) -> None:
        shortcuts = [s for s in (args.broker is not None and "--broker", args.topic is not None and "--topic") if s]
        if len(shortcuts) > 1 or (shortcuts and (args.entity_type or args.entity_name)):
            raise ValueError("name one entity: --entity-type with --entity-name, or --broker ID, or --topic NAME")
        if args.broker is not None:
            args.entity_type, args.entity_name = "brokers", args.broker
        elif args.topic is not None:
            args.entity_type, args.entity_name = "topics", args.topic
        if args.entity_type is None:
            raise ValueError("say which entity: --entity-type brokers|topics (or --broker ID, --topic NAME)")
        if args.entity_type == "brokers" and args.entity_name is not None and not args.entity_name.isdigit():
            raise ValueError(f"a broker is named by its id, a number; got {args.entity_name!r}")
        if args.entity_type == "topics" and args.entity_name is not None:
            try:
                topic_name(args.entity_name)
            except argparse.ArgumentTypeError as e:
                raise ValueError(str(e)) from None
        if require_name and args.entity_name is None:
            raise ValueError("name the entity to change: --entity-name NAME (or --broker ID, --topic NAME)")

    return check


def _changes_check(args: argparse.Namespace) -> None:
    args.set = [kv for group in args.add_config for kv in group]
    args.delete = [k for group in args.delete_config for k in group]
    if not args.set and not args.delete:
        raise ValueError("nothing to change: give --add-config K=V and/or --delete-config K")
    both = {k for k, _ in args.set} & set(args.delete)
    if both:
        raise ValueError(f"{', '.join(sorted(both))}: both set and deleted")


# ------------------------------------------------------------------------------------------ values


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside square brackets: ``a=1,b=[x,y]`` -> ``["a=1", "b=[x,y]"]``."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise argparse.ArgumentTypeError(f"unbalanced ']' in {text!r}")
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth:
        raise argparse.ArgumentTypeError(f"unbalanced '[' in {text!r}")
    parts.append("".join(current))
    return parts


def _config_assignments(text: str) -> list[tuple[str, str]]:
    """``k1=v1,k2=[a,b]`` -> ``[("k1", "v1"), ("k2", "a,b")]``."""
    out = []
    for part in _split_top_level(text):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE[,KEY=VALUE...], got {text!r}")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        out.append((key.strip(), value))
    return out


def _config_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected KEY[,KEY...], got {text!r}")
    return names


# ------------------------------------------------------------------------------------------ the table


def source_name(entry: ConfigEntry) -> str:
    source = entry.source if isinstance(entry.source, ConfigSource) else _to_source(entry.source)
    return source.name if isinstance(source, ConfigSource) else str(entry.source)


def _to_source(value: object) -> ConfigSource | object:
    try:
        return ConfigSource(int(value))  # type: ignore[call-overload]
    except (ValueError, TypeError):
        return value


def source_id(entry: ConfigEntry) -> int:
    """confluent-kafka hands the source over as a plain int in some versions, as a ConfigSource in others."""
    return entry.source.value if isinstance(entry.source, ConfigSource) else int(entry.source)


def display_value(entry: ConfigEntry) -> str:
    if entry.is_sensitive:
        return "<sensitive>"
    if entry.value is None:
        return "null"
    return entry.value if entry.value != "" else '""'


def default_value(entry: ConfigEntry) -> str:
    """The built-in default: the entry's own value when that is the default, else its DEFAULT_CONFIG
    synonym (``name=value`` when the synonym is another config, possibly in another unit), or ``-``."""
    if source_id(entry) == ConfigSource.DEFAULT_CONFIG.value:
        return display_value(entry)
    for synonym in (entry.synonyms or {}).values():
        if source_id(synonym) == ConfigSource.DEFAULT_CONFIG.value:
            value = display_value(synonym)
            return value if synonym.name == entry.name else f"{synonym.name}={value}"
    return MISSING


def config_table(entries: Iterable[ConfigEntry], dynamic_only: bool) -> list[str]:
    """The lines of the config table (header included), sorted by name."""
    rows = [
        [e.name, display_value(e), source_name(e), default_value(e), str(bool(e.is_read_only)).lower()]
        for e in sorted(entries, key=lambda e: e.name)
        if not dynamic_only or source_id(e) in _DYNAMIC
    ]
    return table(_HEADERS, rows)


def describe_configs(admin: AdminClient, resources: Sequence[ConfigResource]) -> dict[str, dict[str, ConfigEntry]]:
    """DescribeConfigs: ``{resource name: {config name: entry}}``; the first failure is a CliError."""
    if not resources:
        return {}
    out = {}
    for resource, future in admin.describe_configs(list(resources), request_timeout=REQUEST_TIMEOUT_S).items():
        try:
            out[resource.name] = future.result()
        except KafkaException as e:
            raise CliError(f"cannot describe the configs of {_label(resource)}: {describe_error(e)}") from None
    return out


def _label(resource: ConfigResource) -> str:
    if resource.restype == ResourceType.BROKER:
        return f"broker {resource.name}"
    return f"topic {resource.name!r}"


# ------------------------------------------------------------------------------------------ actions


def _resources(args: argparse.Namespace, admin: AdminClient, metadata) -> list[ConfigResource]:
    restype = ENTITY_TYPES[args.entity_type]
    if args.entity_name is not None:
        names = [args.entity_name]
    elif restype == ResourceType.BROKER:
        names = [str(b) for b in sorted(metadata.brokers)]
    else:
        names = sorted(metadata.topics)
    if restype == ResourceType.TOPIC:
        missing = [n for n in names if n not in metadata.topics]
        if missing:
            raise CliError(f"topic {missing[0]!r} does not exist")
    elif args.entity_name is not None and int(args.entity_name) not in metadata.brokers:
        known = ", ".join(str(b) for b in sorted(metadata.brokers)) or "none"
        raise CliError(f"broker {args.entity_name} is not in the cluster (brokers: {known})")
    return [ConfigResource(restype, n) for n in names]


def _describe(args: argparse.Namespace) -> int:
    admin, metadata = Cluster(args.bootstrap_server, args.client_properties).connect()
    resources = _resources(args, admin, metadata)
    described = describe_configs(admin, resources)
    for i, resource in enumerate(resources):
        if i:
            print()
        kind = "All configs" if args.all else "Dynamic configs"
        print(f"{kind} for {_label(resource)}:")
        for line in config_table(described[resource.name].values(), dynamic_only=not args.all):
            print(line)
    return 0


def _alter(args: argparse.Namespace) -> int:
    admin, metadata = Cluster(args.bootstrap_server, args.client_properties).connect()
    [resource] = _resources(args, admin, metadata)
    alter_configs(admin, resource, args.set, args.delete)
    done = [f"set {k}={v}" for k, v in args.set] + [f"deleted {k}" for k in args.delete]
    print(f"Updated the configs of {_label(resource)}: {', '.join(done)}.")
    return 0


def alter_configs(admin: AdminClient, resource: ConfigResource, set_configs: Sequence[tuple[str, str]],
                  delete_configs: Sequence[str]) -> None:
    """IncrementalAlterConfigs SET / DELETE on one resource; a failure is a CliError."""
    changes = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in set_configs]
    changes += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete_configs]
    target = ConfigResource(resource.restype, resource.name, incremental_configs=changes)
    for _, future in admin.incremental_alter_configs([target], request_timeout=REQUEST_TIMEOUT_S).items():
        try:
            future.result()
        except KafkaException as e:
            raise CliError(f"cannot change the configs of {_label(resource)}: {describe_error(e)}") from None


__all__ = ["add_parser", "alter_configs", "config_table", "default_value", "describe_configs", "source_id"]
