"""Who a console request runs as: the console's authentication (``console.authentication``).

Every JSON API request carries a principal, and every Kafka request the console makes on its behalf runs
as that principal, so the authorizer judges it exactly as it judges a client's.

* ``none``: every request is ``User:ANONYMOUS``.
* ``sasl``: the console's users are the broker's SASL users. ``POST /api/v1/login`` checks a user name and
  password against the same SCRAM credential store the SASL listeners use (as SASL/PLAIN does: the
  password is turned into the user's salted StoredKey and compared in constant time; an unknown user costs
  the same work and gets the same answer), then opens a server-side session whose random token goes back
  in an ``HttpOnly; SameSite=Strict`` cookie. Each API request then runs as ``User:<name>``; without a
  live session it answers 401. Passwords are never logged or kept.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from aiohttp import web

from tidelog.security.plain import PLAIN_VERIFIERS, PlainServer
from tidelog.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from tidelog.security.scram import AuthenticationError, ScramCredential
from tidelog.web.console.api_error import ApiError
from tidelog.web.console.params import json_body
from tidelog.web.console.session import SessionStore

log = logging.getLogger(__name__)

NONE, SASL = "none", "sasl"
COOKIE = "tidelog_session"
#: API paths answered without a session: logging in and out, and what the console is (the app asks first).
OPEN_PATHS = frozenset({"/api/v1/login", "/api/v1/logout", "/api/v1/console"})
#: Kafka's answer to a wrong user name or password (PlainSaslServer), whichever of the two was wrong.
LOGIN_FAILED = "Authentication failed: Invalid username or password"
MAX_FIELD = 1024

#: ``lookup(user, mechanism)``: the user's SCRAM credential (the broker's credential store's ``get``).
Lookup = Callable[[str, str], ScramCredential | None]


class ConsoleAuthentication:
    def __init__(self, mode: str, lookup: Lookup, sessions: SessionStore) -> None:
        assert mode in (NONE, SASL), mode
        self.mode = mode
        self._lookup = lookup
        self.sessions = sessions

    @property
    def required(self) -> bool:
        return self.mode == SASL

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/api/v1/login", self.login), web.post("/api/v1/logout", self.logout)]

    @web.middleware
    async def middleware(self, request: web.Request, handler) -> web.StreamResponse:
        if not self.required:
            request["principal"] = ANONYMOUS
            return await handler(request)
        session = self.sessions.get(request.cookies.get(COOKIE))
        if session is not None:
            request["principal"] = session.principal
        elif request.path.startswith("/api/") and request.path not in OPEN_PATHS:
            return web.json_response({"error": "Log in first: this console requires a SASL user's name and "
                                               "password (console.authentication=sasl).",
                                      "code": "AUTHENTICATION_REQUIRED"}, status=401)
        return await handler(request)

    async def login(self, request: web.Request) -> web.Response:
        if not self.required:
            raise ApiError.bad_request("this console does not authenticate its users (console.authentication=none)",
                                       "AUTHENTICATION_DISABLED")
        body = await json_body(request)
        user, password = body.get("username"), body.get("password")
        if not isinstance(user, str) or not isinstance(password, str) or not user or not password:
            raise ApiError.bad_request("send {\"username\": \"...\", \"password\": \"...\"} (non-empty strings)")
        if len(user) > MAX_FIELD or len(password) > MAX_FIELD or "\x00" in user or "\x00" in password:
            raise ApiError(401, "SASL_AUTHENTICATION_FAILED", LOGIN_FAILED)
        # The store is read here, on the loop; the key derivation (PBKDF2) runs in a worker thread.
        found = {m: self._lookup(user, m) for m in PLAIN_VERIFIERS}
        plain = PlainServer(lambda u, m: found.get(m))
        try:
            await asyncio.to_thread(plain.step, b"\x00" + user.encode() + b"\x00" + password.encode())
        except AuthenticationError:
            log.info("console login refused from %s", request.remote)
            raise ApiError(401, "SASL_AUTHENTICATION_FAILED", LOGIN_FAILED) from None
        principal = KafkaPrincipal(USER_TYPE, user)
        token = self.sessions.create(principal)
        log.info("console login: %s from %s", principal, request.remote)
        response = web.json_response({"principal": str(principal), "expires_in_ms": self.sessions.lifetime_ms})
        response.set_cookie(COOKIE, token, max_age=self.sessions.lifetime_ms // 1000, path="/", httponly=True,
                            samesite="Strict")
        return response

    async def logout(self, request: web.Request) -> web.Response:
        self.sessions.delete(request.cookies.get(COOKIE))
        response = web.json_response({"logged_out": True})
        response.del_cookie(COOKIE, path="/")
        return response


def principal_of(request: web.Request) -> KafkaPrincipal:
    return request.get("principal", ANONYMOUS)


def logged_in(request: web.Request) -> KafkaPrincipal | None:
    """The request's principal, None when a login is required and there is no session."""
    return request.get("principal")


__all__ = ["COOKIE", "LOGIN_FAILED", "NONE", "SASL", "ConsoleAuthentication", "logged_in", "principal_of"]
