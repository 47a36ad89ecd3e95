"""A small synchronous Kafka protocol client for the requests confluent-kafka's admin API cannot send (or
answers wrongly): ApiVersions (``tidelog cluster info``), DescribeLogDirs (``tidelog topics describe``),
client quotas, reassignments, transactions, and the refusals confluent-kafka hides (DescribeAcls,
DescribeUserScramCredentials).

Requests and responses go through Tidelog's own wire codec (:mod:`tidelog.protocol`, pure and
broker-independent) and the conversation the broker-to-broker client has too (:mod:`tidelog.peer.wire`:
framing, correlation ids, the SASL exchange), so this speaks to any Kafka-compatible broker. One
blocking socket per broker, one request in flight, a timeout on every read. The client properties of ``--command-config`` choose the
transport as they do for the confluent-kafka clients (librdkafka's names): ``security.protocol``
(PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), ``sasl.mechanism`` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) with
``sasl.username`` / ``sasl.password``, ``ssl.ca.location``, ``ssl.certificate.location``,
``ssl.key.location``, ``ssl.key.password``, ``ssl.endpoint.identification.algorithm`` (https, the default,
or none) and ``enable.ssl.certificate.verification``. Every failure is a
:class:`~tidelog.cli.client.CliError`. Not thread-safe.

    with BrokerConnection.open("127.0.0.1:9092", properties) as conn:
        ranges = conn.api_versions()                     # {api_key: (min, max)}
        response = conn.request(DescribeLogDirsRequest(topics=None))
"""

from __future__ import annotations

import os
import socket
import ssl
import struct
from dataclasses import dataclass
from typing import Any

from tidelog import __version__
from tidelog.cli.client import REQUEST_TIMEOUT_S, CliError
from tidelog.errors import ErrorCode
from tidelog.peer.wire import Conversation, SaslRefused, UnexpectedResponse, sasl_exchange
from tidelog.protocol import ProtocolError, api_entry, decode_response
from tidelog.protocol.message import Message
from tidelog.protocol.messages import ApiKey, ApiVersionsRequest, ApiVersionsResponse
from tidelog.security.sasl_client import CLIENT_MECHANISMS, jaas_credentials

CLIENT_ID = "tidelog-cli"
#: ApiVersions v3+ carries the client's name and version (KIP-511); v0 is the fallback every broker answers.
_API_VERSIONS_FIRST = 3
_SIZE = struct.Struct(">i")


