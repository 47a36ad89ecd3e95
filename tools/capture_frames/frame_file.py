"""The .bin files: ``<out>/<source>/<api>_<request|response>_v<N>_<n>.bin`` (tansu's naming)."""

from __future__ import annotations

from pathlib import Path

from tidelog.protocol import api_entry
from tools.capture_frames.cluster import snake
from tools.capture_frames.fake_broker import Exchange


def file_name(api_key: int, kind: str, version: int, n: int) -> str:
    return f"{snake(api_entry(api_key).name)}_{kind}_v{version}_{n}.bin"


def write_frames(out: Path, client: str, kind: str, frames: dict[tuple[int, int], list[bytes]]) -> int:
    """Replace ``out/client/*_<kind>_v*.bin`` with ``frames``; returns the number of files written."""
    folder = out / client
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob(f"*_{kind}_v*.bin"):
        old.unlink()
    count = 0
    for (api_key, version), items in sorted(frames.items()):
        for n, data in enumerate(items):
            (folder / file_name(api_key, kind, version, n)).write_bytes(data)
            count += 1
    return count


def dump_exchanges(folder: Path, exchanges: list[Exchange]) -> None:
    """Every request and the response sent for it, numbered in arrival order (for debugging)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, ex in enumerate(exchanges):
        stem = f"{i:04d}_{snake(api_entry(ex.api_key).name)}_v{ex.api_version}"
        (folder / f"{stem}_request.bin").write_bytes(ex.request)
        if ex.response is not None:
            (folder / f"{stem}_response.bin").write_bytes(ex.response)

