"""The stand-in ``tidelog`` source of a Spark worker whose Python cannot import Tidelog's Spark connector.

Creating it (which Spark does for every query that uses ``format("tidelog")``) raises an ImportError
that names the worker's interpreter, what it failed to import, and what to set. Imports only pyspark,
which every Spark worker has.
"""

from __future__ import annotations

import sys
from typing import Any

from pyspark.sql.datasource import DataSource


def unavailable_message(error: BaseException) -> str:
    return (f"format('tidelog') cannot run in this Spark Python worker: {sys.executable} (Python "
            f"{sys.version_info[0]}.{sys.version_info[1]}) cannot import Tidelog's Spark connector: {error}. "
            "Install 'tidelog[spark]' into that Python, or start Spark with the environment variable "
            "PYSPARK_PYTHON (and PYSPARK_DRIVER_PYTHON, if it is set: Spark looks Python data sources up "
            "with that one) naming a Python that has it, such as the driver's; spark.pyspark.python on "
            "SparkSession.builder does not change the workers' Python.")


class UnavailableTidelogSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "tidelog"

    def __init__(self, options: Any) -> None:
        try:
            import tidelog.spark.source  # noqa: F401  (fails again, with the reason to report)
        except ImportError as e:
            raise ImportError(unavailable_message(e)) from None
        raise ImportError(unavailable_message(RuntimeError("it was not importable when Spark looked it up")))


__all__ = ["UnavailableTidelogSource", "unavailable_message"]
