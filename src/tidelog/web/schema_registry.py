"""The schema registry's REST API on the HTTP listener, as Confluent's Schema Registry serves it
(docs/schema-registry.md): each route decodes the request, calls one
:class:`~tidelog.schema_registry.service.SchemaRegistry` method and encodes its answer as
``application/vnd.schemaregistry.v1+json``; a refusal is Confluent's ``{"error_code", "message"}``
with its HTTP status.

In a cluster, a change sent to a broker that does not lead ``_schemas`` is forwarded to the leader
(:mod:`tidelog.web.schema_registry_forward`), and a read first brings this broker's view up to the
leader's (:meth:`tidelog.schema_registry.leader.RegistryCluster.sync`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from tidelog.schema_registry import errors
from tidelog.schema_registry.errors import NotLeader, RegistryError
from tidelog.schema_registry.service import SchemaRegistry
from tidelog.security.acl import AclOperation
from tidelog.web.schema_registry_access import REALM, Caller, RegistryAccess, open_access
from tidelog.web.schema_registry_forward import MESSAGES, OFFSET_HEADER, Forwarder

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

Handler = Callable[[web.Request], Awaitable[Any]]
#: Who may call a route: OPEN (whoever authenticated), or (SUBJECT | GLOBAL | BY_ID, operation).
Rule = tuple[str, AclOperation] | None
OPEN: Rule = None
SUBJECT, GLOBAL = "subject", "global"
BY_ID: Rule = ("id", AclOperation.READ)
CALLER = "schema_registry_caller"


def _answer(body: Any, status: int = 200) -> web.Response:
    # bytes, not text: Confluent's content type carries no charset parameter
    return web.Response(body=json.dumps(body).encode(), status=status, content_type=CONTENT_TYPE)


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").strip().lower() == "true"


async def _body(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    try:
        body = json.loads(raw or b"{}")
    except ValueError as e:
        raise RegistryError(400, 400, f"Unexpected character in the request body: {e}") from None
    if not isinstance(body, dict):
        raise errors.unprocessable("The request body must be a JSON object")
    return body


def _schema_id(request: web.Request) -> int:
    try:
        return int(request.match_info["id"])
    except ValueError:
        raise errors.schema_not_found() from None


class SchemaRegistryApi:
    """The routes, under ``prefix`` ("" or "/some/path")."""

    def __init__(self, registry: SchemaRegistry, prefix: str = "", access: RegistryAccess | None = None,
                 forwarder: Forwarder | None = None) -> None:
        self.registry = registry
        self.prefix = prefix.rstrip("/")
        self.access = access if access is not None else open_access()
        #: a cluster's: changes to the leader of _schemas (None: a single node)
        self.forwarder = forwarder

    def routes(self) -> list[web.RouteDef]:
        p, r = self.prefix, self.registry
        # (method, path, handler, who may: an operation on the path's {subject} / on the subjects holding
        # schema {id} / on the global settings (CLUSTER); OPEN: any caller that authenticated)
        table: list[tuple[str, str, Handler, Rule]] = [
            ("GET", "/", self._root, OPEN),
            ("GET", "/schemas/types", lambda q: _ok(r.schema_types()), OPEN),
            ("GET", "/schemas/ids/{id}", lambda q: _ok(r.schema_by_id(_schema_id(q))), BY_ID),
            ("GET", "/schemas/ids/{id}/schema", lambda q: _ok(r.schema_by_id(_schema_id(q))["schema"], raw=True),
             BY_ID),
            ("GET", "/schemas/ids/{id}/subjects",
             lambda q: _ok(self._visible(q, r.subjects_of_id(_schema_id(q), _flag(q, "deleted")))), BY_ID),
            ("GET", "/schemas/ids/{id}/versions",
             lambda q: _ok([v for v in r.versions_of_id(_schema_id(q), _flag(q, "deleted"))
                            if v["subject"] in self._visible(q, [v["subject"]])]), BY_ID),
            ("GET", "/subjects",
             lambda q: _ok(self._visible(q, r.subjects(_flag(q, "deleted"), q.query.get("subjectPrefix", "")))),
             OPEN),
            ("POST", "/subjects/{subject}", self._lookup, (SUBJECT, AclOperation.READ)),
            ("DELETE", "/subjects/{subject}",
             lambda q: r.delete_subject(q.match_info["subject"], _flag(q, "permanent")),
             (SUBJECT, AclOperation.DELETE)),
            ("GET", "/subjects/{subject}/versions",
             lambda q: _ok(r.versions(q.match_info["subject"], _flag(q, "deleted"))), (SUBJECT, AclOperation.READ)),
            ("POST", "/subjects/{subject}/versions", self._register, (SUBJECT, AclOperation.WRITE)),
            ("GET", "/subjects/{subject}/versions/{version}",
             lambda q: _ok(r.version(q.match_info["subject"], q.match_info["version"], _flag(q, "deleted"))),
             (SUBJECT, AclOperation.READ)),
            ("GET", "/subjects/{subject}/versions/{version}/schema",
             lambda q: _ok(r.version(q.match_info["subject"], q.match_info["version"],
                                     _flag(q, "deleted"))["schema"], raw=True), (SUBJECT, AclOperation.READ)),
            ("GET", "/subjects/{subject}/versions/{version}/referencedby",
             lambda q: _ok(r.referenced_by(q.match_info["subject"], q.match_info["version"])),
             (SUBJECT, AclOperation.READ)),
            ("DELETE", "/subjects/{subject}/versions/{version}",
             lambda q: r.delete_version(q.match_info["subject"], q.match_info["version"], _flag(q, "permanent")),
             (SUBJECT, AclOperation.DELETE)),
            ("POST", "/compatibility/subjects/{subject}/versions/{version}", self._compatibility,
             (SUBJECT, AclOperation.READ)),
            ("POST", "/compatibility/subjects/{subject}/versions", self._compatibility, (SUBJECT, AclOperation.READ)),
            ("GET", "/config", lambda q: _ok(r.get_config(None)), (GLOBAL, AclOperation.DESCRIBE_CONFIGS)),
            ("PUT", "/config", self._put_config, (GLOBAL, AclOperation.ALTER_CONFIGS)),
            ("DELETE", "/config", lambda q: r.delete_config(None), (GLOBAL, AclOperation.ALTER_CONFIGS)),
            ("GET", "/config/{subject}",
             lambda q: _ok(r.get_config(q.match_info["subject"], _flag(q, "defaultToGlobal"))),
             (SUBJECT, AclOperation.DESCRIBE_CONFIGS)),
            ("PUT", "/config/{subject}", self._put_config, (SUBJECT, AclOperation.ALTER_CONFIGS)),
            ("DELETE", "/config/{subject}", lambda q: r.delete_config(q.match_info["subject"]),
             (SUBJECT, AclOperation.ALTER_CONFIGS)),
            ("GET", "/mode", lambda q: _ok(r.get_mode(None)), (GLOBAL, AclOperation.DESCRIBE_CONFIGS)),
            ("PUT", "/mode", self._put_mode, (GLOBAL, AclOperation.ALTER_CONFIGS)),
            ("GET", "/mode/{subject}",
             lambda q: _ok(r.get_mode(q.match_info["subject"], _flag(q, "defaultToGlobal"))),
             (SUBJECT, AclOperation.DESCRIBE_CONFIGS)),
            ("PUT", "/mode/{subject}", self._put_mode, (SUBJECT, AclOperation.ALTER_CONFIGS)),
            ("DELETE", "/mode/{subject}", lambda q: r.delete_mode(q.match_info["subject"]),
             (SUBJECT, AclOperation.ALTER_CONFIGS)),
        ]
        # "/" answers {} as Confluent's root does, only under a prefix (the root itself is the console's)
        return [web.route(method, p + path, _wrap(handler, r, self.access, rule, self.forwarder,
                                                  (method, path) if (method, path) in MESSAGES else None))
                for method, path, handler, rule in table if path != "/" or p]

    def _visible(self, request: web.Request, subjects: list[str]) -> list[str]:
        """The subjects of ``subjects`` the caller may see (DESCRIBE: READ, WRITE, DELETE imply it)."""
        caller: Caller = request[CALLER]
        return [s for s in subjects if self.access.allows(caller, AclOperation.DESCRIBE, s)]

    async def _root(self, request: web.Request) -> dict[str, Any]:
        return {}

    async def _lookup(self, request: web.Request) -> Any:
        return self.registry.lookup(request.match_info["subject"], await _body(request),
                                    _flag(request, "normalize"), _flag(request, "deleted"))

    async def _register(self, request: web.Request) -> Any:
        return await self.registry.register(request.match_info["subject"], await _body(request),
                                            _flag(request, "normalize"))

    async def _compatibility(self, request: web.Request) -> Any:
        return self.registry.check_compatibility(request.match_info["subject"], request.match_info.get("version"),
                                                 await _body(request), _flag(request, "verbose"))

    async def _put_config(self, request: web.Request) -> Any:
        return await self.registry.set_config(request.match_info.get("subject"), await _body(request))

    async def _put_mode(self, request: web.Request) -> Any:
        return await self.registry.set_mode(request.match_info.get("subject"), await _body(request),
                                            _flag(request, "force"))


class _Raw(str):
    """A schema text answered as it is (``.../schema`` endpoints), not as a JSON string."""


async def _ok(value: Any, raw: bool = False) -> Any:
    return _Raw(value) if raw else value


def _authorize(request: web.Request, registry: SchemaRegistry, access: RegistryAccess, caller: Caller,
               rule: Rule) -> None:
    if rule is None:
        return
    scope, operation = rule
    if scope == SUBJECT:
        access.check(caller, operation, request.match_info["subject"])
    elif scope == GLOBAL:
        access.check(caller, operation, None)
    else:  # a schema by id: READ on one of the subjects that hold it (an unknown id: 40403 from the handler)
        subjects = registry.subjects_of_id(_schema_id(request), deleted=True)
        if not any(access.allows(caller, operation, s) for s in subjects):
            raise RegistryError(403, 40301, f"User is denied operation Read on the subjects of schema "
                                            f"{_schema_id(request)}")


REGISTER = ("POST", "/subjects/{subject}/versions")


async def _registered(request: web.Request, registry: SchemaRegistry) -> dict[str, Any] | None:
    """A registration a follower answers itself: the schema is registered under the subject already
    (its view first brought up to the leader's, so a delete made since is seen)."""
    body = await _body(request)
    if registry.cluster is not None:
        await registry.cluster.sync()
    return registry.registered(request.match_info["subject"], body)


def _wrap(handler: Handler, registry: SchemaRegistry, access: RegistryAccess, rule: Rule,
          forwarder: Forwarder | None = None,
          change: tuple[str, str] | None = None) -> Callable[[web.Request], Awaitable[web.Response]]:
    """``change``: the route's (method, path) when it changes the registry (the leader's to run)."""

    async def route(request: web.Request) -> web.Response:
        try:
            caller = request[CALLER] = await access.caller(request)
            registry.check_ready()
            if change is None and registry.cluster is not None:  # a read: the view as the leader's now
                await registry.cluster.sync()
            _authorize(request, registry, access, caller, rule)
            if change is not None and forwarder is not None and not await forwarder.leader(request, change):
                known = await _registered(request, registry) if change == REGISTER else None
                if known is not None:
                    return _answer(known)
                return await forwarder.forward(request, change)
            try:
                value = await handler(request)
            except NotLeader:  # leadership moved away meanwhile
                if forwarder is None or change is None:
                    raise errors.store_error("this broker does not lead _schemas") from None
                return await forwarder.forward(request, change)
        except RegistryError as e:
            response = _answer(e.body(), e.status)
            if e.status == 401:
                response.headers["WWW-Authenticate"] = REALM
            return response
        except Exception as e:  # a bug: Confluent's 500 with the reason, never a dropped connection
            log.exception("schema registry: %s %s failed", request.method, request.path)
            return _answer({"error_code": 50001, "message": f"Error in the backend data store: {e}"}, 500)
        if isinstance(value, _Raw):
            return web.Response(body=str(value).encode(), content_type=CONTENT_TYPE)
        response = _answer(value)
        if change is not None and registry.cluster is not None:  # how far a forwarding broker waits to read
            response.headers[OFFSET_HEADER] = str(registry.state.next_offset)
        return response

    return route


__all__ = ["CONTENT_TYPE", "SchemaRegistryApi"]
