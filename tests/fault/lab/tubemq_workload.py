"""The TubeMQ front end under faults (Jepsen's checklist, issue 23): TubeMQ producers and consumers,
speaking TubeMQ's RPC with :class:`~tidelog.testing.tubemq.TubeWireClient`, against one broker that
the nemesis kills (-9) and restarts, or pauses (SIGSTOP / SIGCONT).

    python -m tests.fault.lab.tubemq_workload --duration 60 --seed 7

* :class:`TubeProducer` -- sendMessageP2B of unique values ``<process>-<n>`` over the partitions
  (``send`` ops, as :mod:`tests.fault.lab.history` describes them, ``offset`` = the message id). An
  answer that is lost (connection closed, timeout) is ``info`` and the producer sends the *same*
  value again once it reconnects, as TubeMQ's clients retry: a value may then be written twice,
  never more often than it was sent.
* :class:`TubeConsumer` -- a member of one TubeMQ group: consumerRegisterC2M, heartbeats whose
  rebalance events it obeys (CONNECT: consumerRegisterC2B, recorded as ``assign``; DISCONNECT:
  unregister, ``revoke``) and confirms, getMessagesC2B (``poll``) and consumerCommitC2B (``commit``,
  ``{"offsets": {partition: next offset}}``) per owned partition. When the broker goes away it
  revokes everything and registers again. Each consumerRegisterC2B records ``resume``
  (``{"partition", "offset"}``: the Kafka offset the broker will deliver from, its ``currOffset`` / 28).
* the nemesis (:class:`KillBroker`, :class:`PauseBroker`) works on a
  :class:`~tidelog.testing.BrokerProcess` whose TubeMQ listeners have fixed ports, so clients find
  it again after a restart.

The checker reuses the lab's: :func:`~tests.fault.lab.history.check` (no acknowledged message lost,
no stranger, offsets never reused), :func:`~tests.fault.lab.groups.check_polls` (poll-skip,
nonmonotonic poll, committed-offset regression at a hand-over), plus :func:`check_duplicates`
(copies of a value beyond its sends) and :func:`check_resumes` (a registration that resumes below the
last acknowledged commit, or above every commit that may have happened).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from tests.fault.lab.groups import check_polls
from tests.fault.lab.history import History, Verdict, _limit, check
from tests.fault.lab.nemesis import Mixed, Nemesis, run_schedule
from tests.fault.lab.workload import CLIENT_LOG, final_read
from tidelog.cli.zookeeper import free_port
from tidelog.protocol.tubemq.generated import broker_service_pb2 as broker_pb
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.protocol.tubemq.message import checksum
from tidelog.protocol.tubemq.rpc import Method, Service
from tidelog.testing import BrokerProcess
from tidelog.testing.tubemq import TUBEMQ_OVERRIDES, ConnectionClosed, TubeRpcError, TubeWireClient

#: TubeMQ's ratio of its offsets to Kafka's (docs/tubemq.md "Topics, partitions, offsets").
INDEX_BYTES = 28
#: The errors after which the outcome of a request is unknown (the broker died or stopped).
LOST = (OSError, ConnectionClosed, socket.timeout)
CONNECT, DISCONNECT, ONLY_CONNECT, ONLY_DISCONNECT = 1, 2, 10, 20


def tubemq_broker(root: Path, overrides: dict[str, str] | None = None) -> tuple[BrokerProcess, tuple[str, str]]:
    """A started broker whose TubeMQ master and broker services listen on fixed ports (kept across
    restarts); returns it and ``(master, broker)`` addresses."""
    master, brk = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    config = {**TUBEMQ_OVERRIDES, "tubemq.master.listener": master, "tubemq.broker.listener": brk,
              "group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
              "group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "6000",
              **(overrides or {})}
    broker = BrokerProcess(root, overrides=config).start()
    return broker, (master, brk)


class KillBroker(Nemesis):
    name = "kill"

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker
        self.down = False

    def start(self) -> str:
        self.broker.kill()
        self.down = True
        return "kill -9 the broker"

    def heal(self) -> str:
        if not self.down:
            return "nothing to restart"
        self.broker.start()
        self.down = False
        return "restarted the broker"


class PauseBroker(Nemesis):
    name = "pause"

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker
        self.paused: int | None = None

    def start(self) -> str:
        assert self.broker.proc is not None
        self.paused = self.broker.proc.pid
        os.kill(self.paused, signal.SIGSTOP)
        return "SIGSTOP the broker"

    def heal(self) -> str:
        if self.paused is None:
            return "nothing to resume"
        pid, self.paused = self.paused, None
        os.kill(pid, signal.SIGCONT)
        return "SIGCONT the broker"


class Alternate(Nemesis):
    """Each of ``parts`` in turn."""

    name = "mixed"

    def __init__(self, *parts: Nemesis) -> None:
        self.parts = parts
        self.turn = 0
        self.current: Nemesis | None = None

    def start(self) -> str:
        self.current = self.parts[self.turn % len(self.parts)]
        self.turn += 1
        return f"[{self.current.name}] {self.current.start()}"

    def heal(self) -> str:
        current, self.current = self.current, None
        return current.heal() if current is not None else "nothing to heal"


def make_nemesis(name: str, broker: BrokerProcess, rng: random.Random) -> Nemesis:
    if name == "kill":
        return KillBroker(broker)
    if name == "pause":
        return PauseBroker(broker)
    if name == "mixed":  # kill, pause, kill ... (a kill first, so that even a short run has one)
        return Alternate(KillBroker(broker), PauseBroker(broker))
    if name == "random":
        return Mixed(KillBroker(broker), PauseBroker(broker), rng=rng)
    raise ValueError(f"unknown nemesis {name!r} (kill, pause, mixed, random)")


class _TubeClient(threading.Thread):
    def __init__(self, process: str, endpoints: tuple[str, str], topic: str, partitions: int, history: History,
                 stop: threading.Event) -> None:
        super().__init__(name=process, daemon=True)
        self.process, self.endpoints, self.topic, self.partitions = process, endpoints, topic, partitions
        self.history, self.stop_event = history, stop

    def _connect(self, which: int) -> TubeWireClient | None:
        """A connection to the master (0) or broker (1) service, retried until the run stops."""
        while not self.stop_event.is_set():
            try:
                return TubeWireClient.connect(self.endpoints[which], timeout=3.0)
            except OSError:
                self.stop_event.wait(0.3)
        return None


class TubeProducer(_TubeClient):
    def run(self) -> None:
        n, client, value = 0, None, None
        while not self.stop_event.is_set():
            if client is None and (client := self._connect(1)) is None:
                return
            if value is None:  # a new value; after an unknown outcome the same one again
                value, partition = f"{self.process}-{n}", n % self.partitions
                n += 1
            data = value.encode()
            request = broker_pb.SendMessageRequestP2B(clientId=self.process, topicName=self.topic,
                                                      partitionId=partition, data=data, flag=0,
                                                      checkSum=checksum(data), sentAddr=0x7F000001)
            self.history.add(self.process, "invoke", "send", {"value": value, "partition": partition})
            try:
                response = client.request(Service.BROKER_WRITE, Method.SEND_MESSAGE_P2B, request)
            except (*LOST, TubeRpcError) as e:
                self.history.add(self.process, "info", "send", {"value": value, "partition": partition},
                                 f"{type(e).__name__}: {e}"[:300])
                client.close()
                client = None
                continue
            if response.success:
                self.history.add(self.process, "ok", "send", {"value": value, "partition": partition,
                                                              "offset": response.messageId})
                value = None
            else:  # refused: certainly not written (a 503 while starting up ...); go on with a new value
                self.history.add(self.process, "fail", "send", {"value": value, "partition": partition},
                                 f"{response.errCode}: {response.errMsg}"[:300])
                value = None
                self.stop_event.wait(0.2)
        if client is not None:
            client.close()


class TubeConsumer(_TubeClient):
    def __init__(self, *args, group: str, **kw) -> None:
        super().__init__(*args, **kw)
        self.group = group
        self.sessions = 0

    def run(self) -> None:
        while not self.stop_event.is_set():
            master = self._connect(0)
            broker = master and self._connect(1)
            if broker is None:
                return
            held: set[int] = set()
            try:
                self._session(master, broker, held)
            except (*LOST, TubeRpcError) as e:
                self.history.add(self.process, "info", "lost", None, f"{type(e).__name__}: {e}"[:300])
            finally:
                if held:
                    self.history.add(self.process, "info", "revoke", {"partitions": sorted(held)})
                master.close()
                broker.close()
            self.stop_event.wait(0.3)

    def _session(self, master: TubeWireClient, broker: TubeWireClient, held: set[int]) -> None:
        registered = master.request(Service.MASTER, Method.CONSUMER_REGISTER_C2M, master_pb.RegisterRequestC2M(
            clientId=self.process, groupName=self.group, hostName="127.0.0.1", topicList=[self.topic],
            defFlowCheckId=-2, groupFlowCheckId=-2))
        if not registered.success:
            raise ConnectionClosed(f"register refused: {registered.errCode} {registered.errMsg}")
        self.sessions += 1
        confirm = None
        beat = 0.0
        while not self.stop_event.is_set():
            if time.monotonic() - beat > 0.5:
                beat = time.monotonic()
                request = master_pb.HeartRequestC2M(clientId=self.process, groupName=self.group,
                                                    reportSubscribeInfo=False)
                if confirm is not None:
                    request.event.CopyFrom(confirm)
                    confirm = None
                answer = master.request(Service.MASTER, Method.CONSUMER_HEARTBEAT_C2M, request)
                if not answer.success:
                    raise ConnectionClosed(f"heartbeat refused: {answer.errCode} {answer.errMsg}")
                if answer.HasField("event"):
                    self._obey(broker, answer.event, held)
                    confirm = master_pb.EventProto(rebalanceId=answer.event.rebalanceId, opType=answer.event.opType,
                                                   status=2, subscribeInfo=answer.event.subscribeInfo)
            polled = False
            for p in sorted(held):
                polled |= self._poll(broker, p)
            if not polled:
                self.stop_event.wait(0.1)

    def _register(self, broker: TubeWireClient, p: int, op_type: int) -> broker_pb.RegisterResponseB2C:
        return broker.request(Service.BROKER_READ, Method.CONSUMER_REGISTER_C2B, broker_pb.RegisterRequestC2B(
            opType=op_type, clientId=self.process, groupName=self.group, topicName=self.topic, partitionId=p,
            readStatus=0))

    def _obey(self, broker: TubeWireClient, event: master_pb.EventProto, held: set[int]) -> None:
        partitions = sorted(int(info.rsplit(":", 1)[1]) for info in event.subscribeInfo)
        if event.opType in (DISCONNECT, ONLY_DISCONNECT):
            for p in partitions:
                self._register(broker, p, 32)
                held.discard(p)
            self.history.add(self.process, "info", "revoke", {"partitions": partitions})
        elif event.opType in (CONNECT, ONLY_CONNECT):
            self.history.add(self.process, "info", "assign", {"partitions": partitions})
            for p in partitions:
                answer = self._register(broker, p, 31)
                if not answer.success:
                    raise ConnectionClosed(f"partition {p} refused: {answer.errCode} {answer.errMsg}")
                held.add(p)
                self.history.add(self.process, "info", "resume",
                                 {"partition": p, "offset": answer.currOffset // INDEX_BYTES})

    def _poll(self, broker: TubeWireClient, p: int) -> bool:
        got = broker.request(Service.BROKER_READ, Method.GET_MESSAGES_C2B, broker_pb.GetMessageRequestC2B(
            clientId=self.process, partitionId=p, groupName=self.group, topicName=self.topic,
            lastPackConsumed=False))
        if not got.success or not got.messages:
            return False
        records = [[p, m.messageId, m.payLoadData.decode()] for m in got.messages]
        self.history.add(self.process, "ok", "poll", {"isolation": "read_committed", "records": records})
        offsets = {str(p): records[-1][1] + 1}
        self.history.add(self.process, "invoke", "commit", {"offsets": offsets})
        try:
            answer = broker.request(Service.BROKER_READ, Method.CONSUMER_COMMIT_C2B, broker_pb.CommitOffsetRequestC2B(
                clientId=self.process, topicName=self.topic, partitionId=p, groupName=self.group,
                lastPackConsumed=True))
        except LOST as e:
            self.history.add(self.process, "info", "commit", {"offsets": offsets}, f"{type(e).__name__}: {e}"[:300])
            raise
        if answer.success:
            self.history.add(self.process, "ok", "commit",
                             {"offsets": offsets, "answered": answer.currOffset // INDEX_BYTES})
        else:
            self.history.add(self.process, "fail", "commit", {"offsets": offsets},
                             f"{answer.errCode}: {answer.errMsg}"[:300])
        return True


# ------------------------------------------------------------------------------------------- checkers

def check_duplicates(history: History) -> tuple[list[str], set[str]]:
    """Copies of a value in the final read_uncommitted read: more than one is explained only by a
    send whose outcome was unknown (``info``) followed by a retry, and never more copies than the
    value was sent. Returns the violations and the values whose extra copies retries explain."""
    sends: Counter[str] = Counter()
    unknown: set[str] = set()
    copies: Counter[str] = Counter()
    for op in history.ops:
        if op.f == "send" and op.type == "invoke":
            sends[op.value["value"]] += 1
        elif op.f == "send" and op.type == "info":
            unknown.add(op.value["value"])
        elif op.f == "read" and op.type == "ok" and op.value["isolation"] == "read_uncommitted":
            copies.update(v for _, _, v in op.value["records"])
    explained, unexplained = set(), []
    for value, n in sorted(copies.items()):
        if n < 2:
            continue
        if value in unknown and n <= sends[value]:
            explained.add(value)
        else:
            why = "no send of it had an unknown outcome" if value not in unknown else f"sent {sends[value]} time(s)"
            unexplained.append(f"{value} x{n} ({why})")
    violations = [f"duplicate written by one acknowledged send: {len(unexplained)}: {_limit(unexplained, 3)}"] \
        if unexplained else []
    return violations, explained


def check_resumes(history: History) -> list[str]:
    """Each ``resume`` (a consumer registering a partition, e.g. after a restart) must start at or
    after the group's last acknowledged commit of that partition (the ``ok`` seen before the resume),
    and at or before the highest commit that may have been applied by then (invoked before it)."""
    acked: dict[int, int] = defaultdict(int)
    maybe: dict[int, int] = defaultdict(int)
    pending: dict[str, dict] = {}
    problems: list[str] = []
    for op in history.ops:
        if op.f == "commit":
            if op.type == "invoke":
                pending[op.process] = op.value["offsets"]
                for p, o in op.value["offsets"].items():
                    maybe[int(p)] = max(maybe[int(p)], o)
            elif op.type == "ok":
                for p, o in op.value["offsets"].items():
                    acked[int(p)] = max(acked[int(p)], o)
        elif op.f == "resume":
            p, offset = op.value["partition"], op.value["offset"]
            if offset < acked[p]:
                problems.append(f"{op.process} resumed partition {p} at {offset}, below the acknowledged commit "
                                f"{acked[p]} (t={op.time})")
            elif offset > maybe[p]:
                problems.append(f"{op.process} resumed partition {p} at {offset}, above every commit ({maybe[p]}) "
                                f"(t={op.time})")
    return [f"committed-offset regression at a resume: {len(problems)}: {_limit(problems, 3)}"] if problems else []


@dataclass
class TubeVerdict:
    verdict: Verdict
    violations: list[str] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.violations

    def describe(self) -> list[str]:
        stats = ", ".join(f"{k} {v}" for k, v in self.stats.items())
        return [f"verdict: {'VALID' if self.valid else 'INVALID'} ({stats})",
                *(f"  violation: {v}" for v in self.violations)]


def check_tubemq(history: History, consumers: set[str]) -> TubeVerdict:
    duplicate_violations, explained = check_duplicates(history)
    verdict = check(history, resent_after_epoch_bump=explained)
    versions: dict[int, list[int]] = defaultdict(list)
    for op in history.ops:
        if op.f == "read" and op.type == "ok" and op.value["isolation"] == "read_committed":
            for p, offset, _ in op.value["records"]:
                versions[p].append(offset)
    polls = check_polls(history, {p: sorted(o) for p, o in versions.items()}, consumers)
    violations = [*verdict.violations, *duplicate_violations, *polls.violations, *check_resumes(history)]
    faults = sum(1 for op in history.ops if op.process == "nemesis" and op.f == "start")
    sends = Counter(op.type for op in history.ops if op.f == "send" and op.type != "invoke")
    stats = {"operations": sum(1 for op in history.ops if op.type != "invoke" and op.process != "nemesis"),
             "faults": faults, "sends_ok": sends["ok"], "sends_unknown": sends["info"], "sends_failed": sends["fail"],
             "retried_duplicates": len(explained),
             **{k: v for k, v in verdict.stats.items() if k in ("acknowledged", "read", "offsets_seen")},
             **polls.stats,
             "resumes": sum(1 for op in history.ops if op.f == "resume")}
    return TubeVerdict(verdict, violations, stats)


# ------------------------------------------------------------------------------------------- the run

@dataclass
class TubeRun:
    history: History
    verdict: TubeVerdict

    def failure_message(self) -> str:
        return "\n".join([*self.history.summary()[:3], *self.verdict.describe()])


def run(broker: BrokerProcess, endpoints: tuple[str, str], *, topic: str, nemesis: str = "mixed",
        duration: float = 30.0, partitions: int = 2, producers: int = 2, consumers: int = 2,
        quiet_s: float = 3.0, fault_s: float = 3.0, seed: int | None = None,
        log: Callable[[str], None] = print) -> TubeRun:
    rng = random.Random(seed)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "logger": CLIENT_LOG})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    del admin  # its librdkafka threads would reconnect (and log) through every fault
    history = History()
    stop = threading.Event()
    args = (endpoints, topic, partitions, history, stop)
    clients: list[threading.Thread] = [TubeProducer(f"tube-p{i}", *args) for i in range(producers)]
    members = [TubeConsumer(f"tube-c{i}", *args, group=f"{topic}-group") for i in range(consumers)]
    clients += members
    for c in clients:
        c.start()

    def note(phase: str, text: str) -> None:
        history.add("nemesis", "info", phase, text)
        log(f"  {time.monotonic() - history.t0:7.2f}s nemesis {phase}: {text}")

    schedule_stop = threading.Event()
    schedule = threading.Thread(target=run_schedule, args=(make_nemesis(nemesis, broker, rng), schedule_stop, note),
                                kwargs={"quiet_s": quiet_s, "fault_s": fault_s, "rng": rng}, daemon=True)
    schedule.start()
    time.sleep(duration)
    schedule_stop.set()
    schedule.join(120)
    time.sleep(min(5.0, duration / 4))  # healed: let the clients catch up before they stop
    stop.set()
    for c in clients:
        c.join(30)
    for isolation in ("read_uncommitted", "read_committed"):
        final_read(broker.bootstrap, topic, partitions, isolation, history)
    verdict = check_tubemq(history, {m.process for m in members})
    return TubeRun(history, verdict)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--nemesis", default="mixed", choices=["kill", "pause", "mixed", "random"])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--history", type=Path, default=None, help="write the history (JSON lines) here")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tidelog-tubemq-faults-") as root:
        broker, endpoints = tubemq_broker(Path(root) / "broker")
        try:
            result = run(broker, endpoints, topic="tube-faults", nemesis=options.nemesis, duration=options.duration,
                         partitions=options.partitions, seed=options.seed)
        finally:
            broker.kill()
    print("\n".join(result.history.summary()[:3]))
    print("\n".join(result.verdict.describe()))
    if options.history:
        result.history.write(options.history)
    return 0 if result.verdict.valid else 1


if __name__ == "__main__":
    sys.exit(main())
