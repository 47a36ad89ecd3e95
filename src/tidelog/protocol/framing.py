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
    """Splits a byte stream into frames (without their size prefixes).

    Each frame is returned as its own writable ``bytearray``, allocated once its size prefix is known
    and filled with one copy of the received bytes: the broker patches produced batches (offsets,
    leader epoch) in place inside it, with no further copy.
    """

    __slots__ = ("_filled", "_frame", "_head", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._head = bytearray()  # a size prefix received in pieces
        self._frame: bytearray | None = None  # the frame being filled
        self._filled = 0

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._head) + (self._filled if self._frame is not None else 0)

    @property
    def pending_frame_bytes(self) -> int:
        """Bytes still missing to complete the frame in progress (0 if none has started)."""
        return len(self._frame) - self._filled if self._frame is not None else 0

    def _start(self, size: int) -> None:
        if size < 0:
            raise MalformedMessageError(f"negative frame size {size}")
        if size > self.max_frame_bytes:
            raise FrameTooLargeError(size, self.max_frame_bytes)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytearray]:
        """Add received bytes; return the frames they complete, in order.

        Raises FrameTooLargeError or MalformedMessageError (negative size); the connection is then
        unusable and should be closed.
        """
        mv = data if isinstance(data, memoryview) else memoryview(data)
        end = len(mv)
        pos = 0
        frames: list[bytearray] = []
        while pos < end:
            frame = self._frame
            if frame is None:
                if not self._head and end - pos >= 4:
                    (size,) = INT32.unpack_from(mv, pos)
                    self._start(size)
                    if end - pos - 4 >= size:  # the whole frame is here: one copy, no zero-fill
                        frames.append(bytearray(mv[pos + 4 : pos + 4 + size]))
                        pos += 4 + size
                        continue
                    pos += 4
                else:
                    take = min(4 - len(self._head), end - pos)
                    self._head += mv[pos : pos + take]
                    pos += take
                    if len(self._head) < 4:
                        break
                    (size,) = INT32.unpack_from(self._head, 0)
                    self._start(size)
                    self._head.clear()
                frame = self._frame = bytearray(size)
                self._filled = 0
            take = min(len(frame) - self._filled, end - pos)
            frame[self._filled : self._filled + take] = mv[pos : pos + take]
            self._filled += take
            pos += take
            if self._filled == len(frame):
                frames.append(frame)
                self._frame = None
        return frames


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Prefix ``payload`` with its size."""
    return INT32.pack(len(payload)) + bytes(payload)


__all__ = ["DEFAULT_MAX_FRAME_BYTES", "FrameDecoder", "frame"]
