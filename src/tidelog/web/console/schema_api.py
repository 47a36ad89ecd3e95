"""The console's Schemas page (docs/console.md, docs/schema-registry.md): the schema registry's subjects,
one subject's versions, and a line diff between two versions, read from the registry in-process.

Each request runs as the console's principal and sees what the registry would show it: subjects it may
DESCRIBE (listing), READ on a subject for its versions and diffs (403 SUBJECT_AUTHORIZATION_FAILED
otherwise), judged by the registry's own access rules (tidelog.web.schema_registry_access). Added to the
HTTP listener by the composition root when both the console and the registry are on.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from aiohttp import web

from tidelog.schema_registry.errors import RegistryError
from tidelog.schema_registry.service import SchemaRegistry
from tidelog.security.acl import AclOperation
from tidelog.web.console.api_error import ApiError
from tidelog.web.console.params import query_int
from tidelog.web.console.principal import principal_of
from tidelog.web.schema_registry_access import Caller, RegistryAccess

INT32_MAX = 2**31 - 1


def readable(schema_type: str, text: str) -> str:
    """A schema as the page shows and diffs it: Avro and JSON Schema indented (keys in their order),
    Protobuf as registered."""
    if schema_type == "PROTOBUF":
        return text
    try:
        return json.dumps(json.loads(text), indent=2)
    except ValueError:
        return text


class SchemaApi:
    def __init__(self, registry: SchemaRegistry, access: RegistryAccess) -> None:
        self.registry = registry
        self.access = access

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/v1/schemas", self.subjects),
                web.get("/api/v1/schemas/{subject}", self.subject),
                web.get("/api/v1/schemas/{subject}/diff", self.diff)]

    def _caller(self, request: web.Request) -> Caller:
        if not self.registry.loaded:
            raise ApiError(503, "NOT_READY", "the schema registry is still reading _schemas")
        return Caller(principal_of(request), request.remote or "")

    def _readable_subject(self, request: web.Request) -> str:
        subject = request.match_info["subject"]
        if not self.access.allows(self._caller(request), AclOperation.READ, subject):
            raise ApiError(403, "SUBJECT_AUTHORIZATION_FAILED", f"not allowed to read subject {subject}")
        return subject

    async def subjects(self, request: web.Request) -> web.Response:
        caller = self._caller(request)
        out = []
        for subject in self.registry.subjects():
            if not self.access.allows(caller, AclOperation.DESCRIBE, subject):
                continue
            versions = self.registry.versions(subject)
            latest = self.registry.version(subject, str(versions[-1]))
            out.append({"subject": subject, "versions": versions, "latest_id": latest["id"],
                        "type": latest.get("schemaType", "AVRO"),
                        "compatibility": self.registry.level(subject)})
        return web.json_response({"subjects": out})

    async def subject(self, request: web.Request) -> web.Response:
        subject = self._readable_subject(request)
        try:
            versions = [self._version(subject, v) for v in self.registry.versions(subject)]
        except RegistryError as e:
            raise ApiError(e.status, "NOT_FOUND" if e.status == 404 else "REGISTRY_ERROR", e.message) from None
        return web.json_response({"subject": subject, "compatibility": self.registry.level(subject),
                                  "versions": versions})

    async def diff(self, request: web.Request) -> web.Response:
        subject = self._readable_subject(request)
        old = query_int(request, "from", lo=1, hi=INT32_MAX)
        new = query_int(request, "to", lo=1, hi=INT32_MAX)
        if old is None or new is None:
            raise ApiError.bad_request("give the two versions: ?from=N&to=M")
        try:
            a, b = self._version(subject, old), self._version(subject, new)
        except RegistryError as e:
            raise ApiError(e.status, "NOT_FOUND" if e.status == 404 else "REGISTRY_ERROR", e.message) from None
        lines = list(difflib.unified_diff(a["text"].splitlines(), b["text"].splitlines(),
                                          f"{subject} version {old}", f"{subject} version {new}", lineterm=""))
        return web.json_response({"subject": subject, "from": old, "to": new, "diff": lines})

    def _version(self, subject: str, version: int) -> dict[str, Any]:
        found = self.registry.version(subject, str(version))
        schema_type = found.get("schemaType", "AVRO")
        return {"version": found["version"], "id": found["id"], "type": schema_type,
                "references": found.get("references", []), "text": readable(schema_type, found["schema"])}


__all__ = ["SchemaApi", "readable"]
