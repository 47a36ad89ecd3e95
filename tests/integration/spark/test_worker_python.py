"""A SparkSession whose Python workers run another interpreter than the driver: the messages users get.

Each test starts its own driver process (this interpreter, which has Tidelog) with a JVM whose Python
workers run fresh virtualenvs made here: one with nothing installed, one that has Tidelog's sources on
its path but none of their dependencies. Spark picks the interpreter for a source registered with
``tidelog.spark.register`` from PYSPARK_PYTHON, and the one that looks ``pyspark_*`` modules up
(auto-registration) from PYSPARK_DRIVER_PYTHON first, so one session shows both paths.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed")
pytest.importorskip("pyarrow", reason="the spark extra is not installed")

import tidelog
from tests import toolchain

from .conftest import _java_home

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

DRIVER = """
import json
from pyspark.sql import SparkSession
import tidelog.spark

spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
spark.sparkContext.setLogLevel("OFF")
out = {"pythonExec": spark.sparkContext.pythonExec}
try:
    tidelog.spark.register(spark)
    out["register"] = None
except tidelog.spark.WorkerPythonError as e:
    out["register"] = str(e)
try:  # no broker here: the source must fail before it would connect
    spark.read.format("tidelog").option("kafka.bootstrap.servers", "127.0.0.1:9").option("subscribe", "t").load()
    out["load"] = None
except Exception as e:
    out["load"] = str(e)
spark.stop()
print("RESULT " + json.dumps(out))
"""


def venv(path: Path, *paths: str) -> str:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    if paths:
        site = next((path / "lib").glob("python3*/site-packages"))
        (site / "extra.pth").write_text("\n".join(paths) + "\n")
    return str(path / "bin" / "python")


def test_workers_on_other_pythons_get_messages_naming_both_interpreters(tmp_path) -> None:
    java_home = _java_home()
    toolchain.require("java", java_home is not None, "no Java runtime (JAVA_HOME or java on PATH) for Spark")
    bare = venv(tmp_path / "bare")
    src = str(Path(tidelog.__file__).resolve().parents[1])
    partial = venv(tmp_path / "partial", src)  # imports tidelog, but not pyarrow or confluent_kafka
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.update(JAVA_HOME=str(java_home), PYSPARK_PYTHON=bare, PYSPARK_DRIVER_PYTHON=partial)
    done = subprocess.run([sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    out = json.loads(lines[-1].removeprefix("RESULT "))
    assert out["pythonExec"] == bare

    # register(): checked on the driver, before Spark would fail with "No module named 'tidelog'".
    register = out["register"]
    assert register is not None, "register() accepted a worker Python without Tidelog"
    assert f"Python workers started with {bare!r} (from PYSPARK_PYTHON)" in register
    assert f"this driver runs {sys.executable}" in register
    assert "No module named 'tidelog'" in register
    assert f"PYSPARK_PYTHON={sys.executable}" in register

    # Auto-registration in a worker that has Tidelog without its dependencies: the stand-in source says so
    # (instead of failing the look-up of every Python data source).
    load = out["load"]
    assert load is not None
    assert f"format('tidelog') cannot run in this Spark Python worker: {partial}" in load
    assert "cannot import Tidelog's Spark connector: No module named" in load
    assert "PYSPARK_PYTHON" in load and "PYSPARK_DRIVER_PYTHON" in load
