"""Client quotas as metadata (KIP-13, KIP-55, KIP-124, KIP-546): who they apply to, which keys they
have, how AlterClientQuotas changes them and how DescribeClientQuotas filters them. Pure: no I/O.

An *entity* is a set of (entity type, name) pairs: ``user`` and/or ``client-id`` (or ``ip``, stored but
not enforced), a name of ``None`` being the type's default (``<default>`` in ``kafka-configs.sh`` and
ZooKeeper). It is kept as a tuple sorted by type, e.g. ``(("client-id", None), ("user", "alice"))``
for "alice's clients without a quota of their own". Names are kept as the client sent them; the
ZooKeeper layout sanitises them (:func:`sanitize`) as Kafka does.

Validation is Kafka's controller's (``ClientQuotaControlManager``): every error is INVALID_REQUEST
with Kafka's message, per entity; the valid entities of a request are applied even when others fail.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

from tidelog.errors import ErrorCode, KafkaError

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
#: How ZooKeeper (and kafka-configs.sh) names an entity type's default.
DEFAULT_NAME = "<default>"

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1
#: Quota keys of user / client-id entities and their types (Kafka's QuotaConfig).
CLIENT_QUOTA_KEYS = {PRODUCER_BYTE_RATE: "long", CONSUMER_BYTE_RATE: "long", REQUEST_PERCENTAGE: "double",
                     CONTROLLER_MUTATION_RATE: "double"}
IP_QUOTA_KEYS = {CONNECTION_CREATION_RATE: "int"}

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple[tuple[str, "str | None"], ...]
#: Every entity's quotas: entity -> {key: value}; entities without quotas are absent.
ClientQuotas = Mapping[Entity, Mapping[str, float]]


def entity(**names: str | None) -> Entity:
    """``entity(user="alice", client_id=None)``: keyword names use ``_`` for ``-``."""
    return tuple(sorted((k.replace("_", "-"), v) for k, v in names.items()))


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: URL-encoding (UTF-8) keeping only letters, digits and ``._-~``,
    so that any user or client id makes a valid znode name (and ``<default>`` cannot collide)."""
    return quote(name, safe="")


def desanitize(name: str) -> str:
    return unquote(name)


def describe_entity(e: Entity) -> str:
    """``user=alice, client-id=<default>`` for messages and the CLI."""
    return ", ".join(f"{t}={DEFAULT_NAME if n is None else n}" for t, n in e)


@dataclass(frozen=True, slots=True)
class QuotaOp:
    key: str
    value: float | None  # None: remove the key


@dataclass(frozen=True, slots=True)
class AlterResult:
    entity: Sequence[tuple[str, str | None]]  # as the request named it
    error: KafkaError | None


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_REQUEST, message)


