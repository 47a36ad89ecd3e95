"""The schema registry's cluster mode (schema_registry/leader.py) over two brokers' replica layers in this
process (replicas.py: real logs, ``_schemas`` replicated over a real socket, one ManualClock): the leader
of ``_schemas`` writes, the other broker follows it as a consumer and refuses changes (NotLeader: the HTTP
layer forwards them: with the HTTP routes, Confluent's 50003/50004 when it cannot), a read brings a follower's view up to the leader's high watermark at once, and a
new leader reads the whole log before it hands out an id, even when its own view had read nothing.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest

from tests.inprocess.replicas import LISTENER, ReplicaPair
from tidelog.coordinator.runtime import ReplicaWriter
from tidelog.peer.client import PeerClient, PeerSettings
from tidelog.schema_registry.errors import NotLeader
from tidelog.schema_registry.leader import RegistryCluster
from tidelog.schema_registry.service import SchemaRegistry
from tidelog.web.schema_registry import CONTENT_TYPE, SchemaRegistryApi
from tidelog.web.schema_registry_forward import Forwarder
from tidelog.web.server import HttpServer

TOPIC = "_schemas"


def avro(name: str) -> dict:
    return {"schema": json.dumps({"type": "record", "name": name, "fields": [{"name": "a", "type": "string"}]})}


async def _no_wait(timeout_ms: int) -> None:
    """The topic is created by the pair's set-up: nothing to create or wait for."""


class Registries:
    """A registry per broker of the pair, each with its RegistryCluster (not following until ``follow``)."""

    def __init__(self, p: ReplicaPair) -> None:
        self.p = p
        settings = PeerSettings(lambda i: p.store.image.brokers[i].endpoint(LISTENER), clock=p.clock)
        self.registry: dict[int, SchemaRegistry] = {}
        self.cluster: dict[int, RegistryCluster] = {}
        self.forwarders: dict[int, Forwarder] = {}
        for i, broker in p.brokers.items():
            registry = SchemaRegistry(ReplicaWriter(broker.replicas, TOPIC, lambda: None), p.clock.wall_ms)
            registry.load()
            self.registry[i] = registry
            self.cluster[i] = RegistryCluster(
                registry, TOPIC, i, lambda: p.store.image, lambda: True, _no_wait,
                PeerClient(settings, f"registry-{i}"), PeerClient(settings, f"registry-{i}-sync"), p.clock)
            p.store.subscribe(self.cluster[i].on_metadata)

    def follow(self, *ids: int) -> None:
        for i in ids:
            self.cluster[i].start()

    async def close(self) -> None:
        for cluster in self.cluster.values():
            await cluster.stop()
        for forwarder in self.forwarders.values():
            await forwarder.close()

    def move_leader(self, to: int) -> None:
        image = self.p.store.image
        topic = image.topics[TOPIC]
        old = topic.partitions[0]
        moved = replace(old, leader=to, leader_epoch=old.leader_epoch + 1, partition_epoch=old.partition_epoch + 1)
        self.p.store.publish(replace(image, topics={**image.topics, TOPIC: replace(topic, partitions=(moved,))}))


def run(tmp_path: Path, scenario) -> None:
    async def main() -> None:
        p = ReplicaPair(tmp_path, fetch_wait_max_ms=500)
        await p.start()
        registries = Registries(p)
        try:
            p.create(TOPIC, leader=1)
            await asyncio.wait_for(scenario(p, registries), 120)
        finally:
            await registries.close()
            await p.close()

    asyncio.run(main())


def test_the_leader_writes_and_a_follower_reads_its_writes_at_once(tmp_path: Path) -> None:
    async def scenario(p: ReplicaPair, r: Registries) -> None:
        r.follow(1, 2)
        assert await r.registry[1].register("a-value", avro("A")) == {"id": 1}
        with pytest.raises(NotLeader):  # a follower runs no change: the HTTP layer forwards it
            await r.registry[2].register("b-value", avro("B"))
        for n in range(5):
            assert await r.registry[1].register(f"s{n}-value", avro(f"S{n}")) == {"id": 2 + n}
            await r.cluster[2].sync()  # a read on the follower, right after the leader answered
            assert r.registry[2].version(f"s{n}-value", "latest")["id"] == 2 + n
        assert r.registry[2].subjects() == r.registry[1].subjects()

    run(tmp_path, scenario)


