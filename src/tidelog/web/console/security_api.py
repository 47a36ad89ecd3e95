"""The read-only security pages: SCRAM users (DescribeUserScramCredentials) and ACLs (DescribeAcls), both
asked as the request's principal, so they need DESCRIBE on the cluster as for any Kafka client (else 403
CLUSTER_AUTHORIZATION_FAILED). Never a credential's salt or keys: names, mechanisms and iterations only."""

from __future__ import annotations

from aiohttp import web

from tidelog.web.console.admin import ConsoleAdmin
from tidelog.web.console.api_error import ApiError
from tidelog.web.console.principal import principal_of


class SecurityApi:
    def __init__(self, admin: ConsoleAdmin) -> None:
        self.admin = admin

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/v1/users", self.users), web.get("/api/v1/acls", self.acls)]

    async def users(self, request: web.Request) -> web.Response:
        return web.json_response({"users": await self.admin.describe_users(principal_of(request))})

    async def acls(self, request: web.Request) -> web.Response:
        try:
            acls = await self.admin.describe_acls(principal_of(request))
        except ApiError as e:
            if e.code != "SECURITY_DISABLED":
                raise
            return web.json_response({"authorizer": False, "acls": []})
        return web.json_response({"authorizer": True, "acls": acls})


__all__ = ["SecurityApi"]
