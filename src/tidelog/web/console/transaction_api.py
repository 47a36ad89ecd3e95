"""Transactions: the transactional ids (ListTransactions) and one id's open transaction
(DescribeTransactions), both asked as the request's principal, so only ids it may DESCRIBE are listed and
describing another answers 403 TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as for any Kafka client.

Both requests go to this broker's transaction coordinator: the list holds the ids whose
``__transaction_state`` partitions this broker leads (all of them on a single broker), as Kafka's
ListTransactions answers per broker."""

from __future__ import annotations

from aiohttp import web

from tidelog.coordinator.txn.state import TransactionState
from tidelog.web.console.admin import ConsoleAdmin
from tidelog.web.console.api_error import ApiError
from tidelog.web.console.params import LONG_MAX, query_int
from tidelog.web.console.principal import principal_of

STATES = tuple(s.value for s in TransactionState)


class TransactionApi:
    def __init__(self, admin: ConsoleAdmin) -> None:
        self.admin = admin

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/v1/transactions", self.list_transactions),
                web.get("/api/v1/transactions/{transactional_id}", self.describe)]

    async def list_transactions(self, request: web.Request) -> web.Response:
        state = request.query.get("state", "")
        if state and state not in STATES:
            raise ApiError.bad_request(f"state must be one of {', '.join(STATES)}, not {state!r}")
        producer_id = query_int(request, "producer_id", lo=0, hi=LONG_MAX)
        transactions = await self.admin.list_transactions(principal_of(request), [state] if state else [],
                                                          [] if producer_id is None else [producer_id])
        return web.json_response({"transactions": transactions})

    async def describe(self, request: web.Request) -> web.Response:
        transactional_id = request.match_info["transactional_id"]
        return web.json_response(await self.admin.describe_transaction(principal_of(request), transactional_id))


__all__ = ["STATES", "TransactionApi"]
