"""The fault tests' TCP proxies over real loopback sockets: bytes pass both ways; a ``drop`` cut
closes live connections and refuses new ones; a ``blackhole`` cut keeps connections open while
nothing passes; healing restores traffic; peers are told apart by a Kafka request's client id."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from tests.fault.lab.tcp_proxy import ProxyNetwork, replica_fetcher_peer


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    """A real TCP echo server on loopback."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[:2]
    stop.set()
    server.close()


@pytest.fixture
def network() -> Iterator[ProxyNetwork]:
    net = ProxyNetwork()
    yield net
    net.close()


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    s.settimeout(1.0)
    return s


def roundtrip(s: socket.socket, data: bytes) -> bytes:
    s.sendall(data)
    got = b""
    while len(got) < len(data):
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def kafka_request_head(client_id: bytes) -> bytes:
    body = struct.pack(">hhih", 1, 12, 7, len(client_id)) + client_id + b"\x00rest"
    return struct.pack(">i", len(body)) + body


def test_bytes_pass_both_ways_until_a_drop_cut_closes_the_connection(echo, network):
    proxy = network.proxy("zk", echo, peer="b1")
    s = connect(proxy.port)
    assert roundtrip(s, b"hello") == b"hello"
    network.isolate("b1", ["zk", "b2"], "drop")
    assert s.recv(10) == b""  # closed by the proxy
    refused = connect(proxy.port)
    assert refused.recv(10) == b""  # accepted and closed at once
    network.heal()
    again = connect(proxy.port)
    assert roundtrip(again, b"back") == b"back"


def test_a_blackhole_keeps_the_connection_open_but_passes_nothing_and_healing_resets_it(echo, network):
    proxy = network.proxy("zk", echo, peer="b1")
    s = connect(proxy.port)
    assert roundtrip(s, b"one") == b"one"
    network.cut("zk", "b1", "blackhole")
    s.sendall(b"lost")
    with pytest.raises(TimeoutError):
        s.recv(10)  # open, silent
    fresh = connect(proxy.port)
    fresh.sendall(b"x")
    with pytest.raises(TimeoutError):
        fresh.recv(10)
    network.heal()
    assert s.recv(10) == b""  # its bytes were lost: healing closes it
    assert roundtrip(connect(proxy.port), b"two") == b"two"


def test_cuts_only_touch_the_named_peers(echo, network):
    to_b1 = network.proxy("b1", echo, identify=replica_fetcher_peer)
    from_b2, from_b3 = connect(to_b1.port), connect(to_b1.port)
    head2, head3 = kafka_request_head(b"tidelog-replica-fetcher-2"), kafka_request_head(b"tidelog-replica-fetcher-3")
    assert roundtrip(from_b2, head2) == head2
    assert roundtrip(from_b3, head3) == head3
    client = connect(to_b1.port)
    head = kafka_request_head(b"rdkafka")
    assert roundtrip(client, head) == head
    network.cut("b1", "b2", "drop")
    assert from_b2.recv(10) == b""
    assert roundtrip(from_b3, b"still") == b"still"
    assert roundtrip(client, b"clients are never cut") == b"clients are never cut"
    assert network.mode("b2", "b1") == "drop" and network.mode("b3", "b1") is None


def test_replica_fetcher_peer_reads_the_client_id_of_the_first_request():
    head = kafka_request_head(b"tidelog-replica-fetcher-12")
    assert replica_fetcher_peer(head) == "b12"
    assert replica_fetcher_peer(head[:10]) == ""  # not all there yet
    assert replica_fetcher_peer(head[:16]) == ""
    assert replica_fetcher_peer(kafka_request_head(b"console-consumer")) is None
    assert replica_fetcher_peer(struct.pack(">ihhih", 10, 1, 12, 7, -1)) is None  # null client id


def test_an_unknown_mode_is_refused(network):
    with pytest.raises(ValueError, match="mode must be one of"):
        network.cut("a", "b", "slow")
