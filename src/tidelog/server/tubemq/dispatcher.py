"""TubeMQ method id -> handler registry, and the dispatch of one request frame to a response frame.

Handlers are methods of handler objects built by the composition root; a method declares the
TubeMQ method it serves with :func:`tube_method`. Each listener (the master's, the broker's) has its
own registry, so a service is answered only where TubeMQ serves it.

Rules for what comes in (TubeMQ's RpcProtocol and NettyRpcServer do the same):

* an envelope that does not decode -> an exception body, status FATAL;
* a method id unknown, or not valid under the request's service -> ``java.lang.Exception``
  "Unsupported method M in service type S!"; a valid one this listener does not serve -> "No
  method M in service S found on the server" (both status ERROR);
* an inner request that does not decode (garbage, missing required fields, non-UTF-8 strings)
  -> ``java.io.IOException`` naming the problem;
* a handler raising :class:`~tidelog.protocol.tubemq.error_code.TubeError` -> the method's response
  with ``success=false`` and that ``errCode`` / ``errMsg``; :class:`RpcFailure` -> an exception body;
  anything else is logged and answered with errCode 500 (INTERNAL_SERVER_ERROR);
* a handler returning an awaitable (an ``async`` handler: its answer waits for the group
  coordinator's committed writes, or a message for the ISR) is answered
  when it completes, by the same rules; :meth:`TubeHandlerRegistry.dispatch` then returns an
  awaitable of the response frame.

The connection stays open in every case; only bytes that are not TubeMQ framing close it
(:mod:`tidelog.server.tubemq.network`). Loop-only, not thread-safe.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import EncodeError, Message

from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.protocol.tubemq.frame import Frame
from tidelog.protocol.tubemq.rpc import (
    GENERIC_EXCEPTION,
    IO_EXCEPTION,
    METHODS,
    PROTOCOL_VERSION,
    MalformedRequestError,
    Method,
    MethodSpec,
    Service,
    Status,
    decode_body,
    decode_request,
    encode_exception,
    encode_response,
    fill_required,
)

log = logging.getLogger(__name__)

_MARK = "__tidelog_tube_method__"


@dataclass(frozen=True, slots=True)
class TubeContext:
    """Who sent a TubeMQ request: the peer's address, the connection and the caller's protocol version."""

    client_host: str
    connection_id: str
    protocol_version: int = PROTOCOL_VERSION
    service: int = 0
    #: The request's ``RequestBody.timeout`` (0: none given): the client drops the request after it.
    timeout_ms: int = 0


class RpcFailure(Exception):
    """A request answered with an exception body (a Java class name and a text), not a response."""

    def __init__(self, exception_name: str, text: str) -> None:
        super().__init__(text)
        self.exception_name = exception_name
        self.text = text


HandlerFn = Callable[[TubeContext, Any], "Message | Awaitable[Message]"]


def tube_method(method: Method, *, decode: bool = True) -> Callable[[HandlerFn], HandlerFn]:
    """Declare a method as the handler of TubeMQ method ``method``. With ``decode=False`` it gets the
    inner request undecoded (a method that is refused whatever it carries says why first)."""
    def mark(fn: HandlerFn) -> HandlerFn:
        setattr(fn, _MARK, (method, decode))
        return fn

    return mark


def error_response(spec: MethodSpec, code: TubeErrorCode, message: str) -> Message:
    """``spec``'s response with ``success=false`` (where it has the field), ``errCode`` and ``errMsg``;
    its other required fields get their defaults."""
    response = spec.response()
    fields = response.DESCRIPTOR.fields_by_name
    if "success" in fields:
        response.success = False
    response.errCode = int(code)
    response.errMsg = message
    return fill_required(response)


class TubeHandlerRegistry:
    """The TubeMQ methods one listener serves. Built by the composition root; loop-only afterwards."""

    def __init__(self, name: str, services: frozenset[Service]) -> None:
        self.name = name
        self.services = services
        self._handlers: dict[int, tuple[HandlerFn, bool]] = {}

    def add(self, *handler_objects: object) -> None:
        """Register every :func:`tube_method` method of each object (a method may be served only once)."""
        for obj in handler_objects:
            for attr in dir(type(obj)):
                mark = getattr(getattr(type(obj), attr), _MARK, None)
                if mark is None:
                    continue
                method, decode = mark
                if method in self._handlers:
                    raise ValueError(f"{self.name}: {Method(method).name} has two handlers")
                if not METHODS[method].services & self.services:
                    raise ValueError(f"{self.name}: {Method(method).name} is not a method of {sorted(self.services)}")
                self._handlers[method] = (getattr(obj, attr), decode)

    def __contains__(self, method: int) -> bool:
        return method in self._handlers

    def dispatch(self, frame: Frame, client_host: str, connection_id: str) -> bytes | Awaitable[bytes]:
        """The response frame to ``frame`` (never raises for what the peer sent), or an awaitable of it
        when the handler's answer waits (an ``async`` handler)."""
        try:
            request = decode_request(frame)
        except MalformedRequestError as e:
            return encode_exception(frame.serial_no, IO_EXCEPTION, f"IPC server unable to read call parameters: {e}",
                                    status=Status.FATAL)
        version = request.protocol_version
        spec = METHODS.get(request.method)
        if spec is None or request.service_type not in spec.services:
            return encode_exception(frame.serial_no, GENERIC_EXCEPTION, f"Unsupported method {request.method} in "
                                    f"service type {request.service_type}!", protocol_version=version)
        handler, decode = self._handlers.get(request.method, (None, True))
        if handler is None or request.service_type not in self.services:
            return encode_exception(frame.serial_no, GENERIC_EXCEPTION, f"No method {request.method} in service "
                                    f"{request.service_type} found on the server (Tidelog's TubeMQ {self.name})",
                                    protocol_version=version)
        try:
            body = decode_body(spec, request.body) if decode else request.body
        except MalformedRequestError as e:
            return encode_exception(frame.serial_no, IO_EXCEPTION, f"{spec.java_name}: {e}", protocol_version=version)
        ctx = TubeContext(client_host, connection_id, version, request.service_type, request.timeout_ms)
        try:
            response = handler(ctx, body)
        except Exception as e:  # every failure is answered (_answer)
            return self._answer(spec, frame.serial_no, version, failure=e)
        if inspect.isawaitable(response):
            return self._answer_later(spec, frame.serial_no, version, response)
        return self._answer(spec, frame.serial_no, version, response)

    async def _answer_later(self, spec: MethodSpec, serial_no: int, version: int,
                            pending: Awaitable[Message]) -> bytes:
        """The response frame once a handler's answer is ready."""
        try:
            response = await pending
        except Exception as e:  # every failure is answered (_answer)
            return self._answer(spec, serial_no, version, failure=e)
        return self._answer(spec, serial_no, version, response)

    def _answer(self, spec: MethodSpec, serial_no: int, version: int, response: Message | None = None,
                failure: Exception | None = None) -> bytes:
        """The response frame of ``response``, or of the handler's ``failure`` (the module rules)."""
        if isinstance(failure, TubeError):
            response = error_response(spec, failure.code, failure.message)
        elif isinstance(failure, RpcFailure):
            return encode_exception(serial_no, failure.exception_name, failure.text, protocol_version=version)
        elif failure is not None:
            log.error("TubeMQ %s failed", spec.java_name, exc_info=failure)
            response = error_response(spec, TubeErrorCode.INTERNAL_SERVER_ERROR,
                                      f"{spec.java_name} failed inside Tidelog; see the broker's log")
        try:
            return encode_response(serial_no, spec.method, response)
        except EncodeError as e:
            log.error("cannot encode the response to TubeMQ %s: %s", spec.java_name, e)
            return encode_exception(serial_no, GENERIC_EXCEPTION, f"{spec.java_name}: unencodable response",
                                    protocol_version=version)


__all__ = ["RpcFailure", "TubeContext", "TubeHandlerRegistry", "error_response", "tube_method"]
