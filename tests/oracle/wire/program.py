"""A program of raw requests, built once and run against each broker in turn.

A :class:`Program` is an ordered list of steps. A request step names its key (``API:case@vN``, unique
in the program), the API version and the request, or a function of the :class:`Session` that builds
it (for ids a broker handed out earlier, e.g. a member id from JoinGroup). An action step does
something that is not compared (wait until a new topic has a leader). :meth:`Program.run` plays the
steps in order on one broker over real sockets (:class:`~tidelog.testing.client.WireClient`) and
returns the normalised response of every compared step.

Versions come from the brokers themselves: :meth:`Program.versions` is every version of an API that
Apache Kafka and Tidelog both advertise in their ApiVersions answers (and the codec knows).

Requests that several connections need (a second group member whose JoinGroup is still pending) are
sent with ``pending=True`` on a named connection and read later with :meth:`Program.receive`.
Not thread-safe: one session per broker.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.oracle.wire.normalisation import Symbols, Tree, to_tree
from tests.oracle.wire.variation import MUTATIONS, fit, mutations_for, substitute
from tidelog.protocol.api_keys import API_REGISTRY, ApiKey
from tidelog.protocol.message import Message, in_ranges
from tidelog.protocol.messages import ApiVersionsRequest
from tidelog.protocol.primitives import ZERO_UUID
from tidelog.testing.client import ConnectionClosed, WireClient

Build = Message | Callable[["Session"], Message]

#: Versions Kafka advertises but does not serve. Kafka 4 dropped Produce v0-2 (KIP-896) yet still
#: advertises v0 as the minimum, because librdkafka treats a Produce range not starting at 0 as no
#: Produce support at all; a request in those versions gets its connection closed. Steps that change
#: state are not sent there (the logs would differ from then on); ``generated`` shows the refusal.
ADVERTISED_NOT_SERVED = {ApiKey.PRODUCE: (0, 2)}
CLOSED = {"<connection>": "closed by the broker"}
TIMEOUT = {"<connection>": "no response in time"}


@dataclass
class Session:
    """One broker's run of a program: connections, what it handed out, and its responses."""

    bootstrap: str
    timeout: float = 15.0
    symbols: Symbols = field(default_factory=Symbols)
    vars: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Tree] = field(default_factory=dict)
    raw: dict[str, Message | None] = field(default_factory=dict)
    clients: dict[str, WireClient] = field(default_factory=dict)
    pending: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # key -> (connection, api, version)
    seconds: dict[str, float] = field(default_factory=dict)  # API name -> time spent in its steps

    def client(self, name: str = "main") -> WireClient:
        if name not in self.clients:
            self.clients[name] = WireClient.connect(self.bootstrap, timeout=self.timeout, client_id=f"diff-{name}")
        return self.clients[name]

    def drop(self, name: str) -> None:
        client = self.clients.pop(name, None)
        if client is not None:
            client.close()

    def close(self) -> None:
        for name in list(self.clients):
            self.drop(name)

    def topic_id(self, name: str) -> uuid.UUID:
        """The id this broker gave a topic (learnt from an earlier response that named both)."""
        for topic_id, topic in self.symbols.topic_names.items():
            if topic == name:
                return topic_id
        raise KeyError(f"no topic id learnt for {name!r} yet (describe it with Metadata v10+ first)")

    def call(self, body: Message, version: int, connection: str = "main") -> Message:
        """An uncompared request (set-up, polling)."""
        return self.client(connection).request(fit(by_id(body, version, self), version), version)


@dataclass(frozen=True)
class Step:
    key: str
    api: int
    version: int
    build: Build
    compare: bool = True
    after: Callable[[Session, Message], None] | None = None
    connection: str = "main"
    pending: bool = False
    no_response: bool = False


@dataclass(frozen=True)
class Receive:
    """Read the response of an earlier ``pending`` step (recorded under that step's key)."""

    key: str
    after: Callable[[Session, Message], None] | None = None


@dataclass(frozen=True)
class Action:
    key: str
    run: Callable[[Session], None]


