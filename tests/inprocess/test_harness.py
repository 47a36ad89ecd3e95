"""The harness itself: its loop's clock moves when told, and a request it sends is what a client sends."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.inprocess.harness import InProcessBroker, TimeTravellingLoop, run
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import ApiVersionsRequest, FetchRequest


def test_a_timer_comes_due_when_the_loop_travels_past_it() -> None:
    loop = TimeTravellingLoop()
    fired: list[float] = []
    try:
        loop.call_later(3600, lambda: fired.append(loop.time()))
        start = loop.time()
        loop.run_until_complete(asyncio.sleep(0.01))
        assert fired == []
        loop.travel(3600)
        loop.run_until_complete(asyncio.sleep(0.01))
        assert len(fired) == 1 and fired[0] - start >= 3600
        with pytest.raises(ValueError):
            loop.travel(-1)
    finally:
        loop.close()


def test_requests_go_through_the_codec_and_the_dispatcher(tmp_path: Path) -> None:
    async def scenario(b: InProcessBroker) -> None:
        versions = await b.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
        served = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert served[FetchRequest.API_KEY][1] >= 12
        assert versions.error_code == ErrorCode.NONE

    run(tmp_path, scenario)
