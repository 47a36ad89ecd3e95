"""Tidelog for Apache Spark: the ``tidelog`` PySpark data source (the ``spark`` extra: ``pip install '.[spark]'``).

It mirrors Spark's Kafka connector (same options, same schema, same sink columns), so a pipeline written
for ``format("kafka")`` runs with ``format("tidelog")``. It is a Kafka client (confluent-kafka) and works
against any Kafka-compatible broker. ``docs/spark.md`` has the option table and the differences.

The source registers itself through the top-level ``pyspark_tidelog`` module when Tidelog is installed
in the Python that runs Spark's workers; :func:`register` does it explicitly, after checking that the
Python Spark will run the source in can import Tidelog (``tidelog.spark.worker_python``).
"""

from __future__ import annotations

from typing import Any

from tidelog.spark.source import TidelogDataSource
from tidelog.spark.worker_python import WorkerPythonError, check_worker_python


def register(spark: Any) -> None:
    """Register ``format("tidelog")`` with ``spark`` (a SparkSession).

    Raises :class:`WorkerPythonError`, naming the driver's and the workers' interpreters and what to set,
    when Spark's Python workers run an interpreter that cannot import Tidelog.
    """
    check_worker_python(spark)
    spark.dataSource.register(TidelogDataSource)


__all__ = ["TidelogDataSource", "WorkerPythonError", "register"]
