"""TubeMQ's RPC framing, sans-IO: bytes in, frames out; payloads in, framed bytes out.

Layout (big-endian int32s)::

    0xFF7FF4FE | serialNo | listSize | <len><data> ... listSize times

* ``0xFF7FF4FE`` is ``RPC_PROTOCOL_BEGIN_TOKEN``: any other value means the peer does not speak
  TubeMQ's RPC, and the connection is closed (what TubeMQ's decoder and its published doc do).
* ``serialNo`` is the sender's; a response echoes the request's, and responses may come back in any
  order (the client matches them by it). Kept here as an unsigned 32-bit value: only echoed.
* ``listSize`` counts the ``<len><data>`` blocks; TubeMQ's decoder allows 0 to
  ``MAX_FRAME_MAX_LIST_SIZE`` = (20 MiB + 8 MiB) / 8192 = 3584, and so does this one.
* The blocks concatenated are the frame's payload (three varint-delimited protobufs, see
  :mod:`tidelog.protocol.tubemq.rpc`). Every TubeMQ sender (Java, Go, C++) cuts the payload into
  blocks of at most 8192 bytes (``RPC_MAX_BUFFER_SIZE``); this decoder refuses a longer or negative
  block, which TubeMQ's own does not check. So a frame never exceeds 3584 x 8192 bytes (28 MiB), and
  nothing is allocated for a block before its length is checked.

:class:`FrameDecoder` is one connection's receive buffer; not thread-safe.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from tidelog.protocol.exceptions import ProtocolError

BEGIN_TOKEN = 0xFF7FF4FE
MAX_LIST_SIZE = 3584
MAX_BLOCK_BYTES = 8192
MAX_FRAME_BYTES = MAX_LIST_SIZE * MAX_BLOCK_BYTES

_HEADER = struct.Struct(">IIi")  # token, serialNo (echoed as unsigned), listSize
_LENGTH = struct.Struct(">i")


class FrameError(ProtocolError):
    """Bytes that are not TubeMQ framing (bad token, list size or block length): close the connection."""


@dataclass(frozen=True, slots=True)
class Frame:
    serial_no: int
    payload: bytes


class FrameDecoder:
    """Splits a byte stream into :class:`Frame` s.

    Rules: the 12-byte header is checked as soon as it is complete (token, then list size); each
    block length is checked before its bytes are buffered; a frame is returned once its last block
    is complete. After a :class:`FrameError` the stream is unusable.
    """

    __slots__ = ("_blocks_left", "_buf", "_need_block", "_payload", "_serial_no")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._serial_no: int | None = None  # set while a frame's blocks are being read
        self._blocks_left = 0
        self._need_block = -1  # length of the block being read, -1 while its length prefix is awaited
        self._payload = bytearray()

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned in a frame."""
        return len(self._buf) + len(self._payload)

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        """Add received bytes; return the frames they complete, in order. Raises FrameError."""
        self._buf += data
        buf = self._buf
        pos = 0
        frames: list[Frame] = []
        while True:
            if self._serial_no is None:
                if len(buf) - pos < _HEADER.size:
                    break
                token, serial_no, list_size = _HEADER.unpack_from(buf, pos)
                if token != BEGIN_TOKEN:
                    raise FrameError(f"not a TubeMQ frame: token 0x{token:08X} is not 0x{BEGIN_TOKEN:08X}")
                if not 0 <= list_size <= MAX_LIST_SIZE:
                    raise FrameError(f"frame list size {list_size} is outside 0..{MAX_LIST_SIZE}")
                pos += _HEADER.size
                self._serial_no, self._blocks_left = serial_no, list_size
            if self._blocks_left == 0:
                frames.append(Frame(self._serial_no, bytes(self._payload)))
                self._serial_no = None
                self._payload.clear()
                continue
            if self._need_block < 0:
                if len(buf) - pos < _LENGTH.size:
                    break
                (length,) = _LENGTH.unpack_from(buf, pos)
                if not 0 <= length <= MAX_BLOCK_BYTES:
                    raise FrameError(f"frame block of {length} bytes is outside 0..{MAX_BLOCK_BYTES}")
                pos += _LENGTH.size
                self._need_block = length
            if len(buf) - pos < self._need_block:
                break
            self._payload += buf[pos : pos + self._need_block]
            pos += self._need_block
            self._need_block = -1
            self._blocks_left -= 1
        del buf[:pos]
        return frames


def encode_frame(serial_no: int, payload: bytes | bytearray | memoryview) -> bytes:
    """``payload`` framed under ``serial_no``, cut into blocks of at most 8192 bytes (as TubeMQ's
    senders do). ``ValueError`` if it needs more than 3584 blocks."""
    view = memoryview(payload)
    blocks = [view[i : i + MAX_BLOCK_BYTES] for i in range(0, len(view), MAX_BLOCK_BYTES)]
    if len(blocks) > MAX_LIST_SIZE:
        raise ValueError(f"a payload of {len(view)} bytes needs more than {MAX_LIST_SIZE} blocks")
    parts = [_HEADER.pack(BEGIN_TOKEN, serial_no & 0xFFFFFFFF, len(blocks))]
    for block in blocks:
        parts.append(_LENGTH.pack(len(block)))
        parts.append(bytes(block))
    return b"".join(parts)


__all__ = ["BEGIN_TOKEN", "MAX_BLOCK_BYTES", "MAX_FRAME_BYTES", "MAX_LIST_SIZE", "Frame", "FrameDecoder",
           "FrameError", "encode_frame"]