def validate_entity(components: Sequence[tuple[str, str | None]]) -> tuple[Entity, dict[str, str]]:
    """The entity in canonical form and its quota keys (key -> type); raises KafkaError."""
    if not components:
        raise _invalid("Invalid empty client quota entity")
    seen: dict[str, str | None] = {}
    for entity_type, name in components:
        if entity_type in seen:
            raise _invalid(f"Invalid client quota entity, duplicate entity entry {entity_type}")
        if entity_type not in ENTITY_TYPES:
            raise _invalid(f"Unhandled client quota entity type: {entity_type}")
        if name is not None and name == "":
            raise _invalid(f"Empty {entity_type} not supported")
        seen[entity_type] = name
    if IP in seen:
        if USER in seen or CLIENT_ID in seen:
            raise _invalid("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
        ip = seen[IP]
        if ip is not None:
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                raise _invalid(f"{ip} is not a valid IP or resolvable host.") from None
        keys = IP_QUOTA_KEYS
    else:
        keys = CLIENT_QUOTA_KEYS
    return tuple(sorted(seen.items())), keys


def validate_value(keys: Mapping[str, str], key: str, value: float) -> None:
    kind = keys.get(key)
    if kind is None:
        raise _invalid(f"Invalid configuration key {key}")
    if not value > 0.0:  # also refuses NaN
        raise _invalid(f"Quota {key} must be greater than 0")
    if kind == "double":
        return
    if (kind == "int" and value > _INT_MAX) or value > _LONG_MAX:
        raise _invalid(f"Proposed value for {key} is too large for {'an INT' if kind == 'int' else 'a LONG'}.")
    if abs(math.fmod(value, 1.0)) > 1e-6:
        raise _invalid(f"{key} cannot be a fractional value.")


def alter(quotas: ClientQuotas, alterations: Sequence[tuple[Sequence[tuple[str, str | None]], Sequence[QuotaOp]]],
          ) -> tuple[dict[Entity, dict[str, float]], list[AlterResult]]:
    """Apply AlterClientQuotas entries in order: the new quotas and one result per entry. An entry with
    an error changes nothing; the others apply (Kafka's controller does the same)."""
    updated = {e: dict(v) for e, v in quotas.items()}
    results = []
    for components, ops in alterations:
        try:
            canonical, keys = validate_entity(components)
            changes: dict[str, float | None] = {}
            for op in ops:
                if op.key in changes:
                    raise _invalid(f"Duplicate quota key {op.key} not updating quota for this entity "
                                   f"{describe_entity(canonical)}")
                if op.value is not None:
                    validate_value(keys, op.key, op.value)
                changes[op.key] = op.value
        except KafkaError as e:
            results.append(AlterResult(components, e))
            continue
        current = updated.get(canonical, {})
        for key, value in changes.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = float(value)
        if current:
            updated[canonical] = current
        else:
            updated.pop(canonical, None)
        results.append(AlterResult(components, None))
    return updated, results


def describe(quotas: ClientQuotas, components: Sequence[tuple[str, int, str | None]], strict: bool,
             ) -> list[tuple[Entity, dict[str, float]]]:
    """DescribeClientQuotas: the entities matching the filter (entity type, match type, match), sorted.
    Raises KafkaError INVALID_REQUEST (or UNSUPPORTED_VERSION for an unknown entity type) as Kafka does."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for entity_type, match_type, match in components:
        if not entity_type:
            raise _invalid("Invalid empty entity type.")
        if entity_type in exact or entity_type in specified:
            raise _invalid(f"Entity type {entity_type} cannot appear more than once in the filter.")
        if entity_type not in ENTITY_TYPES:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise _invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[entity_type] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise _invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[entity_type] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise _invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            specified.add(entity_type)
        else:
            raise _invalid(f"Unknown match type {match_type}")
    named = set(exact) | specified
    if IP in named and (USER in named or CLIENT_ID in named):
        raise _invalid("Invalid entity filter component combination. IP filter component should not be used "
                       "with user or clientId filter component.")
    found = []
    for e, values in quotas.items():
        names = dict(e)
        if strict and len(names) != len(named):
            continue
        if any(t not in names or names[t] != n for t, n in exact.items()):
            continue
        if any(t not in names for t in specified):
            continue
        found.append((e, dict(sorted(values.items()))))
    return sorted(found, key=lambda item: [(t, n is not None, n or "") for t, n in item[0]])


def to_json(quotas: ClientQuotas) -> list[dict]:
    """The JSON form kept by the embedded store: ``[{"entity": {"user": "alice"}, "quotas": {...}}]``."""
    return [{"entity": dict(e), "quotas": dict(sorted(v.items()))}
            for e, v in sorted(quotas.items(), key=lambda item: [(t, n or "") for t, n in item[0]])]


def from_json(raw: Sequence[Mapping]) -> dict[Entity, dict[str, float]]:
    return {tuple(sorted(item["entity"].items())): {k: float(v) for k, v in item["quotas"].items()}
            for item in raw if item.get("quotas")}


__all__ = [
    "CLIENT_ID", "CLIENT_QUOTA_KEYS", "CONNECTION_CREATION_RATE", "CONSUMER_BYTE_RATE", "CONTROLLER_MUTATION_RATE",
    "DEFAULT_NAME", "ENTITY_TYPES", "IP", "IP_QUOTA_KEYS", "MATCH_DEFAULT", "MATCH_EXACT", "MATCH_SPECIFIED",
    "PRODUCER_BYTE_RATE", "REQUEST_PERCENTAGE", "USER", "AlterResult", "ClientQuotas", "Entity", "QuotaOp",
    "alter", "desanitize", "describe", "describe_entity", "entity", "from_json", "sanitize", "to_json",
    "validate_entity", "validate_value",
]
