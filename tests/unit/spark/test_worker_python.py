"""The worker-interpreter check behind ``tidelog.spark.register``, on real interpreters, without Spark."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

from tidelog.spark.worker_python import WorkerPythonError, check_interpreter, spark_python_path


def script(path: Path, body: str) -> str:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A fresh virtualenv of this Python's version, with nothing installed in it."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


def test_the_drivers_own_interpreter_passes_without_a_probe() -> None:
    started = time.monotonic()
    check_interpreter(sys.executable, "from PYSPARK_PYTHON", python_path="/nonexistent")
    assert time.monotonic() - started < 0.1


def test_another_command_for_a_python_with_tidelog_passes(tmp_path) -> None:
    wrapper = script(tmp_path / "py", f'exec {sys.executable} "$@"')
    check_interpreter(wrapper, "from PYSPARK_PYTHON", python_path=spark_python_path())


def test_a_python_without_tidelog_is_named_with_the_driver_and_the_fix(bare_python) -> None:
    with pytest.raises(WorkerPythonError) as caught:
        check_interpreter(bare_python, "from PYSPARK_PYTHON", python_path=spark_python_path())
    message = str(caught.value)
    assert f"started with {bare_python!r} (from PYSPARK_PYTHON)" in message
    assert f"this driver runs {sys.executable}" in message
    assert "cannot import Tidelog: ModuleNotFoundError: No module named 'tidelog'" in message
    assert f"PYSPARK_PYTHON={sys.executable}" in message
    assert "spark.pyspark.python" in message


def test_a_missing_interpreter_and_another_python_version(tmp_path) -> None:
    with pytest.raises(WorkerPythonError, match="'no-such-python-here' is not an executable on PATH"):
        check_interpreter("no-such-python-here", "the default when PYSPARK_PYTHON is not set")
    # Stands in for a Python of another minor version (none is installed here): it answers the probe as one.
    other = script(tmp_path / "python3.99", "echo 3.99")
    ours = f"{sys.version_info[0]}.{sys.version_info[1]}"
    with pytest.raises(WorkerPythonError, match=rf"is Python 3\.99, the driver's Python {ours}"):
        check_interpreter(other, "from PYSPARK_PYTHON")


def test_sparks_python_path_makes_pyspark_importable_in_a_bare_python(bare_python) -> None:
    """The probe gets the PYTHONPATH Spark gives its workers, so a bare Python imports pyspark as they do."""
    env = dict(os.environ, PYTHONPATH=spark_python_path())
    done = subprocess.run([bare_python, "-c", "import pyspark.sql.datasource"], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
