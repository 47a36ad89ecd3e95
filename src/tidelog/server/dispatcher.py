"""API key -> handler registry, and the dispatch of one request frame.

Handlers are methods of handler objects, each built by the composition root with exactly the
components it uses. A method declares the API and versions it serves with :func:`handles`;
:meth:`HandlerRegistry.add` registers every such method of an object, and ApiVersions is computed
from the registry (Redpanda's habit), so what the broker advertises is exactly what it serves.

Rules for bad requests (Kafka's):

* an unknown API key, or bytes that do not decode -> :class:`CloseConnection` (logged; the broker
  and other connections carry on);
* ApiVersions in a version above the supported range -> a v0-format ApiVersionsResponse with
  UNSUPPORTED_VERSION and the ApiVersions range only (KIP-511);
* any other API in a version the codec knows but the handler does not serve -> the API's error
  response with UNSUPPORTED_VERSION; a version the codec cannot even decode -> CloseConnection.

Handlers are thin: they call the owning component and build the response. They return the response,
``None`` (no response, e.g. Produce acks=0), or an awaitable of either (long polls). A handler written
as ``async def`` (those that await a coordinator service: its answer comes once the coordinator's
write is committed) has a KafkaError it raises answered as the API's error response, as a synchronous
handler's is.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tidelog import disk_space
from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.api_keys import API_REGISTRY, ApiKey
from tidelog.protocol.exceptions import ProtocolError, UnknownApiKeyError, UnsupportedVersionError
from tidelog.protocol.headers import decode_request_header, peek_api
from tidelog.protocol.message import Message
from tidelog.protocol.messages import ApiVersionsResponse

log = logging.getLogger(__name__)

HandlerFn = Callable[[Any, Any], "Message | Awaitable[Message | None] | None"]
ErrorFn = Callable[[Any, ErrorCode, str | None], Message]

_MARK = "__tidelog_handles__"


@dataclass(frozen=True, slots=True)
class Handler:
    api_key: int
    min_version: int
    max_version: int
    fn: HandlerFn
    error_response: ErrorFn | None = None


def handles(api_key: int, min_version: int, max_version: int, error_response: ErrorFn | None = None):
    """Declare a method as the handler of ``api_key`` for versions ``min_version..max_version``."""
    api = API_REGISTRY[api_key]
    if not (api.min_version <= min_version <= max_version <= api.max_version):
        raise ValueError(f"{api.name}: versions {min_version}-{max_version} outside the codec's range")

    def mark(fn: HandlerFn) -> HandlerFn:
        setattr(fn, _MARK, (api_key, min_version, max_version, error_response))
        return fn

    return mark


def declared_versions(handler_class: type) -> list[tuple[int, int, int]]:
    """(api_key, min, max) of every :func:`handles` method of a handler class, without an instance."""
    marks = (getattr(getattr(handler_class, name), _MARK, None) for name in dir(handler_class))
    return sorted((m[0], m[1], m[2]) for m in marks if m is not None)


class CloseConnection(Exception):
    """The request cannot be answered; the connection must be closed (reason in the message)."""


def generic_error_response(response_cls: type[Message], code: ErrorCode) -> Message:
    """The response class with its top-level ``error_code`` set, if it has one."""
    response = response_cls()
    if any(f.name == "error_code" for f in response_cls.SCHEMA):
        response.error_code = int(code)  # type: ignore[attr-defined]
        return response
    raise CloseConnection(f"{response_cls.__name__} has no top-level error code")


@dataclass(slots=True)
class Dispatched:
    api_key: int
    api_version: int  # the version to encode the response in
    correlation_id: int
    result: Any  # Message | None | Awaitable
    #: How long the network layer mutes the connection after this response (a quota's throttle, KIP-219).
    throttle_ms: int = 0


class HandlerRegistry:
    """The APIs this broker serves. Built once by the composition root; loop-only afterwards."""

    def __init__(self) -> None:
        self._handlers: dict[int, Handler] = {}
        self._throttler: Any = None
        self._gates: dict[int, Callable[[], bool]] = {}

    def gate(self, api_keys: Iterable[int], enabled: Callable[[], bool]) -> None:
        """Serve ``api_keys`` only while ``enabled()`` (a feature level, as share groups' ``share.version``):
        otherwise they are left out of ApiVersions and answered UNSUPPORTED_VERSION."""
        for api_key in api_keys:
            self._gates[api_key] = enabled

    def set_throttler(self, throttler: Any) -> None:
        """Client quotas (server/throttle.py): ``before(api_key, ctx, request)`` runs before a handler,
        ``after(dispatched, ctx, request, request_bytes, handler_ns)`` charges its request and sets the
        response's ``throttle_time_ms`` and the dispatched ``throttle_ms``."""
        self._throttler = throttler

    def add(self, *handler_objects: object) -> None:
        """Register every :func:`handles` method of each object (an API may be served only once)."""
        for obj in handler_objects:
            for name in dir(type(obj)):
                mark = getattr(getattr(type(obj), name), _MARK, None)
                if mark is None:
                    continue
                api_key, lo, hi, error_fn = mark
                if api_key in self._handlers:
                    raise ValueError(f"{API_REGISTRY[api_key].name} has two handlers")
                fn = getattr(obj, name)
                if inspect.iscoroutinefunction(fn):
                    fn = self._answering_errors(api_key, fn)
                self._handlers[api_key] = Handler(api_key, lo, hi, fn, error_fn)

    def _answering_errors(self, api_key: int, fn: Callable[[Any, Any], Awaitable[Any]]) -> HandlerFn:
        """An ``async def`` handler whose KafkaError (raised before or after an await) is answered as
        the API's error response."""
        async def answer(ctx: Any, body: Any) -> Any:
            try:
                return await fn(ctx, body)
            except KafkaError as e:
                return self.error_response(api_key, body, e.code, e.message)
        return answer

    def __contains__(self, api_key: int) -> bool:
        return api_key in self._handlers

    def __getitem__(self, api_key: int) -> Handler:
        return self._handlers[api_key]

    def __iter__(self) -> Iterator[Handler]:
        return iter(self._handlers.values())

    def get(self, api_key: int) -> Handler | None:
        return self._handlers.get(api_key)

    def serves(self, api_key: int) -> bool:
        """A handler is registered and its gate (if any) is open."""
        gate = self._gates.get(api_key)
        return api_key in self._handlers and (gate is None or gate())

    def supported_versions(self) -> list[tuple[int, int, int]]:
        """(api_key, min, max) of every served API, for ApiVersions."""
        return sorted((h.api_key, h.min_version, h.max_version) for h in self._handlers.values()
                      if self.serves(h.api_key))

    def error_response(self, api_key: int, request: Message, code: ErrorCode, message: str | None = None) -> Message:
        h = self._handlers.get(api_key)
        if h is not None and h.error_response is not None:
            return h.error_response(request, code, message)
        return generic_error_response(API_REGISTRY[api_key].response, code)

    def api_versions_fallback(self) -> ApiVersionsResponse:
        """KIP-511: the answer to an ApiVersions request in a version the broker does not support."""
        h = self._handlers[ApiKey.API_VERSIONS]
        return ApiVersionsResponse(
            error_code=int(ErrorCode.UNSUPPORTED_VERSION),
            api_keys=[ApiVersionsResponse.ApiVersion(api_key=int(ApiKey.API_VERSIONS), min_version=h.min_version,
                                                     max_version=h.max_version)],
        )

    def dispatch(self, frame: bytes, make_context: Callable[[Any], Any]) -> Dispatched:
        """Decode ``frame`` and run its handler. Raises CloseConnection for requests that cannot be answered."""
        started_ns = time.perf_counter_ns()
        try:
            api_key, api_version = peek_api(frame)
        except ProtocolError as e:
            raise CloseConnection(f"malformed request header: {e}") from None
        if api_key not in API_REGISTRY:
            raise CloseConnection(f"unknown API key {api_key}")
        api = API_REGISTRY[api_key]
        try:
            header, pos = decode_request_header(frame)
        except (ProtocolError, UnknownApiKeyError) as e:
            raise CloseConnection(f"malformed {api.name} request header: {e}") from None
        corr = header.correlation_id
        h = self._handlers.get(api_key)
        if api_key == ApiKey.API_VERSIONS and h is not None and api_version > h.max_version:
            return Dispatched(api_key, 0, corr, self.api_versions_fallback())
        try:
            body, _ = api.request.decode_from(frame, pos, api_version)
        except UnsupportedVersionError:
            raise CloseConnection(f"{api.name} v{api_version} is not a version Tidelog knows") from None
        except ProtocolError as e:
            raise CloseConnection(f"malformed {api.name} v{api_version} request: {e}") from None
        if h is None or not (h.min_version <= api_version <= h.max_version) or not self.serves(api_key):
            return Dispatched(api_key, api_version, corr,
                              self.error_response(api_key, body, ErrorCode.UNSUPPORTED_VERSION))
        ctx = make_context(header)
        throttler = self._throttler
        if throttler is not None:
            throttler.before(api_key, ctx, body)
        try:
            result = h.fn(ctx, body)
        except KafkaError as e:
            result = self.error_response(api_key, body, e.code, e.message)
        except CloseConnection:
            raise
        except OSError as e:
            if not disk_space.is_out_of_space(e):
                log.exception("%s v%d handler failed", api.name, api_version)
                result = self.error_response(api_key, body, ErrorCode.UNKNOWN_SERVER_ERROR)
            else:  # a write the storage did not map itself: Kafka's code, and the condition logged once
                _out_of_space(e, api.name)
                result = self.error_response(api_key, body, ErrorCode.KAFKA_STORAGE_ERROR, disk_space.describe(e))
        except Exception:
            log.exception("%s v%d handler failed", api.name, api_version)
            result = self.error_response(api_key, body, ErrorCode.UNKNOWN_SERVER_ERROR)
        dispatched = Dispatched(api_key, api_version, corr, result)
        if throttler is not None:
            throttler.after(dispatched, ctx, body, len(frame), time.perf_counter_ns() - started_ns)
        return dispatched


def _out_of_space(e: OSError, api: str) -> None:
    """Report a full disk met by a handler to the log dir of the file (which logs it once), or log
    it the first time when the file is not in a log dir."""
    global _unplaced_reported
    space = disk_space.space_of(e.filename) if isinstance(e.filename, str) else None
    if space is not None:
        space.write_failed(e, f"a {api} request")
    elif not _unplaced_reported:
        _unplaced_reported = True
        log.error("%s: a write failed (%s): the request answers KAFKA_STORAGE_ERROR", api, disk_space.describe(e))


_unplaced_reported = False


__all__ = [
    "CloseConnection",
    "Dispatched",
    "Handler",
    "HandlerRegistry",
    "generic_error_response",
    "handles",
]
