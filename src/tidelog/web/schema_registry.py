"""The schema registry's REST API on the HTTP listener, as Confluent's Schema Registry serves it
(docs/schema-registry.md): each route decodes the request, calls one
:class:`~tidelog.schema_registry.service.SchemaRegistry` method and encodes its answer as
``application/vnd.schemaregistry.v1+json``; a refusal is Confluent's ``{"error_code", "message"}``
with its HTTP status.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from tidelog.schema_registry import errors
from tidelog.schema_registry.errors import RegistryError
from tidelog.schema_registry.service import SchemaRegistry

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

Handler = Callable[[web.Request], Awaitable[Any]]


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

    def __init__(self, registry: SchemaRegistry, prefix: str = "") -> None:
        self.registry = registry
        self.prefix = prefix.rstrip("/")

    def routes(self) -> list[web.RouteDef]:
        p, r = self.prefix, self.registry
        table: list[tuple[str, str, Handler]] = [
            ("GET", "/", self._root),
            ("GET", "/schemas/types", lambda q: _ok(r.schema_types())),
            ("GET", "/schemas/ids/{id}", lambda q: _ok(r.schema_by_id(_schema_id(q)))),
            ("GET", "/schemas/ids/{id}/schema", lambda q: _ok(r.schema_by_id(_schema_id(q))["schema"], raw=True)),
            ("GET", "/schemas/ids/{id}/subjects",
             lambda q: _ok(r.subjects_of_id(_schema_id(q), _flag(q, "deleted")))),
            ("GET", "/schemas/ids/{id}/versions",
             lambda q: _ok(r.versions_of_id(_schema_id(q), _flag(q, "deleted")))),
            ("GET", "/subjects", lambda q: _ok(r.subjects(_flag(q, "deleted"), q.query.get("subjectPrefix", "")))),
            ("POST", "/subjects/{subject}", self._lookup),
            ("DELETE", "/subjects/{subject}",
             lambda q: r.delete_subject(q.match_info["subject"], _flag(q, "permanent"))),
            ("GET", "/subjects/{subject}/versions",
             lambda q: _ok(r.versions(q.match_info["subject"], _flag(q, "deleted")))),
            ("POST", "/subjects/{subject}/versions", self._register),
            ("GET", "/subjects/{subject}/versions/{version}",
             lambda q: _ok(r.version(q.match_info["subject"], q.match_info["version"], _flag(q, "deleted")))),
            ("GET", "/subjects/{subject}/versions/{version}/schema",
             lambda q: _ok(r.version(q.match_info["subject"], q.match_info["version"],
                                     _flag(q, "deleted"))["schema"], raw=True)),
            ("GET", "/subjects/{subject}/versions/{version}/referencedby",
             lambda q: _ok(r.referenced_by(q.match_info["subject"], q.match_info["version"]))),
            ("DELETE", "/subjects/{subject}/versions/{version}",
             lambda q: r.delete_version(q.match_info["subject"], q.match_info["version"], _flag(q, "permanent"))),
            ("POST", "/compatibility/subjects/{subject}/versions/{version}", self._compatibility),
            ("POST", "/compatibility/subjects/{subject}/versions", self._compatibility),
            ("GET", "/config", lambda q: _ok(r.get_config(None))),
            ("PUT", "/config", self._put_config),
            ("DELETE", "/config", lambda q: r.delete_config(None)),
            ("GET", "/config/{subject}",
             lambda q: _ok(r.get_config(q.match_info["subject"], _flag(q, "defaultToGlobal")))),
            ("PUT", "/config/{subject}", self._put_config),
            ("DELETE", "/config/{subject}", lambda q: r.delete_config(q.match_info["subject"])),
            ("GET", "/mode", lambda q: _ok(r.get_mode(None))),
            ("PUT", "/mode", self._put_mode),
            ("GET", "/mode/{subject}",
             lambda q: _ok(r.get_mode(q.match_info["subject"], _flag(q, "defaultToGlobal")))),
            ("PUT", "/mode/{subject}", self._put_mode),
            ("DELETE", "/mode/{subject}", lambda q: r.delete_mode(q.match_info["subject"])),
        ]
        # "/" answers {} as Confluent's root does, only under a prefix (the root itself is the console's)
        return [web.route(method, p + path, _wrap(handler, r))
                for method, path, handler in table if path != "/" or p]

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


def _wrap(handler: Handler, registry: SchemaRegistry) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def route(request: web.Request) -> web.Response:
        try:
            registry.check_ready()
            value = await handler(request)
        except RegistryError as e:
            return _answer(e.body(), e.status)
        except Exception as e:  # a bug: Confluent's 500 with the reason, never a dropped connection
            log.exception("schema registry: %s %s failed", request.method, request.path)
            return _answer({"error_code": 50001, "message": f"Error in the backend data store: {e}"}, 500)
        if isinstance(value, _Raw):
            return web.Response(body=str(value).encode(), content_type=CONTENT_TYPE)
        return _answer(value)

    return route


__all__ = ["CONTENT_TYPE", "SchemaRegistryApi"]
