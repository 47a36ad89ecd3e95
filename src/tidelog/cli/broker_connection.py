"""A small synchronous Kafka protocol client for the requests confluent-kafka's admin API cannot send:
ApiVersions (what a broker serves, for ``tidelog cluster info``) and DescribeLogDirs (partition sizes on
disk, for ``tidelog topics describe``).

Requests and responses go through Tidelog's own wire codec (:mod:`tidelog.protocol`, pure and
broker-independent), so this speaks to any Kafka-compatible broker. One blocking socket per broker,
one request in flight, a timeout on every read; PLAINTEXT only (the transport the CLI's confluent-kafka
clients use too). Every failure is a :class:`~tidelog.cli.client.CliError`. Not thread-safe.

    with BrokerConnection.open("127.0.0.1:9092") as conn:
        ranges = conn.api_versions()                     # {api_key: (min, max)}
        response = conn.request(DescribeLogDirsRequest(topics=None))
"""

from __future__ import annotations

import itertools
import socket
import struct

from tidelog import __version__
from tidelog.cli.client import REQUEST_TIMEOUT_S, CliError
from tidelog.errors import ErrorCode
from tidelog.protocol import ProtocolError, api_entry, decode_response, encode_request, frame
from tidelog.protocol.message import Message
from tidelog.protocol.messages import ApiKey, ApiVersionsRequest, ApiVersionsResponse

CLIENT_ID = "tidelog-cli"
#: ApiVersions v3+ carries the client's name and version (KIP-511); v0 is the fallback every broker answers.
_API_VERSIONS_FIRST = 3
_MAX_RESPONSE_BYTES = 256 * 1024 * 1024
_SIZE = struct.Struct(">i")


class BrokerConnection:
    """One connection to one broker; ask :meth:`api_versions` first (it picks request versions)."""

    def __init__(self, sock: socket.socket, address: str) -> None:
        self.sock = sock
        self.address = address
        self.versions: dict[int, tuple[int, int]] = {}
        self._correlation_ids = itertools.count(1)

    @classmethod
    def open(cls, address: str, timeout_s: float = REQUEST_TIMEOUT_S) -> BrokerConnection:
        host, _, port = address.rpartition(":")
        host = host.strip("[]") or "localhost"
        try:
            sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        except (OSError, ValueError) as e:
            raise CliError(f"cannot reach the broker at {address}: {getattr(e, 'strerror', None) or e}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock, address)

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    # ------------------------------------------------------------------------------------------ requests

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """The broker's ``{api_key: (min_version, max_version)}``. Asks with v3 and falls back to v0
        when the broker answers UNSUPPORTED_VERSION (its answer is then a v0 body, per KIP-511)."""
        request = ApiVersionsRequest(client_software_name=CLIENT_ID, client_software_version=__version__)
        payload = self._exchange(request, _API_VERSIONS_FIRST)
        try:
            response = self._decode(payload, ApiKey.API_VERSIONS, _API_VERSIONS_FIRST)
        except CliError:
            response = None
        if not isinstance(response, ApiVersionsResponse) or response.error_code == ErrorCode.UNSUPPORTED_VERSION:
            response = self._decode(self._exchange(ApiVersionsRequest(), 0), ApiKey.API_VERSIONS, 0)
        assert isinstance(response, ApiVersionsResponse)
        if response.error_code:
            raise CliError(f"the broker at {self.address} answered ApiVersions with {_error_name(response.error_code)}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        return dict(self.versions)

    def version_for(self, api_key: int) -> int:
        """The highest version of ``api_key`` that both the broker and this codec know."""
        if not self.versions:
            self.api_versions()
        ours = api_entry(api_key)
        theirs = self.versions.get(api_key)
        if theirs is None or theirs[1] < ours.min_version or theirs[0] > ours.max_version:
            raise CliError(f"the broker at {self.address} does not serve {ours.name}")
        return min(theirs[1], ours.max_version)

    def request(self, body: Message, version: int | None = None) -> Message:
        """Send ``body`` (at the highest common version unless ``version``) and return the decoded response."""
        assert body.API_KEY is not None
        if version is None:
            version = self.version_for(body.API_KEY)
        return self._decode(self._exchange(body, version), body.API_KEY, version)

    # ------------------------------------------------------------------------------------------ the wire

    def _exchange(self, body: Message, version: int) -> bytes:
        correlation_id = next(self._correlation_ids)
        try:
            self.sock.sendall(frame(encode_request(body, version, correlation_id, CLIENT_ID)))
            (size,) = _SIZE.unpack(self._read(4))
            if not 0 <= size <= _MAX_RESPONSE_BYTES:
                raise CliError(f"the broker at {self.address} sent a response of {size} bytes")
            payload = self._read(size)
        except TimeoutError:
            raise CliError(f"the broker at {self.address} did not answer within {self.sock.gettimeout():.0f} s") \
                from None
        except OSError as e:
            raise CliError(f"lost the connection to the broker at {self.address}: {e.strerror or e}") from None
        (answered,) = _SIZE.unpack_from(payload, 0) if len(payload) >= 4 else (None,)
        if answered != correlation_id:
            raise CliError(f"the broker at {self.address} answered request {correlation_id} with {answered}")
        return payload

    def _read(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise CliError(f"the broker at {self.address} closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _decode(self, payload: bytes, api_key: int, version: int) -> Message:
        try:
            return decode_response(payload, api_key, version)[1]
        except (ProtocolError, struct.error, IndexError, ValueError) as e:
            raise CliError(f"cannot decode the broker's {api_entry(api_key).name} v{version} response: {e}") \
                from None


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


__all__ = ["CLIENT_ID", "BrokerConnection"]
