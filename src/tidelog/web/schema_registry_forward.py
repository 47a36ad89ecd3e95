"""A change sent to a broker that does not lead ``_schemas`` is forwarded over HTTP to the leader's HTTP
listener, as Confluent's followers forward to their leader (docs/schema-registry.md "Cluster mode"):
the same method, path, query, body and credentials; the leader's status and body are the answer.

When it cannot be: no leader known (``_schemas`` has none, or it has no HTTP listener) answers
Confluent's 50004, a leader that cannot be reached (or a forwarded request that reaches a broker
which no longer leads: one hop only) 50003, with the message Confluent's resource for that request
gives (:data:`MESSAGES`). The leader names, in :data:`OFFSET_HEADER`, how far its log is read after
the change; the forwarding broker waits (bounded) until its own view has read that far before it
answers, so the client reads its write back from the broker it wrote through.
"""

from __future__ import annotations

import logging

import aiohttp
from aiohttp import web

from tidelog.schema_registry.errors import RegistryError
from tidelog.schema_registry.leader import RegistryCluster

log = logging.getLogger(__name__)

#: set on a forwarded request: the broker it reaches does not forward it again
FORWARDED_HEADER = "X-Tidelog-Forwarded"
#: on the answer to a change: the offset of _schemas the leader's view has read after it
OFFSET_HEADER = "X-Tidelog-Schemas-Offset"

#: (method, route) -> ((code, message) when forwarding fails, (code, message) when no leader is known),
#: as Confluent's resources answer them (its Errors: 50003 request forwarding failed, 50004 unknown leader;
#: a subject delete is answered with its generic failure, HTTP 500 and code 500)
MESSAGES: dict[tuple[str, str], tuple[tuple[int, str], tuple[int, str]]] = {
    ("POST", "/subjects/{subject}/versions"): (
        (50003, "Error while forwarding register schema request to the leader"), (50004, "Leader not known.")),
    ("DELETE", "/subjects/{subject}/versions/{version}"): (
        (50003, "Error while forwarding delete schema version request to the leader"), (50004, "Leader not known.")),
    ("DELETE", "/subjects/{subject}"): (
        (500, "Error while deleting the subject {subject}"), (500, "Error while deleting the subject {subject}")),
    ("PUT", "/config"): (
        (50003, "Error while forwarding update config request to the leader"),
        (50004, "Failed to update compatibility level")),
    ("PUT", "/config/{subject}"): (
        (50003, "Error while forwarding update config request to the leader"),
        (50004, "Failed to update compatibility level")),
    ("DELETE", "/config"): (
        (50003, "Error while forwarding delete config request to the leader"),
        (50004, "Failed to delete compatibility level")),
    ("DELETE", "/config/{subject}"): (
        (50003, "Error while forwarding delete config request to the leader"),
        (50004, "Failed to delete compatibility level")),
    ("PUT", "/mode"): (
        (50003, "Error while forwarding update mode request to the leader"), (50004, "Failed to update mode")),
    ("PUT", "/mode/{subject}"): (
        (50003, "Error while forwarding update mode request to the leader"), (50004, "Failed to update mode")),
    ("DELETE", "/mode/{subject}"): (
        (50003, "Error while forwarding delete mode request to the leader"), (50004, "Failed to delete mode")),
}

#: how long a change waits for _schemas to have a leader (a brand-new topic: the controller decides it)
LEADER_WAIT_MS = 10_000
#: the leader's own change waits up to the registry's 30 s for its commit
FORWARD_TIMEOUT_S = 45.0


def _error(request: web.Request, pair: tuple[int, str]) -> RegistryError:
    code, message = pair
    return RegistryError(500, code, message.format(subject=request.match_info.get("subject", "")))


class Forwarder:
    """Sends changes to the leader of ``_schemas`` (see the module docstring)."""

    def __init__(self, cluster: RegistryCluster) -> None:
        self.cluster = cluster
        self._session: aiohttp.ClientSession | None = None

    def leads(self) -> bool:
        return self.cluster.leads()

    async def leader(self, request: web.Request, route: tuple[str, str]) -> bool:
        """Whether this broker leads now (after waiting, bounded, for a leader when there is none);
        raises Confluent's answer when no leader is known."""
        unknown = MESSAGES[route][1]
        if await self.cluster.await_leader(LEADER_WAIT_MS) is None:
            raise _error(request, unknown)
        return self.cluster.leads()

    async def forward(self, request: web.Request, route: tuple[str, str]) -> web.Response:
        """The leader's answer to ``request`` (raises RegistryError when there is none)."""
        failed, unknown = MESSAGES[route]
        if request.headers.get(FORWARDED_HEADER):
            raise _error(request, failed)  # forwarded to a broker that does not lead (any more): one hop only
        base = self.cluster.leader_http_url()
        if base is None:
            raise _error(request, unknown)
        headers = {FORWARDED_HEADER: "true"}
        for name in ("Content-Type", "Accept", "Authorization"):
            if name in request.headers:
                headers[name] = request.headers[name]
        url = base.rstrip("/") + str(request.rel_url)
        try:
            async with self._client().request(request.method, url, data=await request.read(), headers=headers,
                                              allow_redirects=False) as answer:
                body = await answer.read()
                status, content_type = answer.status, answer.headers.get("Content-Type")
                offset = answer.headers.get(OFFSET_HEADER)
        except (TimeoutError, aiohttp.ClientError, OSError) as e:
            log.info("schema registry: forwarding %s %s to %s failed: %s", request.method, request.path, url, e)
            raise _error(request, failed) from None
        if offset is not None and offset.isdigit():  # read-your-write on this broker too
            await self.cluster.wait_applied(int(offset), self.cluster.sync_timeout_ms)
        response = web.Response(body=body, status=status)
        if content_type is not None:
            response.headers["Content-Type"] = content_type
        return response

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=FORWARD_TIMEOUT_S))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


__all__ = ["FORWARDED_HEADER", "MESSAGES", "OFFSET_HEADER", "Forwarder"]
