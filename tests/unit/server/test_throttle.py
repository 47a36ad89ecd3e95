"""What each request is charged and how a throttle shows (server/throttle.py), through the real
dispatcher with a manual clock: produce by request size, fetch capped and charged by response size
(an empty answer when throttled, its bytes taken back), everything else by handling time."""

from __future__ import annotations

from tidelog.cluster.client_quota import entity
from tidelog.protocol import encode_request
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import (
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from tidelog.records.builder import build_batch
from tidelog.security.principal import KafkaPrincipal
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import HandlerRegistry, handles
from tidelog.server.quota import ClientQuotaManagers
from tidelog.server.throttle import RequestThrottler
from tidelog.testing import ManualClock

RECORDS = build_batch([(0, None, b"x" * 5000)])


class Handlers:
    """Stand-ins for the produce / fetch / metadata handlers: real responses, no storage."""

    def __init__(self) -> None:
        self.fetch_max_bytes: list[tuple[int, int]] = []

    @handles(ApiKey.PRODUCE, 3, 11)
    def produce(self, ctx, request):
        return None if request.acks == 0 else ProduceResponse()

    @handles(ApiKey.FETCH, 4, 16)
    def fetch(self, ctx, request):
        self.fetch_max_bytes.append((request.max_bytes, request.min_bytes))
        return FetchResponse(session_id=7 if request.session_id else 0, responses=[
            FetchResponse.FetchableTopicResponse(topic="t", partitions=[
                FetchResponse.PartitionData(partition_index=0, records=RECORDS)])])

    @handles(ApiKey.METADATA, 0, 12)
    def metadata(self, ctx, request):
        return MetadataResponse()


def setup(quotas):
    clock = ManualClock()
    managers = ClientQuotaManagers(num_samples=11, window_seconds=1)
    managers.update(quotas)
    registry = HandlerRegistry()
    handlers = Handlers()
    registry.add(handlers)
    registry.set_throttler(RequestThrottler(managers, clock))

    def call(request, version, client_id="app", user="alice"):
        frame = encode_request(request, version, 1, client_id)
        return registry.dispatch(frame, lambda header: RequestContext(header, "c", "127.0.0.1",
                                                                      principal=KafkaPrincipal("User", user)))
    return clock, managers, handlers, call


def produce(acks=1):
    return ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=RECORDS)])])


def test_produce_is_charged_its_size_and_the_throttle_is_in_the_response():
    _clock, _managers, _, call = setup({entity(client_id="app"): {"producer_byte_rate": 1000.0}})
    first = call(produce(), 9)
    size = len(encode_request(produce(), 9, 1, "app"))
    # the first ~10 s' worth passes; each 5 kB request is 0.5 s of a 10 s window
    assert first.throttle_ms == 0 and first.result.throttle_time_ms == 0
    for _ in range(2):
        d = call(produce(), 9)
    assert d.throttle_ms > 0 and d.result.throttle_time_ms == d.throttle_ms
    sent = 3 * size
    assert d.throttle_ms == round((sent / 10 - 1000) / 1000 * 10_000)
    other = call(produce(), 9, client_id="other")  # another client id has no quota
    assert other.throttle_ms == 0


def test_acks_0_pays_bytes_but_not_request_time():
    _, managers, _, call = setup({entity(client_id="app"): {"producer_byte_rate": 100.0, "request_percentage": 0.0001}})
    d = call(produce(acks=0), 9)
    assert d.result is None and d.throttle_ms > 0  # muted though nothing is answered
    assert managers.request._sensors == {}


def test_fetch_is_capped_charged_and_answered_empty_when_throttled():
    clock, managers, handlers, call = setup({entity(client_id="app"): {"consumer_byte_rate": 500.0}})
    request = FetchRequest(max_wait_ms=0, min_bytes=10_000, max_bytes=50_000_000, topics=[])
    d = call(request, 12)
    assert handlers.fetch_max_bytes[-1] == (5000, 5000)  # 500 B/s * (11 - 1) * 1 s; min_bytes follows
    assert d.throttle_ms > 0  # one 5 kB batch plus framing is over 10 s' worth
    assert d.result.responses == [] and d.result.throttle_time_ms == d.throttle_ms and d.result.session_id == 0
    # taken back: the sensor is as before the fetch
    assert managers.fetch._sensors[("", "app")].rate(clock.monotonic_ms()) == 0.0
    incremental = call(FetchRequest(max_wait_ms=0, max_bytes=1000, session_id=7, session_epoch=1, topics=[]), 12)
    assert incremental.result.session_id == 7 and incremental.result.responses == []
    follower = call(FetchRequest(replica_id=1, max_wait_ms=0, max_bytes=50_000_000, topics=[]), 12)
    assert handlers.fetch_max_bytes[-1][0] == 50_000_000 and follower.throttle_ms == 0
    assert follower.result.responses  # followers are exempt


def test_other_requests_pay_handling_time():
    _clock, _managers, _, call = setup({entity(user="alice"): {"request_percentage": 0.000001}})
    d = call(MetadataRequest(topics=[]), 12)
    assert 0 < d.throttle_ms <= 1000 and d.result.throttle_time_ms == d.throttle_ms  # capped at one window
    assert call(MetadataRequest(topics=[]), 12, user="bob").throttle_ms == 0


def test_no_quotas_no_charges():
    _, managers, _, call = setup({})
    assert call(produce(), 9).throttle_ms == 0
    assert managers.produce._sensors == {} and managers.request._sensors == {}
