"""Per-log-dir checkpoint files, written atomically (write to ``.tmp``, fsync, rename, fsync dir; on a
full file system, with the log dir's space reserve: :mod:`tidelog.disk_space`).

Format (Kafka's offset checkpoint text format)::

    0                       version
    <N>                     number of entries
    <topic> <partition> <offset>     N lines

A missing file reads as empty; a malformed file raises :class:`CheckpointError` (the caller falls back
to a full recovery). Functions run wherever they are called (the log manager calls them off the loop).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

# Atomic replacement (a .tmp file, fsync, rename, fsync the directory), with the log dir's space
# reserve as the fallback when the file system is full (tidelog.disk_space).
from tidelog.disk_space import fsync_dir, write_atomically

VERSION = 0


class CheckpointError(Exception):
    """A checkpoint file exists but cannot be parsed."""


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    lines = text.splitlines()
    try:
        if int(lines[0]) != VERSION:
            raise CheckpointError(f"{path}: unknown checkpoint version {lines[0]!r}")
        count = int(lines[1])
        entries = {}
        for line in lines[2 : 2 + count]:
            topic, partition, offset = line.rsplit(" ", 2)
            entries[(topic, int(partition))] = int(offset)
    except (IndexError, ValueError) as e:
        raise CheckpointError(f"{path}: malformed checkpoint ({e})") from None
    if len(entries) != count:
        raise CheckpointError(f"{path}: expected {count} entries, found {len(entries)}")
    return entries


def write_checkpoint(path: Path, entries: Mapping[tuple[str, int], int]) -> None:
    lines = [str(VERSION), str(len(entries))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(entries.items())]
    write_atomically(path, ("\n".join(lines) + "\n").encode("utf-8"))


__all__ = ["CheckpointError", "fsync_dir", "read_checkpoint", "write_atomically", "write_checkpoint"]
