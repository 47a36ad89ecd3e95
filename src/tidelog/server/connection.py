"""Per-connection protocol state, sans-IO: bytes in -> request frames; responses out in order.

Rules:

1. Frames are split by a :class:`~tidelog.protocol.framing.FrameDecoder` that refuses a size prefix
   above ``socket.request.max.bytes`` before buffering anything.
2. Every request takes the next sequence number when it arrives. Responses may complete in any order
   (a long-polling Fetch finishes after a later Metadata), but they leave in arrival order: a finished
   response waits until every earlier one has left (Kafka's per-connection ordering guarantee).
3. A request that needs no response (Produce with acks=0) still takes a sequence number; finishing
   it with ``None`` releases the responses queued behind it.
4. ``in_flight`` counts requests received but not yet answered; the network layer stops reading
   while it exceeds ``queued.max.requests`` (back-pressure).

Not thread-safe: one per connection, used by the event loop only.
"""

from __future__ import annotations

from tidelog.protocol.framing import DEFAULT_MAX_FRAME_BYTES, FrameDecoder


class Connection:
    __slots__ = ("_decoder", "_done", "_next_seq", "_send_seq")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._decoder = FrameDecoder(max_frame_bytes)
        self._next_seq = 0
        self._send_seq = 0
        self._done: dict[int, list | None] = {}

    @property
    def in_flight(self) -> int:
        return self._next_seq - self._send_seq

    def limit_frames(self, max_frame_bytes: int) -> None:
        """Change the largest frame accepted (smaller before SASL authentication)."""
        self._decoder.max_frame_bytes = max_frame_bytes

    @property
    def next_to_send(self) -> int:
        """The sequence number of the next response to leave (every earlier one has)."""
        return self._send_seq

    def receive(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Feed received bytes; returns complete request frames. Raises ProtocolError on a bad frame."""
        return self._decoder.feed(data)

    def start(self) -> int:
        """Sequence number for the next request received."""
        seq = self._next_seq
        self._next_seq += 1
        return seq

    def finish(self, seq: int, buffers: list | None) -> list[list]:
        """Record the response of request ``seq`` (None: no response). Returns the responses that
        can be written now, in order."""
        if seq < self._send_seq or seq >= self._next_seq or seq in self._done:
            raise ValueError(f"request {seq} is not waiting for a response")
        self._done[seq] = buffers
        ready = []
        while self._send_seq in self._done:
            out = self._done.pop(self._send_seq)
            self._send_seq += 1
            if out is not None:
                ready.append(out)
        return ready


__all__ = ["Connection"]
