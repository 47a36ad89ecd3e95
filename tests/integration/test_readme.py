"""The README's first session works as written: its shell commands and its Python snippet run against
a real broker (the only change: the bootstrap address of the test's broker instead of localhost:9092)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tidelog.testing import BrokerProcess

pytestmark = pytest.mark.integration

README = Path(__file__).resolve().parents[2] / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_session_and_snippet_run(tmp_path: Path) -> None:
    session = next(b for b in _blocks("sh") if "tidelog topics create" in b)
    snippet = next(b for b in _blocks("python") if "consumer.subscribe" in b)
    with BrokerProcess(tmp_path / "data") as broker:
        env = dict(os.environ, TIDELOG_BOOTSTRAP_SERVERS=broker.bootstrap)
        tidelog = f"{sys.executable} -m tidelog"
        script = "set -euo pipefail\n" + re.sub(r"^tidelog ", tidelog + " ", session, flags=re.M)
        script = script.replace("| tidelog ", f"| {tidelog} ")
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert sorted(out.stdout.splitlines()) == ["Created topic clicks.", "user-1\t/home", "user-2\t/cart"]
        code = snippet.replace("localhost:9092", broker.bootstrap)
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        printed = run.stdout.splitlines()
        assert {line.split()[1] for line in printed} == {"b'/home'", "b'/cart'", "b'/checkout'"}, printed
