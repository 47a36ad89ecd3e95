"""Tidelog for Apache Spark: the ``tidelog`` PySpark data source (the ``spark`` extra: ``pip install '.[spark]'``).

It mirrors Spark's Kafka connector (same options, same schema, same sink columns), so a pipeline written
for ``format("kafka")`` runs with ``format("tidelog")``. It is a Kafka client (confluent-kafka) and works
against any Kafka-compatible broker. ``docs/spark.md`` has the option table and the differences.

The source registers itself through the top-level ``pyspark_tidelog`` module when Tidelog is installed
in the Python that runs Spark's workers; :func:`register` does it explicitly.
"""

from __future__ import annotations

from typing import Any

from tidelog.spark.source import TidelogDataSource


def register(spark: Any) -> None:
    """Register ``format("tidelog")`` with ``spark`` (a SparkSession)."""
    spark.dataSource.register(TidelogDataSource)


__all__ = ["TidelogDataSource", "register"]