class Program:
    def __init__(self, kafka_ranges: dict[int, tuple[int, int]], tidelog_ranges: dict[int, tuple[int, int]]) -> None:
        self.kafka_ranges = kafka_ranges
        self.tidelog_ranges = tidelog_ranges
        self.steps: list[Step | Receive | Action] = []
        self._keys: set[str] = set()

    # ------------------------------------------------------------------------------ versions

    def versions(self, api: int) -> list[int]:
        """Every version of ``api`` both brokers serve (and the codec knows), lowest first."""
        if api not in self.kafka_ranges or api not in self.tidelog_ranges:
            return []
        entry = API_REGISTRY[api]
        kafka_lo = self.kafka_ranges[api][0]
        if api in ADVERTISED_NOT_SERVED and ADVERTISED_NOT_SERVED[api][0] <= kafka_lo <= ADVERTISED_NOT_SERVED[api][1]:
            kafka_lo = ADVERTISED_NOT_SERVED[api][1] + 1
        lo = max(kafka_lo, self.tidelog_ranges[api][0], entry.min_version)
        hi = min(self.kafka_ranges[api][1], self.tidelog_ranges[api][1], entry.max_version)
        return list(range(lo, hi + 1))

    def advertised_not_served(self, api: int) -> list[int]:
        """Versions both advertise that Kafka refuses (:data:`ADVERTISED_NOT_SERVED`)."""
        if api not in ADVERTISED_NOT_SERVED or api not in self.kafka_ranges or api not in self.tidelog_ranges:
            return []
        lo = max(self.kafka_ranges[api][0], self.tidelog_ranges[api][0], ADVERTISED_NOT_SERVED[api][0])
        hi = min(self.kafka_ranges[api][1], self.tidelog_ranges[api][1], ADVERTISED_NOT_SERVED[api][1])
        return list(range(lo, hi + 1))

    def top(self, api: int) -> int:
        """The highest version both serve (what a current client would use)."""
        return self.versions(api)[-1]

    # --------------------------------------------------------------------------------- steps

    def _add(self, step: Step | Receive | Action) -> None:
        if step.key in self._keys and not isinstance(step, Receive):
            raise ValueError(f"two steps named {step.key}")
        self._keys.add(step.key)
        self.steps.append(step)

    def request(self, case: str, version: int, build: Build, *, api: int | None = None, compare: bool = True,
                after: Callable[[Session, Message], None] | None = None, connection: str = "main",
                pending: bool = False, no_response: bool = False) -> str:
        api = api if api is not None else _api_of(build)
        key = f"{API_REGISTRY[api].name}:{case}@v{version}"
        self._add(Step(key, api, version, build, compare, after, connection, pending, no_response))
        return key

    def each_version(self, api: int, case: str, build: Callable[[int], Build], **options: Any) -> None:
        """The same case at every version both brokers serve; ``build(version)`` gives the request."""
        for v in self.versions(api):
            self.request(case, v, build(v), api=api, **options)

    def vary(self, api: int, case: str, template: Callable[[int], Build], *, only: tuple[str, ...] | None = None,
             versions: list[int] | None = None, **options: Any) -> None:
        """``template(version)`` varied by every mutation of :mod:`.variation` that applies at that
        version (``only``: just these), one step each: ``API:case/mutation@vN``."""
        request_cls = API_REGISTRY[api].request
        for v in versions if versions is not None else self.versions(api):
            for name in mutations_for(request_cls, v, only):
                role, value = MUTATIONS[name]
                self.request(f"{case}/{name}", v, _substituted(template(v), role, value, v), api=api, **options)

    def receive(self, key: str, after: Callable[[Session, Message], None] | None = None) -> None:
        self._add(Receive(key, after))

    def action(self, key: str, run: Callable[[Session], None]) -> None:
        self._add(Action(key, run))

    # ----------------------------------------------------------------------------------- run

    def compared_keys(self) -> list[str]:
        return [s.key for s in self.steps if isinstance(s, Step) and s.compare]

    def run(self, session: Session) -> Session:
        try:
            for step in self.steps:
                began = time.monotonic()
                if isinstance(step, Action):
                    step.run(session)
                    name = "actions"
                elif isinstance(step, Receive):
                    self._receive(session, step)
                    name = step.key.split(":")[0]
                else:
                    self._send(session, step)
                    name = API_REGISTRY[step.api].name
                session.seconds[name] = session.seconds.get(name, 0.0) + time.monotonic() - began
        finally:
            session.close()
        return session

    def _send(self, session: Session, step: Step) -> None:
        try:
            built = step.build(session) if callable(step.build) else step.build
            body = fit(by_id(built, step.version, session), step.version)
        except KeyError as e:  # an id an earlier step should have handed out is missing on this broker
            self._record_failure(session, step.key, {"<not sent>": f"no {e.args[0]} from an earlier step"},
                                 step.compare)
            return
        session.symbols.remember_request(body, step.version)
        try:
            client = session.client(step.connection)
            corr = client.send(body, step.version)
            if step.pending:
                session.pending[step.key] = (step.connection, step.api, step.version)
                return
            if step.no_response:
                # No answer is expected; an ApiVersions request behind it shows the connection is still up.
                client.request(ApiVersionsRequest(), 0)
                self._record(session, step.key, step.version, None, step.compare)
                return
            got, response = client.receive()
            if got != corr:
                raise AssertionError(f"{step.key}: response to correlation id {got}, expected {corr}")
        except ConnectionClosed:
            session.drop(step.connection)
            self._record_failure(session, step.key, CLOSED, step.compare)
            return
        except TimeoutError:
            session.drop(step.connection)
            self._record_failure(session, step.key, TIMEOUT, step.compare)
            return
        self._record(session, step.key, step.version, response, step.compare)
        if step.after is not None:
            step.after(session, response)

    def _receive(self, session: Session, step: Receive) -> None:
        connection, api, version = session.pending.pop(step.key)
        compare = next(s.compare for s in self.steps if isinstance(s, Step) and s.key == step.key)
        try:
            _, response = session.client(connection).receive(api, version)
        except ConnectionClosed:
            session.drop(connection)
            self._record_failure(session, step.key, CLOSED, compare)
            return
        except TimeoutError:
            session.drop(connection)
            self._record_failure(session, step.key, TIMEOUT, compare)
            return
        self._record(session, step.key, version, response, compare)
        if step.after is not None:
            step.after(session, response)

    @staticmethod
    def _record(session: Session, key: str, version: int, response: Message | None, compare: bool) -> None:
        # Uncompared answers are normalised too, so the ids they hand out (a member id from a set-up
        # JoinGroup) get their symbols in the same order on both brokers.
        tree = None if response is None else to_tree(response, version, session.symbols)
        if compare:
            session.raw[key] = response
            session.results[key] = tree

    @staticmethod
    def _record_failure(session: Session, key: str, tree: Tree, compare: bool) -> None:
        if compare:
            session.raw[key] = None
            session.results[key] = dict(tree)


