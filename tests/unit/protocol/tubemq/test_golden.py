"""Golden frames of the real TubeMQ Java client (tubemq-client 1.13.0) and of Tidelog's answers to it,
recorded by ``python -m tools.capture_tubemq_frames`` into tests/data/frames/tubemq-java-1.13.0:
Tidelog's codec decodes every request the client sent, and re-encoding it gives the client's exact
bytes (framing, envelope and inner message); every answer decodes as the client will decode it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidelog.protocol.tubemq.frame import FrameDecoder
from tidelog.protocol.tubemq.rpc import (
    METHODS,
    PROTOCOL_VERSION,
    Status,
    decode_body,
    decode_request,
    decode_response,
    encode_request,
    parse_message,
)

FRAMES = Path(__file__).resolve().parents[3] / "data" / "frames" / "tubemq-java-1.13.0"
REQUESTS = sorted(FRAMES.glob("*_request_*.bin"))
BY_NAME = {spec.java_name: spec for spec in METHODS.values()}


def test_the_recording_covers_what_producers_and_consumers_send() -> None:
    names = {p.name.split("_request_")[0] for p in REQUESTS}
    assert names >= {"producerRegisterP2M", "producerHeartbeatP2M", "producerCloseClientP2M", "sendMessageP2B",
                     "consumerRegisterC2M", "consumerHeartbeatC2M", "consumerCloseClientC2M", "consumerRegisterC2B",
                     "consumerHeartbeatC2B", "getMessagesC2B", "consumerCommitC2B"}


@pytest.mark.parametrize("path", REQUESTS, ids=lambda p: p.stem)
def test_requests_decode_and_reencode_to_the_clients_bytes(path: Path) -> None:
    data = path.read_bytes()
    (frame,) = FrameDecoder().feed(data)
    request = decode_request(frame)
    spec = BY_NAME[path.name.split("_request_")[0]]
    assert request.method == spec.method and request.service_type in spec.services
    assert request.protocol_version == PROTOCOL_VERSION
    body = decode_body(spec, request.body)
    assert body.SerializeToString() == request.body
    assert encode_request(frame.serial_no, request.service_type, request.method, body,
                          timeout_ms=request.timeout_ms, protocol_version=request.protocol_version) == data


@pytest.mark.parametrize("path", REQUESTS, ids=lambda p: p.stem)
def test_tidelogs_answers_decode_as_the_method_response(path: Path) -> None:
    (request,) = FrameDecoder().feed(path.read_bytes())
    (frame,) = FrameDecoder().feed(path.with_name(path.name.replace("_request_", "_response_")).read_bytes())
    assert frame.serial_no == request.serial_no
    response = decode_response(frame)
    spec = BY_NAME[path.name.split("_request_")[0]]
    assert response.status == Status.SUCCESS and response.method == spec.method
    answer = parse_message(spec.response, response.data)
    assert answer.errCode in (200, 404)  # 404: a getMessages that found nothing new yet
