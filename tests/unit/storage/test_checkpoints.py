"""Checkpoint files: round trip, atomic replace, malformed content."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidelog.storage.checkpoints import CheckpointError, read_checkpoint, write_checkpoint


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    assert read_checkpoint(path) == {}
    entries = {("orders", 0): 42, ("orders", 1): 0, ("a.b_c-d", 12): 2**40}
    write_checkpoint(path, entries)
    assert read_checkpoint(path) == entries
    assert path.read_text().splitlines()[:2] == ["0", "3"]
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("text", ["", "1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt x 1\n", "zero\n"])
def test_malformed(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CheckpointError):
        read_checkpoint(path)
