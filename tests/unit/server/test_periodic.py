"""The broker's periodic jobs run on the injected clock: a ManualClock alone drives them."""

from __future__ import annotations

import asyncio

from tidelog.server.periodic import PeriodicJobs
from tidelog.testing import ManualClock


def test_each_job_runs_every_interval_of_the_clock_and_a_failing_run_does_not_stop_it() -> None:
    async def main() -> None:
        clock = ManualClock()
        runs: dict[str, list[int]] = {"flush": [], "retention": [], "failing": []}

        def job(name: str, fail: bool = False):
            async def run() -> None:
                runs[name].append(clock.monotonic_ms())
                if fail:
                    raise RuntimeError("a failing run is logged")
            return run

        jobs = PeriodicJobs(clock)
        start = clock.monotonic_ms()
        jobs.start([(1_000, job("flush")), (300_000, job("retention")), (1_000, job("failing", fail=True))])

        async def advance(ms: int) -> None:
            for _ in range(10):
                await asyncio.sleep(0)
            clock.advance(ms)
            for _ in range(10):
                await asyncio.sleep(0)

        await asyncio.sleep(0.05)  # real time runs nothing
        assert runs == {"flush": [], "retention": [], "failing": []}
        await advance(999)
        assert runs["flush"] == []
        await advance(1)
        assert runs["flush"] == [start + 1_000] and runs["failing"] == [start + 1_000]
        await advance(1_000)
        assert runs["flush"] == [start + 1_000, start + 2_000]
        assert len(runs["failing"]) == 2  # the job goes on after a run raised
        await advance(298_000)
        assert runs["retention"] == [start + 300_000]
        jobs.cancel()
        await advance(10_000)
        assert len(runs["flush"]) == 3

    asyncio.run(main())
