"""The cluster overview, the sampled message rates, and what the console itself is (read-only or not, who
the requests run as)."""

from __future__ import annotations

from aiohttp import web

from tidelog import __version__
from tidelog.web.console.admin import ConsoleAdmin
from tidelog.web.console.api_error import ApiError
from tidelog.web.console.params import query_int
from tidelog.web.console.principal import ConsoleAuthentication, logged_in, principal_of
from tidelog.web.console.sampler import HISTORY, Sampler
from tidelog.web.console.topic_api import TopicApi, offline, under_replicated


class ClusterApi:
    def __init__(self, topics: TopicApi, admin: ConsoleAdmin, sampler: Sampler, authentication: ConsoleAuthentication,
                 *, broker_id: int, read_only: bool, sample_interval_ms: int) -> None:
        self.authentication = authentication
        self.topics = topics
        self.admin = admin
        self.sampler = sampler
        self.broker_id = broker_id
        self.read_only = read_only
        self.sample_interval_ms = sample_interval_ms

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/api/v1/console", self.console),
                web.get("/api/v1/cluster", self.overview),
                web.get("/api/v1/cluster/rates", self.rates)]

    async def console(self, request: web.Request) -> web.Response:
        """What this console is, and who is asking: ``principal`` is null when a login is required and the
        request has no session; ``cluster_operations`` are what the authorizer lets it do on the cluster
        (the app shows the Users and ACLs pages when DESCRIBE is among them); ``cluster_id`` once logged in
        (null before: a Kafka client learns it only after authenticating too)."""
        principal = logged_in(request)
        operations = await self.admin.cluster_operations(principal) if principal is not None else []
        return web.json_response({"version": __version__, "read_only": self.read_only,
                                  "cluster_id": self.topics.image.cluster_id if principal is not None else None,
                                  "principal": str(principal) if principal is not None else None,
                                  "authentication": self.authentication.mode,
                                  "cluster_operations": operations,
                                  "sample_interval_ms": self.sample_interval_ms, "history": HISTORY})

    async def overview(self, request: web.Request) -> web.Response:
        image = self.topics.image
        principal = principal_of(request)
        allowed = await self.admin.describable_topics(principal)
        partitions = [p for t in image.topics.values() if t.name in allowed for p in t.partitions]
        try:
            log_dirs = await self.admin.log_dirs(principal)
        except ApiError as e:  # DescribeLogDirs needs DESCRIBE on the cluster
            if e.status != 403:
                raise
            log_dirs = None
        rates = self.sampler.rates[-1] if self.sampler.rates else None
        return web.json_response({
            "cluster_id": image.cluster_id, "controller_id": image.controller_id, "broker_id": self.broker_id,
            "brokers": [{"id": b.broker_id, "host": b.host, "port": b.port, "rack": b.rack}
                        for b in sorted(image.brokers.values(), key=lambda b: b.broker_id)],
            "topics": len(allowed & image.topics.keys()), "partitions": len(partitions),
            "under_replicated_partitions": sum(map(under_replicated, partitions)),
            "offline_partitions": sum(map(offline, partitions)),
            "log_dirs": log_dirs,
            "records_per_sec": rates["records_per_sec"] if rates else None,
            "bytes_per_sec": rates["bytes_per_sec"] if rates else None,
        })

    async def rates(self, request: web.Request) -> web.Response:
        since = query_int(request, "since", 0, lo=0)
        allowed = await self.admin.describable_topics(principal_of(request))  # per-topic rates: its topics only
        return web.json_response({"interval_ms": self.sample_interval_ms, "samples": [
            {**s, "topics": {t: r for t, r in s["topics"].items() if t in allowed}}
            for s in self.sampler.rates if s["time"] > since]})


__all__ = ["ClusterApi"]
