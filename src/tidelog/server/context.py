"""What a request handler gets besides the request: who asked, through which listener, in which
version. Handlers get the broker's components from their constructor, never from the context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tidelog.protocol.messages.header import RequestHeader
from tidelog.security.principal import ANONYMOUS, KafkaPrincipal


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    connection_id: str
    client_host: str
    listener_name: str = "PLAINTEXT"
    #: Who sent the request: ANONYMOUS until SASL or a client certificate says otherwise.
    principal: KafkaPrincipal = ANONYMOUS
    #: The listener's security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).
    security_protocol: str = "PLAINTEXT"
    #: The connection's SASL state (a tidelog.server.authenticator.SaslAuthenticator) on SASL listeners.
    authenticator: Any = None

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id


__all__ = ["RequestContext"]