def test_a_new_leader_reads_the_whole_log_before_it_hands_out_an_id(tmp_path: Path) -> None:
    async def scenario(p: ReplicaPair, r: Registries) -> None:
        r.follow(1)  # broker 2's registry reads nothing: only its replica of _schemas has the records
        ids = [(await r.registry[1].register(f"s{n}-value", avro(f"S{n}")))["id"] for n in range(3)]
        assert ids == [1, 2, 3] and r.registry[2].state.max_id == 0
        await p.wait_until(lambda: p.log_end(2, TOPIC) == p.log_end(1, TOPIC), "broker 2's replica")

        r.move_leader(2)
        await p.wait_until(lambda: r.cluster[2].leads() and not r.cluster[1].leads(), "broker 2 leading")
        # its first change appends a NOOP, waits for it to be committed, reads up to it: then allocates
        assert await r.registry[2].register("new-value", avro("New")) == {"id": 4}
        assert r.registry[2].version("s0-value", "1")["id"] == 1
        with pytest.raises(NotLeader):
            await r.registry[1].register("old-leader-value", avro("Old"))
        await r.cluster[1].sync()  # the old leader now follows the new one
        assert r.registry[1].version("new-value", "latest")["id"] == 4

        # and back: broker 1 leads again, after broker 2 wrote; it hands out 5, never 4 again
        r.move_leader(1)
        await p.wait_until(lambda: r.cluster[1].leads(), "broker 1 leading again")
        assert await r.registry[1].register("again-value", avro("Again")) == {"id": 5}

    run(tmp_path, scenario)


async def serve_http(p: ReplicaPair, r: Registries) -> dict[int, HttpServer]:
    """Each registry's routes on an HTTP listener of its own, registered in the brokers' metadata."""
    servers = {}
    for i in p.brokers:
        server = HttpServer("127.0.0.1", 0, ready=lambda: None)
        r.forwarders[i] = Forwarder(r.cluster[i])
        server.add_routes(SchemaRegistryApi(r.registry[i], "", None, r.forwarders[i]).routes())
        await server.start()
        servers[i] = server
    register_http(p, {i: s.url.rstrip("/") for i, s in servers.items()})
    return servers


def register_http(p: ReplicaPair, urls: dict[int, str | None]) -> None:
    image = p.store.image
    p.store.publish(replace(image, brokers={i: replace(b, http_url=urls[i]) for i, b in image.brokers.items()}))


async def call(server: HttpServer, method: str, path: str, body: object = None) -> tuple[int, object]:
    async with aiohttp.ClientSession() as session, session.request(
            method, server.url.rstrip("/") + path, json=body, headers={"Accept": CONTENT_TYPE}) as answer:
        return answer.status, await answer.json(content_type=None)


def test_changes_through_a_follower_are_forwarded_or_answered_as_confluent_does(tmp_path: Path) -> None:
    async def scenario(p: ReplicaPair, r: Registries) -> None:
        r.follow(1, 2)
        servers = await serve_http(p, r)
        try:
            follower = servers[2]
            assert await call(follower, "POST", "/subjects/f-value/versions", avro("F")) == (200, {"id": 1})
            assert r.registry[1].version("f-value", "1")["id"] == 1  # the leader ran it
            # read back at once through the broker written through
            status, body = await call(follower, "GET", "/subjects/f-value/versions/latest")
            assert status == 200 and body["id"] == 1
            # the leader's refusals come back unchanged
            incompatible = {"schema": json.dumps({"type": "record", "name": "F",
                                                  "fields": [{"name": "b", "type": "int"}]})}
            status, body = await call(follower, "POST", "/subjects/f-value/versions", incompatible)
            assert status == 409 and body["error_code"] == 409
            assert await call(follower, "PUT", "/config/f-value", {"compatibility": "NONE"}) == (
                200, {"compatibility": "NONE"})
            assert await call(follower, "GET", "/config/f-value") == (200, {"compatibilityLevel": "NONE"})

            await servers[1].stop()  # the leader's HTTP listener is gone: Confluent's 50003
            assert await call(follower, "POST", "/subjects/g-value/versions", avro("G")) == (500, {
                "error_code": 50003, "message": "Error while forwarding register schema request to the leader"})
            assert await call(follower, "PUT", "/config", {"compatibility": "FULL"}) == (500, {
                "error_code": 50003, "message": "Error while forwarding update config request to the leader"})
            assert await call(follower, "DELETE", "/subjects/f-value/versions/1") == (500, {
                "error_code": 50003, "message": "Error while forwarding delete schema version request to the leader"})
            # reads go on from the follower's own view, and so does registering what is registered already
            # (a serializer's first call): answered by the follower, as Confluent's do
            assert (await call(follower, "GET", "/schemas/ids/1"))[0] == 200
            assert await call(follower, "POST", "/subjects/f-value/versions", avro("F")) == (200, {"id": 1})

            register_http(p, {1: None, 2: servers[2].url.rstrip("/")})  # where the leader is: not known
            assert await call(follower, "POST", "/subjects/g-value/versions", avro("G")) == (500, {
                "error_code": 50004, "message": "Leader not known."})
            assert await call(follower, "PUT", "/mode", {"mode": "READONLY"}) == (500, {
                "error_code": 50004, "message": "Failed to update mode"})
            assert await call(follower, "DELETE", "/subjects/f-value") == (500, {
                "error_code": 500, "message": "Error while deleting the subject f-value"})
            # the leader itself still runs them
            assert await call(servers[2], "GET", "/subjects") == (200, ["f-value"])
            assert await r.registry[1].register("g-value", avro("G")) == {"id": 2}
        finally:
            for server in servers.values():
                await server.stop()

    run(tmp_path, scenario)
