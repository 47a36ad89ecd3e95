"""The harness itself: timers on its ManualClock come due when the clock moves, and a request it sends
is what a client sends."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.inprocess.harness import InProcessBroker, run
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import ApiVersionsRequest, FetchRequest
from tidelog.testing import ManualClock


def test_a_timer_comes_due_when_the_clock_moves_past_it() -> None:
    async def scenario() -> None:
        clock = ManualClock()
        fired: list[int] = []
        clock.call_later(3_600_000, lambda: fired.append(clock.monotonic_ms()))
        start = clock.monotonic_ms()
        await asyncio.sleep(0.01)
        assert fired == []
        clock.advance(3_600_000)
        await asyncio.sleep(0.01)
        assert fired == [start + 3_600_000]
        with pytest.raises(ValueError):
            clock.advance(-1)

    asyncio.run(scenario())


def test_requests_go_through_the_codec_and_the_dispatcher(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        versions = await b.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
        served = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert served[FetchRequest.API_KEY][1] >= 12
        assert versions.error_code == ErrorCode.NONE

    run(tmp_path, scenario)
