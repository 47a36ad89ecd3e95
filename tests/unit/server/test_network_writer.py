"""The connection's response writer over a real socket pair and event loop: file slices are released
once written, and a write that fails for an unexpected reason closes the connection with a log line
(issue 23 finding 5: the writer task used to die silently and leave the connection open and mute)."""

from __future__ import annotations

import asyncio
import io
import logging
import socket
import struct
from pathlib import Path

import pytest

from tidelog.server.dispatcher import HandlerRegistry
from tidelog.server.network import ClientProtocol, ConnectionSettings, SocketServer
from tidelog.storage.segment import FileSlice, SegmentFile
from tidelog.testing import ManualClock


async def _connected(use_sendfile: bool) -> tuple[ClientProtocol, socket.socket]:
    server = SocketServer(HandlerRegistry(), ManualClock(), ConnectionSettings())
    server.use_sendfile = use_sendfile
    ours, theirs = socket.socketpair()
    proto = ClientProtocol(server, "PLAINTEXT")
    await asyncio.get_running_loop().connect_accepted_socket(lambda: proto, ours)
    theirs.setblocking(False)
    return proto, theirs


async def _read_until_eof(sock: socket.socket, timeout: float = 10.0) -> bytes:
    loop = asyncio.get_running_loop()
    chunks = []
    async with asyncio.timeout(timeout):
        while chunk := await loop.sock_recv(sock, 1 << 16):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("use_sendfile", [True, False])
def test_a_write_failing_unexpectedly_closes_the_connection_with_a_log_line(
        tmp_path: Path, use_sendfile: bool, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"x" * 100)
    closed = io.FileIO(path, "r")
    closed.close()  # what the old code left a queued response holding after DeleteTopics

    async def main() -> bytes:
        proto, peer = await _connected(use_sendfile)
        proto._send([struct.pack(">i", 104), FileSlice(closed, 0, 100)])
        try:
            return await _read_until_eof(peer)  # old code: no EOF, the writer died and the connection hung
        finally:
            peer.close()

    with caplog.at_level(logging.WARNING, logger="tidelog.server.network"):
        asyncio.run(main())
    assert "writing to" in caplog.text and "closing connection" in caplog.text


@pytest.mark.parametrize("use_sendfile", [True, False])
def test_a_written_slice_lets_its_closed_segment_file_go(tmp_path: Path, use_sendfile: bool) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"0123456789" * 10)
    file = io.FileIO(path, "r")
    shared = SegmentFile(file)
    records = FileSlice(file, 10, 50, shared)
    shared.close()  # the segment is deleted while the response is queued
    assert not file.closed

    async def main() -> bytes:
        proto, peer = await _connected(use_sendfile)
        proto._send([struct.pack(">i", 50), records])
        loop = asyncio.get_running_loop()
        got = b""
        async with asyncio.timeout(10):
            while len(got) < 54:
                got += await loop.sock_recv(peer, 1 << 16)
        async with asyncio.timeout(10):
            while proto._writer is not None:
                await asyncio.sleep(0.01)
        proto.close("done")
        peer.close()
        return got

    assert asyncio.run(main()) == struct.pack(">i", 50) + (b"0123456789" * 10)[10:60]
    assert file.closed, "the file closes once the last slice holding it is written"
