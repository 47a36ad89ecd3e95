"""Throttling of clients over their quotas, as Kafka does it since KIP-219: the response leaves at once
with ``throttle_time_ms`` set, and the broker stops reading from the connection for that long (the
network layer mutes it; :attr:`~tidelog.server.dispatcher.Dispatched.throttle_ms` says for how long).

What each request is charged (Kafka's ``KafkaApis``):

* Produce: the request's size (header and body) against ``producer_byte_rate``, and its handling time
  against ``request_percentage`` (not for ``acks=0``, whose only answer is the mute).
* Fetch from a consumer: before reading, ``max_bytes`` is capped at what the consumer's
  ``consumer_byte_rate`` allows in ``quota.window.num - 1`` windows; after, the response's size is
  charged. A throttled fetch is answered with no data (and its size taken back from the sensor), the
  throttle time set, as Kafka's ``getThrottledResponse``. Follower fetches are exempt.
* Every other request: its handling time against ``request_percentage``.

"Thread time" on Tidelog's single event loop: the time the loop spent decoding the request and in its
handler's synchronous part (a long poll's waiting is not counted, as Kafka does not count the time a
request sits in purgatory). ``request_percentage=100`` is the whole loop; Kafka's is one thread of
``num.io.threads + num.network.threads``.

When both a byte rate and the request rate are exceeded, the longer throttle wins. Loop-only.
"""

from __future__ import annotations

import inspect
from typing import Any

from tidelog.clock import Clock
from tidelog.protocol.api_keys import ApiKey
from tidelog.protocol.messages import FetchResponse
from tidelog.protocol.primitives import Writer
from tidelog.server.dispatcher import Dispatched
from tidelog.server.quota import ClientQuotaManagers

_NANOS_TO_PERCENT = 100.0 / 1_000_000_000


def _is_follower(request: Any) -> bool:
    return request.replica_id >= 0 or request.replica_state.replica_id >= 0


def _set_throttle(response: Any, throttle_ms: int) -> None:
    if response is not None and throttle_ms > 0 and hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = max(response.throttle_time_ms, throttle_ms)


class RequestThrottler:
    """Hooks the dispatcher calls around every handler (see :meth:`HandlerRegistry.set_throttler`)."""

    def __init__(self, quotas: ClientQuotaManagers, clock: Clock) -> None:
        self.quotas = quotas
        self.clock = clock

    def before(self, api_key: int, ctx: Any, request: Any) -> None:
        """Cap a consumer's fetch at what its quota allows in one measuring window."""
        if api_key != ApiKey.FETCH or not self.quotas.fetch.enabled or _is_follower(request):
            return
        cap = self.quotas.fetch.max_value_in_window(ctx.principal.name, ctx.client_id or "")
        if cap is not None and cap < request.max_bytes:
            request.max_bytes = max(int(cap), 1)
            request.min_bytes = min(request.min_bytes, request.max_bytes)

    def after(self, d: Dispatched, ctx: Any, request: Any, request_bytes: int, handler_ns: int) -> None:
        """Charge the request and set ``throttle_time_ms`` / ``d.throttle_ms`` (later, for a long poll)."""
        q = self.quotas
        if not (q.produce.enabled or q.fetch.enabled or q.request.enabled):
            return
        result = d.result
        if inspect.isawaitable(result):
            d.result = self._after_completion(d, result, ctx, request, request_bytes, handler_ns)
        else:
            d.result = self._charge(d, result, ctx, request, request_bytes, handler_ns)

    async def _after_completion(self, d: Dispatched, pending: Any, ctx: Any, request: Any, request_bytes: int,
                                handler_ns: int) -> Any:
        return self._charge(d, await pending, ctx, request, request_bytes, handler_ns)

    def _charge(self, d: Dispatched, response: Any, ctx: Any, request: Any, request_bytes: int,
                handler_ns: int) -> Any:
        q = self.quotas
        user, client_id = ctx.principal.name, ctx.client_id or ""
        now = self.clock.monotonic_ms()
        percent = handler_ns * _NANOS_TO_PERCENT
        if d.api_key == ApiKey.PRODUCE:
            bandwidth = q.produce.record_and_get_throttle_ms(user, client_id, request_bytes, now)
            requests = 0 if request.acks == 0 else q.request.record_and_get_throttle_ms(user, client_id, percent, now)
            throttle = max(bandwidth, requests)
        elif d.api_key == ApiKey.FETCH and not _is_follower(request) and isinstance(response, FetchResponse):
            size = self._size(response, d.api_version)
            requests = q.request.record_and_get_throttle_ms(user, client_id, percent, now)
            bandwidth = q.fetch.record_and_get_throttle_ms(user, client_id, size, now)
            throttle = max(bandwidth, requests)
            if throttle > 0:
                q.fetch.record_no_throttle(user, client_id, -size, now)
                session_id = request.session_id if request.session_id > 0 else 0
                response = FetchResponse(error_code=response.error_code, session_id=session_id, responses=[])
        else:
            throttle = q.request.record_and_get_throttle_ms(user, client_id, percent, now)
        _set_throttle(response, throttle)
        d.throttle_ms = throttle
        return response

    @staticmethod
    def _size(response: FetchResponse, version: int) -> int:
        w = Writer()
        response.encode_into(w, version)  # records stay file slices: nothing is read or copied
        return w.size()


__all__ = ["RequestThrottler"]
