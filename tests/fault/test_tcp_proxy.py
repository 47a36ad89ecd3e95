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


def request_frame(api_key: int, correlation_id: int, body: bytes = b"") -> bytes:
    payload = struct.pack(">hhih", api_key, 0, correlation_id, -1) + body
    return struct.pack(">i", len(payload)) + payload


def read_exactly(s: socket.socket, n: int, timeout: float) -> bytes:
    s.settimeout(timeout)
    got = b""
    while len(got) < n:
        chunk = s.recv(n - len(got))
        if not chunk:
            raise ConnectionError("closed")
        got += chunk
    return got


def test_a_delay_holds_back_the_named_request_and_those_after_it_on_its_connection(network, echo):
    proxy = network.proxy("b1", echo, peer="clients", frames=True)
    rule = network.delay([26], 1.5, destination="b1", peer="clients", count=1)  # the next EndTxn
    held, other = connect(proxy.port), connect(proxy.port)
    produce, end_txn, after = request_frame(0, 1, b"p" * 100), request_frame(26, 2), request_frame(0, 3)
    # A frame split across writes is still recognised as one request.
    held.sendall(produce[:7])
    held.sendall(produce[7:] + end_txn[:5])
    held.sendall(end_txn[5:] + after)
    assert read_exactly(held, len(produce), 1.0) == produce  # passes at once
    with pytest.raises(TimeoutError):
        read_exactly(held, 1, 0.5)  # the EndTxn (and the Produce after it) are held back
    assert roundtrip(other, request_frame(26, 9)) == request_frame(26, 9)  # the rule's one delay is used up
    assert read_exactly(held, len(end_txn) + len(after), 3.0) == end_txn + after  # in order, later
    assert rule.delayed == [(26, 2)]
    held.close()
    other.close()


def test_heal_clears_the_delays(network, echo):
    proxy = network.proxy("b1", echo, peer="clients", frames=True)
    network.delay([0], 30.0)
    network.heal()
    s = connect(proxy.port)
    assert roundtrip(s, request_frame(0, 1)) == request_frame(0, 1)
    s.close()
