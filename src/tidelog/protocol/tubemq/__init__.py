"""TubeMQ's client RPC as a pure codec (docs/tubemq.md): frames (:mod:`.frame`), the RPC envelope,
services and methods (:mod:`.rpc`), the protobuf messages generated from TubeMQ's ``.proto`` files
(:mod:`.generated`, by ``tools/tubemq_codegen``), status codes (:mod:`.error_code`), the string
formats of brokers, partitions and subscriptions (:mod:`.notation`) and message payloads and their
mapping onto Kafka records (:mod:`.message`). Sans-IO, like the Kafka codec beside it."""

from tidelog.protocol.tubemq.error_code import TubeError, TubeErrorCode
from tidelog.protocol.tubemq.frame import (
    BEGIN_TOKEN,
    MAX_BLOCK_BYTES,
    MAX_LIST_SIZE,
    Frame,
    FrameDecoder,
    FrameError,
    encode_frame,
)
from tidelog.protocol.tubemq.rpc import (
    METHODS,
    MalformedRequestError,
    Method,
    MethodSpec,
    RpcRequest,
    RpcResponse,
    Service,
    decode_body,
    decode_request,
    decode_response,
    encode_exception,
    encode_request,
    encode_response,
)

__all__ = [
    "BEGIN_TOKEN",
    "MAX_BLOCK_BYTES",
    "MAX_LIST_SIZE",
    "METHODS",
    "Frame",
    "FrameDecoder",
    "FrameError",
    "MalformedRequestError",
    "Method",
    "MethodSpec",
    "RpcRequest",
    "RpcResponse",
    "Service",
    "TubeError",
    "TubeErrorCode",
    "decode_body",
    "decode_request",
    "decode_response",
    "encode_exception",
    "encode_frame",
    "encode_request",
    "encode_response",
]
