"""What a request handler gets besides the request: who asked, in which version, and the broker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tidelog.protocol.messages.header import RequestHeader

if TYPE_CHECKING:
    from tidelog.server.broker import Broker


@dataclass(slots=True)
class RequestContext:
    broker: Broker
    header: RequestHeader
    connection_id: str
    client_host: str
    listener_name: str = "PLAINTEXT"

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id


__all__ = ["RequestContext"]
