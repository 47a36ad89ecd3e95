"""Kafka requests made inside the broker (the web console's JSON API), answered by the same handlers as
requests from a Kafka listener.

The console does not re-implement Kafka's rules: creating a topic, altering a config, committing a
group's offsets or producing a test message goes through the handler of that API, with its validation
and its error codes. Each request runs as a principal (:class:`~tidelog.server.context.RequestContext`
``principal``): the logged-in user's with ``console.authentication=sasl``, else ``User:ANONYMOUS``, so
that the authorizer judges console requests exactly as it judges a client's.

A request is round-tripped through the wire codec in the version asked for, so the handler sees what a
client's request of that version would carry. Loop-only.
"""

from __future__ import annotations

import inspect
import itertools
import logging

from tidelog.errors import ErrorCode, KafkaError
from tidelog.protocol.message import Message
from tidelog.protocol.messages.header import RequestHeader
from tidelog.security.principal import ANONYMOUS, KafkaPrincipal
from tidelog.server.context import RequestContext
from tidelog.server.dispatcher import CloseConnection, HandlerRegistry

log = logging.getLogger(__name__)

#: The client id console requests carry (what a quota or an audit log would see).
CLIENT_ID = "tidelog-console"


class InternalClient:
    """``await client.send(request, version, principal)`` -> the handler's response message."""

    def __init__(self, handlers: HandlerRegistry, listener_name: str = "CONSOLE") -> None:
        self.handlers = handlers
        self.listener_name = listener_name
        self._correlation = itertools.count(1)

    async def send(self, request: Message, version: int, principal: KafkaPrincipal = ANONYMOUS,
                   client_host: str = "127.0.0.1") -> Message:
        api_key = type(request).API_KEY
        assert api_key is not None, type(request).__name__
        handler = self.handlers.get(api_key)
        if handler is None or not (handler.min_version <= version <= handler.max_version) \
                or not self.handlers.serves(api_key):
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, f"{type(request).__name__} v{version} is not served")
        body = type(request).decode(request.encode(version), version)
        header = RequestHeader(request_api_key=api_key, request_api_version=version,
                               correlation_id=next(self._correlation), client_id=CLIENT_ID)
        ctx = RequestContext(header, f"console-{header.correlation_id}", client_host, self.listener_name,
                             principal=principal, security_protocol="PLAINTEXT")
        try:
            result = handler.fn(ctx, body)
            if inspect.isawaitable(result):
                result = await result
        except KafkaError as e:
            result = self.handlers.error_response(api_key, body, e.code, e.message)
        except CloseConnection as e:
            raise KafkaError(ErrorCode.INVALID_REQUEST, str(e)) from None
        if result is None:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(request).__name__} got no response")
        return result


__all__ = ["CLIENT_ID", "InternalClient"]
