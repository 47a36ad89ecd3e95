"""TubeMQ client authentication (``tubemq.authentication.enable``; docs/tubemq.md, "Authentication").

The master checks the ``MasterCertificateInfo`` of producers' and consumers' register and heartbeat
requests: a signed ``AuthenticateInfo`` (:func:`tidelog.security.tubemq_signature.tube_signature` with
the user's TubeMQ secret, a timestamp within :data:`TIMESTAMP_WINDOW_MS` of the broker's clock, a nonce
not seen before) or the ``authorizedToken`` an earlier success handed out. A success answers a
``MasterAuthorizedInfo`` whose ``authAuthorizedToken`` is ``user:expiry:mac``, the mac an HMAC-SHA256
keyed by the user's secret: valid for :data:`TOKEN_LIFETIME_MS` (every answered heartbeat hands out a
fresh one), across broker restarts (a client keeps its token, and TubeMQ's clients only sign again when
the master asks), and no longer once the user's secret changes or is deleted. Producers show
that token to the broker service with every message; consumers show nothing there (the client sends
its signature to a broker only when the broker asks), but a broker only serves a consumer the master's
balancer assigned the partition, which requires an authenticated registration.

Refusals are TubeMQ's: ``errCode`` 415 CERTIFICATE_FAILURE with its master's messages.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable

from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.protocol.tubemq.generated import master_service_pb2 as master_pb
from tidelog.security.tubemq_signature import NonceCache, signature_matches

#: How far a signature's timestamp may be from the broker's clock.
TIMESTAMP_WINDOW_MS = 20_000
#: How long an authorized token is valid (clients heartbeat every few seconds, each answer renews it).
TOKEN_LIFETIME_MS = 3_600_000


def _refuse(message: str) -> TubeError:
    return TubeError(TubeErrorCode.CERTIFICATE_FAILURE, message)


class TubeAuthenticator:
    """``secret`` returns a user's TubeMQ secret (None: no such user); ``now_ms`` the wall clock."""

    def __init__(self, secret: Callable[[str], str | None], now_ms: Callable[[], int]) -> None:
        self.secret = secret
        self.now_ms = now_ms
        self.nonces = NonceCache(TIMESTAMP_WINDOW_MS)
        #: ``visitAuthorizedToken`` (a required field the client echoes; not a credential here).
        self.visit_token = secrets.randbits(62)

    @staticmethod
    def _mac(user: str, expiry: int, secret: str) -> str:
        data = f"tidelog-tubemq-token:{user}:{expiry}".encode()
        return base64.urlsafe_b64encode(hmac.new(secret.encode(), data, hashlib.sha256).digest()).decode()

    def issue(self, user: str) -> master_pb.MasterAuthorizedInfo:
        secret = self.secret(user)
        if secret is None:
            raise _refuse("Illegal value: userName or password is not correct!")
        expiry = self.now_ms() + TOKEN_LIFETIME_MS
        return master_pb.MasterAuthorizedInfo(visitAuthorizedToken=self.visit_token,
                                              authAuthorizedToken=f"{user}:{expiry}:{self._mac(user, expiry, secret)}")

    def check_token(self, token: str) -> str:
        """The user an ``authAuthorizedToken`` names; refused unless this broker's master issued it
        with the user's current secret and it has not expired."""
        user, _, rest = token.strip().rpartition(":")  # the user name may hold ':'
        user, _, expiry_text = user.rpartition(":")
        secret = self.secret(user) if user else None
        try:
            expiry = int(expiry_text)
        except ValueError:
            expiry = -1
        if secret is None or expiry < self.now_ms() \
                or not hmac.compare_digest(rest.encode(), self._mac(user, expiry, secret).encode()):
            raise _refuse("Illegal value: authorized token is not valid, authenticate again!")
        return user

    def check_signature(self, info: master_pb.AuthenticateInfo) -> str:
        """The authenticated user of a signed ``AuthenticateInfo``."""
        user, signature = info.userName.strip(), info.signature.strip()
        if not user:
            raise _refuse("Illegal value: authInfo.userName is Blank!")
        if not signature:
            raise _refuse("Illegal value: authInfo.signature is Blank!")
        now = self.now_ms()
        if abs(now - info.timestamp) > TIMESTAMP_WINDOW_MS:
            raise _refuse("Illegal value: timestamp out of effective period in authenticateToken!")
        secret = self.secret(user)
        # An unknown user costs the same HMAC as a known one.
        if not signature_matches(user, secret if secret is not None else "\0" * 20, info.timestamp, info.nonce,
                                 signature) or secret is None:
            raise _refuse("Illegal value: userName or password is not correct!")
        if not self.nonces.first_use(user, info.timestamp, info.nonce, now):
            raise _refuse("Illegal value: nonce already used in authenticateToken (replayed request)!")
        return user

    def check_master(self, request) -> master_pb.MasterAuthorizedInfo:
        """Check a master request's ``authInfo`` (MasterCertificateInfo); the token to answer with."""
        if not request.HasField("authInfo"):
            raise _refuse("Server required MasterCertificateInfo!")
        certificate = request.authInfo
        if certificate.HasField("authInfo"):
            return self.issue(self.check_signature(certificate.authInfo))
        if certificate.authorizedToken:
            return self.issue(self.check_token(certificate.authorizedToken))
        raise _refuse("Illegal value: AuthenticateInfo is null!")


__all__ = ["TIMESTAMP_WINDOW_MS", "TOKEN_LIFETIME_MS", "TubeAuthenticator"]
