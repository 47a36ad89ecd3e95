"""Size-prefixed framing: every Kafka request and response is ``int32 size`` then ``size`` bytes.

:class:`FrameDecoder` is a sans-IO receive buffer: feed it whatever bytes arrived, get back complete
frames. It checks the size prefix against ``max_frame_bytes`` *before* buffering the frame, so a hostile
prefix can never make it allocate (the broker's ``socket.request.max.bytes``).
Not thread-safe: one per connection.
"""

from __future__ import annotations

from tidelog.protocol.exceptions import FrameTooLargeError, MalformedMessageError
from tidelog.protocol.primitives import INT32

DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default


class FrameDecoder:
    """Splits a byte stream into frames (without their size prefixes)."""

    __slots__ = ("_buf", "_need", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._need = -1  # size of the frame being received, -1 while reading its prefix

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buf)

    @property
    def pending_frame_bytes(self) -> int:
        """Bytes still missing to complete the frame in progress (0 if none has started)."""
        if self._need < 0:
            return 0
        return max(0, 4 + self._need - len(self._buf))

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add received bytes; return the frames they complete, in order.

        Raises FrameTooLargeError or MalformedMessageError (negative size); the connection is then
        unusable and should be closed.
        """
        buf = self._buf
        buf += data
        frames: list[bytes] = []
        while True:
            if self._need < 0:
                if len(buf) < 4:
                    break
                (size,) = INT32.unpack_from(buf, 0)
                if size < 0:
                    raise MalformedMessageError(f"negative frame size {size}")
                if size > self.max_frame_bytes:
                    raise FrameTooLargeError(size, self.max_frame_bytes)
                self._need = size
            end = 4 + self._need
            if len(buf) < end:
                break
            frames.append(bytes(buf[4:end]))
            del buf[:end]
            self._need = -1
        return frames


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Prefix ``payload`` with its size."""
    return INT32.pack(len(payload)) + bytes(payload)


__all__ = ["DEFAULT_MAX_FRAME_BYTES", "FrameDecoder", "frame"]
