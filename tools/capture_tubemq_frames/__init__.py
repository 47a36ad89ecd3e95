"""Capture golden TubeMQ frames from the real Java client (``python -m tools.capture_tubemq_frames``).

A recording TCP proxy sits in front of a ``tidelog serve``'s TubeMQ master and broker listeners (the
master advertises the proxy's broker port, ``tubemq.broker.advertised.listener``), and the TubeMQ
Java client of ``tests/tubemq/java`` produces a few messages with attributes and consumes them with a
pull consumer through it. Every frame of every connection is recorded both ways; the first
``--per-method`` request frames of each method and the responses Tidelog sent back are saved under
``--out`` (default ``tests/data/frames/tubemq-java-1.13.0``) as ``<javaMethod>_request_<n>.bin`` and
``<javaMethod>_response_<n>.bin``: whole frames, TubeMQ header included. Needs java and mvn.

Re-running replaces the .bin files (client ids, times and serial numbers differ from run to run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "tests" / "data" / "frames" / "tubemq-java-1.13.0"


class RecordingProxy:
    """Forwards connections from its listening ports to targets, recording (connection, direction, bytes)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.streams: list[tuple[str, bytearray, bytearray]] = []  # (listener, client->server, server->client)
        self.targets: dict[str, tuple[str, int]] = {}
        self.ports: dict[str, int] = {}
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def listen(self, name: str) -> int:
        async def start() -> int:
            server = await asyncio.start_server(lambda r, w: self._serve(name, r, w), "127.0.0.1", 0)
            return server.sockets[0].getsockname()[1]

        self.ports[name] = asyncio.run_coroutine_threadsafe(start(), self.loop).result()
        return self.ports[name]

    async def _serve(self, name: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.targets[name])
        sent, received = bytearray(), bytearray()
        self.streams.append((name, sent, received))

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, record: bytearray) -> None:
            try:
                while data := await src.read(65536):
                    record += data
                    dst.write(data)
                    await dst.drain()
            except ConnectionError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pump(reader, up_writer, sent), pump(up_reader, writer, received))


def run(out: Path, per_method: int) -> int:
    sys.path.insert(0, str(REPO))
    from tests.tubemq.driver import build, command
    from tidelog.protocol.tubemq.frame import FrameDecoder
    from tidelog.protocol.tubemq.rpc import METHODS, decode_request
    from tidelog.testing import BrokerProcess
    from tidelog.testing.tubemq import TUBEMQ_OVERRIDES, tubemq_endpoints

    classpath = build()
    proxy = RecordingProxy()
    master_port, broker_port = proxy.listen("master"), proxy.listen("broker")
    overrides = {**TUBEMQ_OVERRIDES, "tubemq.broker.advertised.listener": f"127.0.0.1:{broker_port}"}
    with tempfile.TemporaryDirectory() as tmp, BrokerProcess(Path(tmp), overrides=overrides) as broker:
        master, brk = tubemq_endpoints(broker)
        for name, address in (("master", master), ("broker", brk)):
            host, port = address.rsplit(":", 1)
            proxy.targets[name] = (host, int(port))
        subprocess.run([sys.executable, "-m", "tidelog", "topics", "create", "golden", "--partitions", "2",
                        "--bootstrap-server", broker.bootstrap], check=True, capture_output=True)
        via = f"127.0.0.1:{master_port}"
        messages = [{"body": f"golden-{i}", "attributes": [["k", f"v{i}"]], "msgType": "t", "msgTime": "202601010000"}
                    for i in range(4)]
        subprocess.run(command(classpath, "produce", via, "golden", 500), input="".join(json.dumps(m) + "\n"
                       for m in messages), capture_output=True, text=True, check=True, timeout=120)
        consumer = subprocess.Popen(command(classpath, "pull", via, "golden-group", "golden", 500),
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert consumer.stdout is not None and consumer.stdin is not None
        records = 0
        while records < len(messages):
            line = consumer.stdout.readline()
            if not line:
                raise RuntimeError("the consumer exited early")
            records += json.loads(line)["event"] == "record"
        consumer.stdin.close()
        consumer.wait(60)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.bin"):
        old.unlink()
    saved: dict[str, int] = defaultdict(int)
    for _, sent, received in proxy.streams:
        requests = FrameDecoder().feed(bytes(sent))
        responses = {f.serial_no: f for f in FrameDecoder().feed(bytes(received))}
        raw = _raw_frames(bytes(sent))
        for frame, frame_bytes in zip(requests, raw):
            name = METHODS[decode_request(frame).method].java_name
            if saved[name] >= per_method or frame.serial_no not in responses:
                continue
            n = saved[name]
            (out / f"{name}_request_{n}.bin").write_bytes(frame_bytes)
            (out / f"{name}_response_{n}.bin").write_bytes(_raw_frames(bytes(received), responses[frame.serial_no]))
            saved[name] += 1
    print(f"saved {sum(saved.values())} request/response pairs to {out}: {dict(saved)}")
    return 0


def _raw_frames(stream: bytes, only=None):
    """The bytes of each frame of ``stream`` (or of the one frame ``only``), as they were on the wire."""
    import struct

    pos, out = 0, []
    while pos + 12 <= len(stream):
        start = pos
        serial, count = struct.unpack_from(">Ii", stream, pos + 4)
        pos += 12
        for _ in range(count):
            (length,) = struct.unpack_from(">i", stream, pos)
            pos += 4 + length
        if only is not None and serial == only.serial_no:
            return stream[start:pos]
        out.append(stream[start:pos])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.capture_tubemq_frames", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--per-method", type=int, default=2)
    args = parser.parse_args(argv)
    return run(args.out, args.per_method)


__all__ = ["RecordingProxy", "main"]
