"""The schema registry on Tidelog (docs/schema-registry.md): registrations/s and lookups/s over HTTP,
and Avro serializer round trips through the broker, in one run.

Run from the repository root::

    .venv/bin/python bench/schema_registry.py            # about 1 minute
    .venv/bin/python bench/schema_registry.py --quick    # fewer of each (about 20 s)

A fresh ``tidelog serve`` (:class:`tidelog.testing.BrokerProcess`) on a temporary data dir. Measured, one
client on one keep-alive HTTP connection, requests one after another (latency-bound, as a client sees it):

* ``register``: POST /subjects/{s}/versions of ``--schemas`` distinct Avro schemas (each a committed
  write to ``_schemas``), half into one subject (compatibility NONE: a new version each, checked against
  the subject), half into subjects of their own;
* ``lookup by id``: GET /schemas/ids/{id} (what a deserializer asks once per writer schema);
* ``lookup by schema``: POST /subjects/{s} (what a serializer with ``auto.register.schemas=false`` asks);
* ``round trip``: confluent-kafka's AvroSerializer -> Producer -> Consumer -> AvroDeserializer for
  ``--records`` records (the serdes cache the schema: one registry request each side; this is the
  broker's throughput with the serde's framing, for comparison with the raw rates above).
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tidelog.testing import BrokerProcess

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def schema(i: int) -> str:
    return json.dumps({"type": "record", "name": f"R{i}", "fields": [{"name": "f", "type": "long"},
                                                                      {"name": f"g{i}", "type": "string"}]})


class Http:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.prefix = parts.path.rstrip("/")
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)

    def call(self, method: str, path: str, body: object = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(method, self.prefix + path, body=data, headers={"Content-Type": CONTENT_TYPE})
        response = self.conn.getresponse()
        payload = json.loads(response.read())
        if response.status != 200:
            raise RuntimeError(f"{method} {path}: {response.status} {payload}")
        return payload


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:10,.0f}/s  ({count} in {seconds:.2f} s, {seconds / count * 1000:.2f} ms each)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--schemas", type=int, default=None)
    parser.add_argument("--records", type=int, default=None)
    args = parser.parse_args()
    schemas = args.schemas or (200 if args.quick else 1000)
    records = args.records or (5_000 if args.quick else 50_000)

    with tempfile.TemporaryDirectory() as tmp, BrokerProcess(Path(tmp) / "data") as broker:
        assert broker.schema_registry_url is not None
        api = Http(broker.schema_registry_url)
        api.call("PUT", "/config/bench-shared", {"compatibility": "NONE"})
        ids = []
        start = time.perf_counter()
        for i in range(schemas):
            subject = "bench-shared" if i % 2 == 0 else f"bench-{i}"
            ids.append(api.call("POST", f"/subjects/{subject}/versions", {"schema": schema(i)})["id"])  # type: ignore[index]
        registered = time.perf_counter() - start

        start = time.perf_counter()
        for i in range(schemas * 5):
            api.call("GET", f"/schemas/ids/{ids[i % schemas]}")
        by_id = time.perf_counter() - start

        start = time.perf_counter()
        for i in range(schemas):
            subject = "bench-shared" if i % 2 == 0 else f"bench-{i}"
            api.call("POST", f"/subjects/{subject}", {"schema": schema(i)})
        by_schema = time.perf_counter() - start

        registry = SchemaRegistryClient({"url": broker.schema_registry_url})
        value_schema = json.dumps({"type": "record", "name": "Click", "fields": [
            {"name": "user", "type": "string"}, {"name": "page", "type": "string"}, {"name": "at", "type": "long"}]})
        serialize = AvroSerializer(registry, value_schema)
        deserialize = AvroDeserializer(SchemaRegistryClient({"url": broker.schema_registry_url}))
        ctx = SerializationContext("bench-clicks", MessageField.VALUE)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bench", "auto.offset.reset": "earliest"})
        start = time.perf_counter()
        for i in range(records):
            producer.produce("bench-clicks", value=serialize({"user": f"u{i % 100}", "page": "/p", "at": i}, ctx))
            if i % 1000 == 0:
                producer.poll(0)
        assert producer.flush(60) == 0
        consumer.subscribe(["bench-clicks"])
        got = 0
        deadline = time.monotonic() + 120
        while got < records and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.5):
                if m.error() is None:
                    deserialize(m.value(), ctx)
                    got += 1
        round_trip = time.perf_counter() - start
        consumer.close()
        del producer  # before the broker stops: no reconnect noise
        assert got == records, f"consumed {got} of {records}"

    print(f"schema registry on tidelog serve ({schemas} schemas, {records} records)")
    print(f"  register            {rate(schemas, registered)}")
    print(f"  lookup by id        {rate(schemas * 5, by_id)}")
    print(f"  lookup by schema    {rate(schemas, by_schema)}")
    print(f"  Avro round trip     {rate(records, round_trip)}  (serialize, produce, consume, deserialize)")


if __name__ == "__main__":
    main()
