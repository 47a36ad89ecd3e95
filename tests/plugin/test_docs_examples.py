"""docs/testing-with-tidelog.md's Python examples (and the README's plugin example) run as written: test files through pytest (with the
plugin), scripts with the interpreter. Examples for libraries that are not installed (FastStream,
Faust) are skipped; the tidelog_cluster example is test_pytest_plugin.py's (it needs java and mvn)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testing-with-tidelog.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
#: The README's plugin example (its other Python blocks are test_readme.py's).
BLOCKS += [b for b in re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
           if "kafka_topic(" in b]


def _needs(block: str) -> str | None:
    for module in ("faststream", "faust", "aiokafka", "kafka"):
        if re.search(rf"^(from|import) {module}\b", block, re.M) and importlib.util.find_spec(module) is None:
            return module
    return None


def _id(block: str) -> str:
    m = re.search(r"def (test_\w+)|class (\w+)|from (\w+)", block)
    return next((g for g in m.groups() if g), "block") if m else "block"


@pytest.mark.parametrize("block", BLOCKS, ids=[_id(b) for b in BLOCKS])
def test_the_example_runs(block: str, pytester: pytest.Pytester, tmp_path: Path) -> None:
    missing = _needs(block)
    if missing:
        pytest.skip(f"{missing} is not installed")
    if "tidelog_cluster" in block:
        pytest.skip("run by test_pytest_plugin.py::test_cluster_fixture_survives_a_broker_loss (java, mvn)")
    if re.search(r"^(async )?def test_|TestCase", block, re.M):
        pytester.makepyfile(test_example=block)
        result = pytester.runpytest("-p", "no:randomly")
        outcomes = result.parseoutcomes()
        assert outcomes.get("passed", 0) >= 1 and not outcomes.get("failed") and not outcomes.get("errors"), \
            result.stdout.str()[-3000:]
    else:
        done = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "hello" in done.stdout
