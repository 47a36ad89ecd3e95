"""The JSON API's errors: ``{"error": "<what went wrong>", "code": "<KAFKA_ERROR_CODE or API code>"}`` with a
4xx status (5xx only for the broker's own failures).

Kafka error codes map to HTTP statuses by meaning: unknown things are 404, things that exist already
or are in the wrong state 409, refusals 403, storage or availability trouble 503, the rest (invalid
requests, configs, partitions, offsets ...) 400. The ``code`` is Kafka's name for the error, so a
client of the API (the CLI, a script) can act on it as it would on a Kafka client's exception.
"""

from __future__ import annotations

import json
import logging

from aiohttp import web

from tidelog.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

_NOT_FOUND = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.GROUP_ID_NOT_FOUND,
              ErrorCode.RESOURCE_NOT_FOUND, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND}
_CONFLICT = {ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.NON_EMPTY_GROUP, ErrorCode.REBALANCE_IN_PROGRESS,
             ErrorCode.ILLEGAL_GENERATION, ErrorCode.STALE_MEMBER_EPOCH}
_FORBIDDEN = {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
              ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
              ErrorCode.TOPIC_DELETION_DISABLED, ErrorCode.POLICY_VIOLATION}
_UNAVAILABLE = {ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_ENOUGH_REPLICAS,
                ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.REQUEST_TIMED_OUT}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    @classmethod
    def bad_request(cls, message: str, code: str = "INVALID_REQUEST") -> ApiError:
        return cls(400, code, message)

    @classmethod
    def not_found(cls, message: str, code: str = "NOT_FOUND") -> ApiError:
        return cls(404, code, message)

    @classmethod
    def from_kafka(cls, code: ErrorCode | int, message: str | None = None) -> ApiError:
        code = ErrorCode.from_code(int(code))
        if code in _NOT_FOUND:
            status = 404
        elif code in _CONFLICT:
            status = 409
        elif code in _FORBIDDEN:
            status = 403
        elif code in _UNAVAILABLE:
            status = 503
        elif code is ErrorCode.UNKNOWN_SERVER_ERROR:
            status = 500
        else:
            status = 400
        return cls(status, code.name, message or code.message)

    def response(self) -> web.Response:
        return web.json_response({"error": self.message, "code": self.code}, status=self.status)


def check(code: int, message: str | None = None) -> None:
    """Raise the ApiError of a Kafka response's error code (nothing for NONE)."""
    if code:
        raise ApiError.from_kafka(code, message)


@web.middleware
async def error_middleware(request: web.Request, handler) -> web.StreamResponse:
    """Every failure of an ``/api/`` route becomes a JSON error: ApiError and KafkaError as they say,
    aiohttp's own HTTP errors (404 route, 405 method, 413 body too large) with their status, and an
    unexpected exception a logged 500 (a bug, never the caller's fault)."""
    try:
        return await handler(request)
    except ApiError as e:
        return e.response()
    except KafkaError as e:
        return ApiError.from_kafka(e.code, e.message).response()
    except web.HTTPException as e:
        if not request.path.startswith("/api/") or e.status < 400:
            raise
        code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 413: "REQUEST_TOO_LARGE"}.get(e.status, "HTTP_ERROR")
        return web.json_response({"error": e.reason, "code": code}, status=e.status)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return ApiError.bad_request(f"the request body is not valid JSON: {e}", "MALFORMED_JSON").response()
    except Exception:
        if not request.path.startswith("/api/"):
            raise
        log.exception("console API %s %s failed", request.method, request.path)
        return web.json_response({"error": "internal error (see the broker's log)", "code": "UNKNOWN_SERVER_ERROR"},
                                 status=500)


__all__ = ["ApiError", "check", "error_middleware"]
