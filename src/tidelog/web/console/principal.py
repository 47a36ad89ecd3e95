"""Who a console request runs as: the seam for the console's authentication.

Every JSON API request carries a principal, and every Kafka request the console makes on its behalf
runs as that principal (so the authorizer, once it exists, judges it like a client's). Until the
console authenticates its users (a login page for SASL users, when security lands), every request is
``User:ANONYMOUS``: :func:`authentication_middleware` is where a session or credential check will set
another.
"""

from __future__ import annotations

from aiohttp import web

from tidelog.security.principal import ANONYMOUS, KafkaPrincipal


@web.middleware
async def authentication_middleware(request: web.Request, handler) -> web.StreamResponse:
    request["principal"] = ANONYMOUS
    return await handler(request)


def principal_of(request: web.Request) -> KafkaPrincipal:
    return request.get("principal", ANONYMOUS)


__all__ = ["authentication_middleware", "principal_of"]
