"""A partition's leader-epoch cache: at which offset each leader epoch began (KIP-101).

File ``<partition dir>/leader-epoch-checkpoint`` (Kafka's text format, written atomically)::

    0                      version
    <N>                    number of entries
    <epoch> <start offset> N lines, epochs and start offsets strictly increasing

Rules:

1. ``assign(epoch, start)`` records that ``epoch`` begins at ``start``: the leader calls it when it
   becomes leader (start = its log end) and on every append, a follower for every batch it copies
   (the batch's partition leader epoch). The latest epoch again is a no-op; an entry that conflicts
   (an epoch or a start offset not below the new one) is removed first, so the list stays strictly
   increasing in both.
2. ``end_offset_for(epoch, log_end)`` answers OffsetForLeaderEpoch: the largest known epoch <= the
   requested one and the start offset of the first epoch after it (the log end for the latest
   epoch). A requested epoch older than every entry answers (requested, first start offset); one
   newer than every entry, or an empty cache, (-1, -1).
3. Truncating the log's end removes the entries starting at or after the new end; moving the log
   start moves the first entries' start offsets up to it.

Every change is written to the file before the call returns (changes are rare: one per leader
change). Loop-only, not thread-safe.
"""

from __future__ import annotations

from pathlib import Path

from tidelog.storage.checkpoints import CheckpointError, write_atomically

LEADER_EPOCH_FILE = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
VERSION = 0


class LeaderEpochCache:
    def __init__(self, path: Path | None, entries: list[tuple[int, int]] | None = None) -> None:
        self.path = path  # None: in memory only (tests)
        self.entries: list[tuple[int, int]] = list(entries or [])

    @classmethod
    def load(cls, directory: Path) -> LeaderEpochCache:
        """The cache in ``directory`` (empty when the file is missing; CheckpointError if malformed)."""
        path = directory / LEADER_EPOCH_FILE
        return cls(path, read_leader_epochs(path))

    @property
    def exists_on_disk(self) -> bool:
        return self.path is not None and self.path.exists()

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED_EPOCH

    def start_offset_of_latest(self) -> int:
        return self.entries[-1][1] if self.entries else UNDEFINED_OFFSET

    def assign(self, epoch: int, start_offset: int) -> None:
        if epoch < 0 or (self.entries and self.entries[-1][0] == epoch):
            return
        kept = [(e, s) for e, s in self.entries if e < epoch and s < start_offset]
        kept.append((epoch, start_offset))
        previous, self.entries = self.entries, kept
        try:
            self.save()
        except OSError:  # a full disk: the append that needed the entry fails, and so does this
            self.entries = previous
            raise

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        if epoch < 0 or not self.entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch == self.entries[-1][0]:
            return epoch, log_end_offset
        floor = None
        for e, s in self.entries:
            if e > epoch:
                return (floor if floor is not None else epoch), s
            floor = e
        return UNDEFINED_EPOCH, UNDEFINED_OFFSET  # newer than every epoch this log knows

    def truncate_from_end(self, end_offset: int) -> None:
        kept = [(e, s) for e, s in self.entries if s < end_offset]
        if kept != self.entries:
            self.entries = kept
            self.save()

    def truncate_from_start(self, start_offset: int) -> None:
        before = [i for i, (_, s) in enumerate(self.entries) if s <= start_offset]
        if not before:
            return
        last = before[-1]
        epoch, _ = self.entries[last]
        kept = [(epoch, start_offset), *self.entries[last + 1:]]
        if kept != self.entries:
            self.entries = kept
            self.save()

    def clear(self) -> None:
        if self.entries:
            self.entries = []
            self.save()

    def save(self) -> None:
        if self.path is None:
            return
        lines = [str(VERSION), str(len(self.entries))] + [f"{e} {s}" for e, s in self.entries]
        write_atomically(self.path, ("\n".join(lines) + "\n").encode())


def read_leader_epochs(path: Path) -> list[tuple[int, int]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    try:
        if int(lines[0]) != VERSION:
            raise CheckpointError(f"{path}: unknown version {lines[0]!r}")
        count = int(lines[1])
        entries = [(int(e), int(s)) for e, s in (line.split() for line in lines[2:2 + count])]
    except (IndexError, ValueError) as e:
        raise CheckpointError(f"{path}: malformed leader-epoch checkpoint ({e})") from None
    if len(entries) != count:
        raise CheckpointError(f"{path}: expected {count} entries, found {len(entries)}")
    return entries


__all__ = ["LEADER_EPOCH_FILE", "UNDEFINED_EPOCH", "UNDEFINED_OFFSET", "LeaderEpochCache", "read_leader_epochs"]
