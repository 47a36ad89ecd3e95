"""TubeMQ's business status codes (``errCode`` in the inner responses; its ``TErrCodeConstants``).

They travel inside each response message, next to ``success`` and ``errMsg``; RPC-level failures
travel as exception bodies instead (:mod:`tidelog.protocol.tubemq.rpc`). How TubeMQ clients react to
the ones Tidelog sends is in docs/tubemq.md. Immutable.
"""

from __future__ import annotations

from enum import IntEnum


class TubeErrorCode(IntEnum):
    SUCCESS = 200
    NOT_READY = 201
    MOVED = 301
    BAD_REQUEST = 400
    UNAUTHORIZED = 401
    CONNECT_RETURN_NULL = 402
    FORBIDDEN = 403
    NOT_FOUND = 404
    ALL_PARTITION_FROZEN = 405
    NO_PARTITION_ASSIGNED = 406
    ALL_PARTITION_WAITING = 407
    ALL_PARTITION_INUSE = 408
    PARTITION_OCCUPIED = 410
    HB_NO_NODE = 411
    DUPLICATE_PARTITION = 412
    CERTIFICATE_FAILURE = 415
    SERVER_RECEIVE_OVERFLOW = 419
    CLIENT_SHUTDOWN = 420
    CLIENT_HIGH_FREQUENCY_REQUEST = 421
    PARTITION_UNSUBSCRIBABLE = 422
    PARTITION_UNPUBLISHABLE = 423
    CLIENT_INCONSISTENT_CONSUMETYPE = 424
    CLIENT_INCONSISTENT_TOPICSET = 425
    CLIENT_INCONSISTENT_FILTERSET = 426
    CLIENT_INCONSISTENT_SESSIONKEY = 427
    CLIENT_INCONSISTENT_SELECTBIG = 428
    CLIENT_INCONSISTENT_SOURCECOUNT = 429
    CLIENT_DUPLICATE_INDEXID = 430
    TOPIC_NOT_DEPLOYED = 431
    PARAMETER_MSG_NULL = 440
    PARAMETER_MSG_TOPIC_BLANK = 441
    PARAMETER_MSG_BODY_EMPTY = 442
    PARAMETER_MSG_TOPIC_UNPUBLISHED = 443
    PARAMETER_MSG_TOPIC_NO_PARTITION = 444
    PARAMETER_MSG_OVER_MAX_LENGTH = 445
    CONSUME_GROUP_FORBIDDEN = 450
    SERVER_CONSUME_SPEED_LIMIT = 452
    CONSUME_CONTENT_FORBIDDEN = 455
    INTERNAL_SERVER_ERROR = 500
    SERVICE_UNAVAILABLE = 503
    INTERNAL_SERVER_ERROR_MSGSET_NULL = 510
    UNSPECIFIED_ABNORMAL = 599


class TubeError(Exception):
    """A request answered with a TubeMQ status code (the response's ``errCode`` and ``errMsg``)."""

    def __init__(self, code: TubeErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


__all__ = ["TubeError", "TubeErrorCode"]
