"""Who a request comes from: Kafka's ``KafkaPrincipal`` (a type and a name, written ``User:alice``).

A connection starts as ``User:ANONYMOUS`` (PLAINTEXT listeners, and SSL without a client certificate);
SASL authentication or a client certificate replace it. The authorizer and quotas key on it. Immutable.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str
    #: Authenticated with a delegation token (SCRAM ``tokenauth``): such a connection may not create, renew
    #: or expire tokens. Not part of the identity (equality, hashing), as in Kafka.
    token_authenticated: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``Type:name`` (the name may itself contain ``:``). Raises ValueError without a type."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type or not name:
            raise ValueError(f"{text!r} is not a principal: expected Type:name, e.g. User:alice")
        return cls(principal_type, name)


USER_TYPE = "User"
ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")

__all__ = ["ANONYMOUS", "USER_TYPE", "KafkaPrincipal"]
