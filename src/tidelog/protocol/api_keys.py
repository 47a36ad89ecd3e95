"""The registry of Kafka APIs the codec knows: API key -> request class, response class, versions.

Derived from the generated messages; the server's dispatcher derives ApiVersions from its own
handler registry, which must stay within these ranges. Immutable.
"""

from __future__ import annotations

from dataclasses import dataclass

from tidelog.protocol import messages
from tidelog.protocol.exceptions import UnknownApiKeyError
from tidelog.protocol.message import Message
from tidelog.protocol.messages import API_VERSIONS, ApiKey


@dataclass(frozen=True, slots=True)
class ApiEntry:
    """One API; its request and response classes are imported on first use (a broker loads the codecs of
    the APIs it serves and is asked for, not all of them)."""

    api_key: int
    name: str
    request_name: str
    response_name: str
    min_version: int
    max_version: int
    #: Lowest flexible version of the request, or None if the API never became flexible.
    flexible_from: int | None

    @property
    def request(self) -> type[Message]:
        return getattr(messages, self.request_name)

    @property
    def response(self) -> type[Message]:
        return getattr(messages, self.response_name)

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from


API_REGISTRY: dict[int, ApiEntry] = {
    key: ApiEntry(key, request[: -len("Request")], request, response, low, high, flexible)
    for key, (request, response, low, high, flexible) in API_VERSIONS.items()
}


def api_entry(api_key: int) -> ApiEntry:
    try:
        return API_REGISTRY[api_key]
    except KeyError:
        raise UnknownApiKeyError(api_key) from None


def request_header_version(api_key: int, api_version: int) -> int:
    """Header v2 for flexible request versions, v1 otherwise (v0 only for ControlledShutdown v0)."""
    entry = api_entry(api_key)
    if entry.is_flexible(api_version):
        return 2
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 1


def response_header_version(api_key: int, api_version: int) -> int:
    """Header v1 for flexible versions, v0 otherwise; ApiVersions responses always use v0 (KIP-511)."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if api_entry(api_key).is_flexible(api_version) else 0


__all__ = [
    "API_REGISTRY",
    "ApiEntry",
    "ApiKey",
    "api_entry",
    "request_header_version",
    "response_header_version",
]
