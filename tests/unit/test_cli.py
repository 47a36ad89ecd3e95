"""The ``tidelog`` command line, run as a user runs it (a real subprocess)."""

from __future__ import annotations

import subprocess
import sys

from tidelog import __version__


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tidelog", *args], capture_output=True, text=True, timeout=60)


def test_help_lists_commands() -> None:
    out = _run("--help")
    assert out.returncode == 0
    assert "info" in out.stdout and "usage: tidelog" in out.stdout


def test_version() -> None:
    out = _run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"tidelog {__version__}"


def test_info_reports_codec_and_records() -> None:
    out = _run("info", "--verbose")
    assert out.returncode == 0, out.stderr
    assert f"tidelog {__version__}" in out.stdout
    assert "Produce" in out.stdout and "ApiVersions" in out.stdout
    assert "gzip" in out.stdout and "zstd" in out.stdout


def test_no_command_prints_help_and_fails() -> None:
    out = _run()
    assert out.returncode == 2 and "usage" in out.stdout


def test_unknown_command_is_a_clear_error() -> None:
    out = _run("frobnicate")
    assert out.returncode == 2 and "invalid choice" in out.stderr