_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class ClientSecurity:
    """The transport ``--command-config`` asks for (librdkafka's property names)."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    ssl_context: ssl.SSLContext | None = None
    check_hostname: bool = True

    @classmethod
    def from_properties(cls, properties: dict[str, Any] | None) -> ClientSecurity:
        props = {k: str(v) for k, v in (properties or {}).items()}
        protocol = props.get("security.protocol", "PLAINTEXT").upper()
        if protocol not in _PROTOCOLS:
            raise CliError(f"--command-config: security.protocol must be one of {', '.join(_PROTOCOLS)}, "
                           f"not {protocol}", 2)
        mechanism = user = password = None
        if protocol.startswith("SASL_"):
            mechanism = (props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "GSSAPI").upper()
            if mechanism not in CLIENT_MECHANISMS:
                raise CliError(f"--command-config: sasl.mechanism {mechanism} is not supported here (use one of "
                               f"{', '.join(CLIENT_MECHANISMS)})", 2)
            user, password = props.get("sasl.username"), props.get("sasl.password")
            if (not user or password is None) and props.get("sasl.jaas.config"):
                try:
                    user, password = jaas_credentials(props["sasl.jaas.config"], mechanism)
                except ValueError as e:
                    raise CliError(f"--command-config: {e}", 2) from None
            if not user or password is None:
                raise CliError(f"--command-config: {protocol} with {mechanism} needs sasl.username and "
                               "sasl.password", 2)
        context, check_hostname = None, True
        if protocol.endswith("SSL"):
            context, check_hostname = _ssl_context(props)
        return cls(protocol, mechanism, user, password, context, check_hostname)


def _ssl_context(props: dict[str, str]) -> tuple[ssl.SSLContext, bool]:
    verify = props.get("enable.ssl.certificate.verification", "true").lower() != "false"
    check_hostname = verify and props.get("ssl.endpoint.identification.algorithm", "https").lower() == "https"
    context = ssl.create_default_context()
    try:
        ca = props.get("ssl.ca.location")
        if ca and os.path.isdir(ca):
            context.load_verify_locations(capath=ca)
        elif ca:
            context.load_verify_locations(cafile=ca)
        cert = props.get("ssl.certificate.location")
        if cert:
            context.load_cert_chain(cert, props.get("ssl.key.location") or None,
                                    props.get("ssl.key.password") or None)
    except (OSError, ssl.SSLError) as e:
        raise CliError(f"--command-config: cannot load the TLS files: {getattr(e, 'strerror', None) or e}", 2) \
            from None
    context.check_hostname = check_hostname
    if not verify:
        context.verify_mode = ssl.CERT_NONE
    return context, check_hostname


class BrokerConnection:
    """One connection to one broker; ask :meth:`api_versions` first (it picks request versions).
    :meth:`open` with client properties also does TLS and SASL."""

    def __init__(self, sock: socket.socket, address: str) -> None:
        self.sock = sock
        self.address = address
        self.versions: dict[int, tuple[int, int]] = {}
        self._conversation = Conversation(CLIENT_ID)

    @classmethod
    def open(cls, address: str, properties: dict[str, Any] | None = None,
             timeout_s: float = REQUEST_TIMEOUT_S) -> BrokerConnection:
        """Connect (TLS and SASL as ``properties``, the ``--command-config`` client properties, say)."""
        security = ClientSecurity.from_properties(properties)
        host, _, port = address.rpartition(":")
        host = host.strip("[]") or "localhost"
        try:
            sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        except (OSError, ValueError) as e:
            raise CliError(f"cannot reach the broker at {address}: {getattr(e, 'strerror', None) or e}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if security.ssl_context is not None:
            try:
                sock = security.ssl_context.wrap_socket(sock, server_hostname=host)
            except (ssl.SSLError, ssl.CertificateError) as e:
                sock.close()
                raise CliError(f"TLS handshake with the broker at {address} failed: "
                               f"{getattr(e, 'verify_message', None) or getattr(e, 'reason', None) or e}") from None
            except OSError as e:
                sock.close()
                raise CliError(f"TLS handshake with the broker at {address} failed: {e.strerror or e}") from None
        conn = cls(sock, address)
        if security.mechanism is not None:
            try:
                conn.authenticate(security)
            except BaseException:
                conn.close()
                raise
        return conn

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

    def authenticate(self, security: ClientSecurity) -> None:
        """SaslHandshake and SaslAuthenticate with ``security``'s mechanism and credentials."""
        assert security.mechanism is not None and security.username is not None and security.password is not None
        mechanism, user = security.mechanism, security.username
        exchange = sasl_exchange(mechanism, user, security.password)
        try:
            request = next(exchange)
            while True:
                request = exchange.send(self.request(request))
        except StopIteration:
            return
        except SaslRefused as e:
            raise CliError(e.explain(f" at {self.address}")) from None

    # ------------------------------------------------------------------------------------------ the wire

    def _exchange(self, body: Message, version: int) -> bytes:
        correlation_id, data = self._conversation.request(body, version)
        try:
            self.sock.sendall(data)
            prefix = self._read(4)
            try:
                size = self._conversation.frame_size(prefix)
            except ConnectionError:
                raise CliError(f"the broker at {self.address} sent a response of {_SIZE.unpack(prefix)[0]} bytes") \
                    from None
            payload = self._read(size)
        except TimeoutError:
            raise CliError(f"the broker at {self.address} did not answer within {self.sock.gettimeout():.0f} s") \
                from None
        except OSError as e:
            raise CliError(f"lost the connection to the broker at {self.address}: {e.strerror or e}") from None
        try:
            self._conversation.answered(payload)
        except UnexpectedResponse:
            (answered,) = _SIZE.unpack_from(payload, 0) if len(payload) >= 4 else (None,)
            raise CliError(f"the broker at {self.address} answered request {correlation_id} with {answered}") \
                from None
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


def wire_error(code: int, message: str | None) -> str:
    """A broker's error as one line, as :func:`~tidelog.cli.client.describe_error` puts client errors:
    ``<message> (<ERROR_NAME>)``."""
    return f"{message or 'refused'} ({_error_name(code)})"


__all__ = ["CLIENT_ID", "BrokerConnection", "ClientSecurity", "wire_error"]
