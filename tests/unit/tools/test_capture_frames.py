"""tools/capture_frames: the golden response frames are reproducible, and request frames are chosen as
the README says (distinct bodies, a cap per API and version, sorted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidelog.protocol import encode_request
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import HeartbeatRequest, ProduceRequest
from tools.capture_frames.client import CAPS, select_requests
from tools.capture_frames.fake_broker import Exchange

FRAMES = Path(__file__).resolve().parents[2] / "data" / "frames"


def test_response_frames_are_reproduced_byte_for_byte(tmp_path: Path) -> None:
    pytest.importorskip("kio", reason="kio is not installed (the dev extra)")
    from tools.capture_frames.encoder import encode_responses

    encode_responses(tmp_path)
    for source in ("kio", "kafka-python"):
        committed = {p.name: p.read_bytes() for p in (FRAMES / source).glob("*_response_v*.bin")}
        written = {p.name: p.read_bytes() for p in (tmp_path / source).glob("*_response_v*.bin")}
        assert len(committed) > 50
        assert written.keys() == committed.keys(), source
        assert [n for n in written if written[n] != committed[n]] == [], source


def _exchange(body, version: int, correlation_id: int) -> Exchange:
    frame = bytearray(encode_request(body, version, correlation_id, "golden-client"))  # FrameDecoder's type
    return Exchange("test", body.API_KEY, version, frame, None)


def test_request_frames_are_distinct_bodies_up_to_the_cap_and_sorted() -> None:
    beats = [_exchange(HeartbeatRequest(group_id="g", generation_id=g, member_id="m"), 4, cid)
             for cid, g in enumerate([5, 5, 1, 2, 3, 4])]  # the first two differ only in the header
    chosen = select_requests(beats, cap_default=3)
    frames = chosen[ApiKey.HEARTBEAT, 4]
    assert len(frames) == 3  # generation 5 once, then 1 and 2; 3 and 4 are past the cap
    assert frames == sorted(frames, key=lambda f: (len(f), f))
    produce = [_exchange(ProduceRequest(acks=1, timeout_ms=n), 9, n) for n in range(20)]
    assert len(select_requests(produce, cap_default=3)[ApiKey.PRODUCE, 9]) == CAPS[ApiKey.PRODUCE]
