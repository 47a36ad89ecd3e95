"""tests/toolchain.py's build cache (used by the Go driver's build and the JavaScript clients' npm install): a
key is built once, a failed build leaves nothing behind, a key covers the tool's version and the inputs' bytes,
and builds of other keys are removed only after two weeks unused."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests import toolchain


def test_a_key_is_built_once_and_appears_whole(tmp_path: Path) -> None:
    made: list[Path] = []

    def make(directory: Path) -> None:
        made.append(directory)
        assert not (tmp_path / "cache" / "k1").exists()  # built aside, renamed into place
        (directory / "product").write_text("built")

    first = toolchain.build_once(tmp_path / "cache", "k1", "product", make)
    second = toolchain.build_once(tmp_path / "cache", "k1", "product", make)
    assert first == second == tmp_path / "cache" / "k1" / "product"
    assert first.read_text() == "built"
    assert len(made) == 1
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [".lock", "k1"]


def test_a_failed_build_leaves_nothing_and_the_next_one_builds(tmp_path: Path) -> None:
    def fail(directory: Path) -> None:
        (directory / "half").write_text("half")
        raise RuntimeError("compiler says no")

    with pytest.raises(RuntimeError, match="compiler says no"):
        toolchain.build_once(tmp_path, "k", "product", fail)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock"]
    built = toolchain.build_once(tmp_path, "k", "product", lambda d: (d / "product").write_text("ok"))
    assert built.read_text() == "ok"


def test_other_keys_are_pruned_after_two_weeks_unused(tmp_path: Path) -> None:
    for key in ("old", "recent"):
        toolchain.build_once(tmp_path, key, "p", lambda d: (d / "p").write_text(""))
    weeks_ago = time.time() - toolchain.STALE_AFTER_S - 60
    os.utime(tmp_path / "old", (weeks_ago, weeks_ago))
    toolchain.build_once(tmp_path, "new", "p", lambda d: (d / "p").write_text(""))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "new", "recent"]


def test_the_content_hash_covers_the_version_and_the_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("one")
    b.write_text("two")
    version = [sys.executable, "--version"]
    key = toolchain.content_hash(version, [a, b])
    assert len(key) == 16 and key == toolchain.content_hash(version, [a, b])
    assert toolchain.content_hash([sys.executable, "-c", "print('other')"], [a, b]) != key
    b.write_text("three")
    assert toolchain.content_hash(version, [a, b]) != key


def test_the_cache_root_follows_its_override_and_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("TIDELOG_X_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert toolchain.cache_root("x", "TIDELOG_X_DIR") == tmp_path / "xdg" / "tidelog" / "x"
    monkeypatch.setenv("TIDELOG_X_DIR", str(tmp_path / "mine"))
    assert toolchain.cache_root("x", "TIDELOG_X_DIR") == tmp_path / "mine"