def _substituted(build: Build, role: str, value: Any, version: int) -> Build:
    if callable(build):
        return lambda session: substitute(build(session), role, value, version)
    return substitute(build, role, value, version)


def _api_of(build: Build) -> int:
    if isinstance(build, Message):
        assert build.API_KEY is not None
        return build.API_KEY
    raise ValueError("a request built by a function needs api=")


#: The field that names a topic in a struct that also has a topic id.
_NAME_FIELDS = ("name", "topic")
#: The namespace of the ids given to topic names a broker does not know (the same on both brokers).
_UNKNOWN_NAMES = uuid.UUID("5b1ee7ab-4a1d-4c43-9f15-7a3e0d1e0c44")


def by_id(message: Message, version: int, session: Session) -> Message:
    """A copy of ``message`` in which each topic named by name, in a struct that says only its id at
    ``version`` (Produce 13, OffsetCommit / OffsetFetch 10, TxnOffsetCommit 6 ...), gets this broker's
    id for it (a name no earlier answer gave an id: a fixed id derived from it, unknown to both), so
    the cases are written once, with names, for every version. An id already set stays."""
    out = copy.deepcopy(message)
    _by_id(out, version, session)
    return out


def _by_id(struct: Any, version: int, session: Session) -> None:
    fields = {f.name: f for f in struct.SCHEMA}
    id_field = fields.get("topic_id")
    name_field = next((fields[n] for n in _NAME_FIELDS if n in fields), None)
    if (id_field is not None and name_field is not None and in_ranges(version, id_field.versions)
            and not in_ranges(version, name_field.versions) and struct.topic_id == ZERO_UUID):
        name = getattr(struct, name_field.name)
        if name:
            try:
                struct.topic_id = session.topic_id(name)
            except KeyError:
                struct.topic_id = uuid.uuid5(_UNKNOWN_NAMES, name)
    for f in struct.SCHEMA:
        if f.struct is None or not in_ranges(version, f.versions):
            continue
        value = getattr(struct, f.name)
        for item in value if isinstance(value, list) else ([value] if value is not None else []):
            _by_id(item, version, session)


def fits(message: Message, version: int) -> bool:
    """Whether every non-default field of ``message`` exists at ``version`` (it can be encoded as it is)."""
    try:
        message.encode(version)
    except Exception:
        return False
    return True


__all__ = ["CLOSED", "TIMEOUT", "Action", "Program", "Receive", "Session", "Step", "fits", "in_ranges"]
