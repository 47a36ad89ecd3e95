"""The TubeMQ front end under faults (issue 23's Jepsen checklist; :mod:`tests.fault.lab.tubemq_workload`):
on a single broker, where TubeMQ is fully supported, two TubeMQ producers send numbered messages and
two TubeMQ consumers of one group pull and commit, while the nemesis kills (-9) and restarts the
broker or pauses it (SIGSTOP / SIGCONT). The checker asserts: no acknowledged message lost, no
duplicate beyond what a retry after an unknown outcome explains, no consumer resuming below the
group's last acknowledged commit (nor above every commit), no poll-skip or nonmonotonic poll.

In CI: one 30 s schedule of kills and pauses in turn, a kill first (kill, pause, kill ...: at least two
kills and a pause; about 40 s with the broker's restarts and the final reads; 45 s took 55).
Longer: ``TIDELOG_FAULT_SOAK=600 pytest tests/fault/test_jepsen_tubemq.py -k soak`` or
``python -m tests.fault.lab.tubemq_workload --duration 600``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.fault.lab.tubemq_workload import TubeRun, run, tubemq_broker
from tidelog.testing import BrokerProcess

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("faults")]

DURATION_S = 30.0
SOAK_ENV = "TIDELOG_FAULT_SOAK"


@pytest.fixture(scope="module")
def tube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, tuple[str, str]]]:
    broker, endpoints = tubemq_broker(tmp_path_factory.mktemp("tubemq-faults"))
    yield broker, endpoints
    broker.kill()


def tube_run(tube, topic: str, **kw) -> TubeRun:
    broker, endpoints = tube
    result = run(broker, endpoints, topic=topic, log=lambda line: None, **{"duration": DURATION_S, **kw})
    assert result.verdict.valid, result.failure_message()
    faults = [op.value for op in result.history.ops if op.process == "nemesis" and op.f == "start"]
    assert any("kill -9" in f for f in faults), f"the broker was never killed: {faults}"
    assert any("SIGSTOP" in f for f in faults), f"the broker was never paused: {faults}"
    stats = result.verdict.stats
    print(f"faults: {faults}\nstats: {stats}")
    assert stats["acknowledged"] >= 100, "the producers made no progress"
    assert stats["commits_acknowledged"] > 0 and stats["polled"] > 0, "the consumers made no progress"
    # every consumer registered its partitions again after a kill: the resumes were checked
    assert stats["resumes"] > 2, f"no consumer resumed after a restart: {stats}"
    return result


def test_tubemq_clients_lose_nothing_and_resume_at_their_commits_while_the_broker_is_killed_and_paused(tube):
    tube_run(tube, "tube-faults", nemesis="mixed", seed=7, quiet_s=3.0, fault_s=3.0)


@pytest.mark.skipif(not os.environ.get(SOAK_ENV), reason=f"a long soak: set {SOAK_ENV}=SECONDS to run it")
def test_soak_tubemq_with_kills_and_pauses(tube):
    tube_run(tube, "tube-soak", nemesis="mixed", duration=float(os.environ[SOAK_ENV]), quiet_s=4.0, fault_s=4.0)
