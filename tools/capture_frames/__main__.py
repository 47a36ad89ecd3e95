"""``python -m tools.capture_frames``: see :mod:`tools.capture_frames`."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import tools.capture_frames
from tools.capture_frames.client import DEFAULT_CAP, RUNS, capture_requests
from tools.capture_frames.encoder import encode_responses

log = logging.getLogger("capture_frames")

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.capture_frames",
        description=tools.capture_frames.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Example (from the repository root): .venv/bin/python -m tools.capture_frames --out tests/data/frames",
    )
    parser.add_argument("--out", type=Path, default=Path("tests/data/frames"), help="output folder")
    parser.add_argument(
        "--clients", nargs="*", choices=sorted(RUNS), default=sorted(RUNS),
        help="real clients to capture requests from (default: all; none with an empty list)",
    )
    parser.add_argument("--no-responses", action="store_true", help="skip the kio / kafka-python responses")
    parser.add_argument(
        "--cap", type=int, default=DEFAULT_CAP,
        help="request frames kept per (client, API, version); Produce and Metadata keep more (CAPS)",
    )
    parser.add_argument(
        "--exchanges", type=Path, metavar="DIR",
        help="also write every request and the response the fake broker sent, in order (not committed)",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds each client step may take")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    log.setLevel(logging.DEBUG if args.verbose else logging.INFO)
    if args.clients:
        capture_requests(args.out, args.clients, args.timeout, args.cap, args.exchanges)
    if not args.no_responses:
        encode_responses(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
