"""Which Python Spark runs the ``tidelog`` source in, and whether that Python can import Tidelog.

Spark does not run a Python data source in the driver's Python: it starts Python worker processes with
an interpreter of its own choosing. When that interpreter lacks Tidelog, ``format("tidelog")`` fails
far from the cause. Measured with PySpark 4.2 (local mode, a ``python script.py`` driver and
``spark-submit``):

* **Auto-registration** (the ``pyspark_tidelog`` module, no ``register()`` call): Spark's JVM looks for
  ``pyspark_*`` modules in a worker started with the environment variable ``PYSPARK_DRIVER_PYTHON``, else
  ``PYSPARK_PYTHON``, else ``python3`` from ``PATH``, as the JVM process sees them; the source found that
  way is created, planned and read with the same interpreter. When it cannot import Tidelog the source is
  simply not found: ``[DATA_SOURCE_NOT_FOUND] Failed to find the data source: tidelog``. No Tidelog code
  runs on that path, so nothing here can improve that message; ``register()`` can.
* **``tidelog.spark.register(spark)``**: the source runs under ``SparkContext.pythonExec``, which is
  ``PYSPARK_PYTHON`` of the driver's environment when the context started, else ``python3``. When that
  Python cannot import Tidelog, the first query failed with ``ModuleNotFoundError: No module named
  'tidelog'`` inside ``create_data_source``. :func:`check_worker_python` (which ``register()`` calls)
  now starts that interpreter once, as Spark would (with Spark's Python path), and raises
  :class:`WorkerPythonError` naming both interpreters and what to set.
* ``spark.pyspark.python`` set on ``SparkSession.builder`` changes neither: PySpark reads the environment
  variable. ``spark-submit --conf spark.pyspark.python=P`` exports ``PYSPARK_PYTHON=P`` to the driver
  only, which covers ``register()`` but not auto-registration.

Functions only; the check costs nothing when the workers run the driver's own interpreter, and one
short subprocess (about a second) otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

#: What the probe imports: everything the source needs in a worker.
_PROBE = "import sys, tidelog.spark; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"
PROBE_TIMEOUT_S = 120.0


class WorkerPythonError(RuntimeError):
    """Spark's Python workers cannot run the tidelog source."""


def spark_python_path(spark: Any = None) -> str:
    """The PYTHONPATH entries Spark gives its workers (pyspark and py4j), from the JVM when there is one."""
    if spark is not None:
        try:
            return str(spark.sparkContext._jvm.PythonUtils.sparkPythonPath())
        except Exception:  # Spark Connect, or a JVM without the helper: compute it as a pip install has it
            pass
    import pyspark

    lib = Path(pyspark.__file__).parent / "python" / "lib"
    return os.pathsep.join(str(p) for p in sorted(lib.glob("*.zip")))


def _fix(driver: str) -> str:
    return (f"Set the environment variable PYSPARK_PYTHON to a Python that has Tidelog, such as this driver's "
            f"(PYSPARK_PYTHON={driver}), before the SparkSession is created: export it in the shell, or set "
            "os.environ['PYSPARK_PYTHON'] at the top of the script. Setting spark.pyspark.python on "
            "SparkSession.builder does not change the workers' Python.")


def check_interpreter(command: str, origin: str, python_path: str = "") -> None:
    """Raise :class:`WorkerPythonError` unless ``command`` (a worker interpreter, named by ``origin``) can
    import ``tidelog.spark`` with ``python_path`` prepended to its PYTHONPATH, as Spark's workers have it."""
    driver = sys.executable
    found = shutil.which(command)
    if found is not None and os.path.abspath(found) == os.path.abspath(driver):
        return  # the driver's own interpreter, which is running this
    intro = (f"Spark runs the tidelog data source in Python workers started with {command!r} ({origin}), "
             f"while this driver runs {driver}")
    if found is None:
        raise WorkerPythonError(f"{intro}; {command!r} is not an executable on PATH. {_fix(driver)}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (python_path, env.get("PYTHONPATH", "")) if p)
    try:
        done = subprocess.run([found, "-c", _PROBE], env=env, capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise WorkerPythonError(f"{intro}; starting {found} failed: {e}. {_fix(driver)}") from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exit code {done.returncode}"
        raise WorkerPythonError(f"{intro}. The workers' Python ({found}) cannot import Tidelog: {reason}. "
                                f"{_fix(driver)} Or install 'tidelog[spark]' into {found}.")
    version, ours = done.stdout.strip(), f"{sys.version_info[0]}.{sys.version_info[1]}"
    if version != ours:
        raise WorkerPythonError(f"{intro}. The workers' Python ({found}) is Python {version}, the driver's "
                                f"Python {ours}: PySpark needs the same minor version on both sides. {_fix(driver)}")


def registered_source_python(spark: Any) -> tuple[str, str] | None:
    """The interpreter a source registered in ``spark`` runs under, and where that choice came from
    (None under Spark Connect, where the server decides)."""
    try:
        command = spark.sparkContext.pythonExec
    except Exception:
        return None
    origin = "from PYSPARK_PYTHON" if os.environ.get("PYSPARK_PYTHON") == command else \
        "the default when PYSPARK_PYTHON is not set"
    return command, origin


def check_worker_python(spark: Any) -> None:
    """Check that the Python a source registered in ``spark`` runs under can import Tidelog."""
    chosen = registered_source_python(spark)
    if chosen is not None:
        check_interpreter(*chosen, python_path=spark_python_path(spark))


__all__ = ["WorkerPythonError", "check_interpreter", "check_worker_python", "registered_source_python",
           "spark_python_path"]
