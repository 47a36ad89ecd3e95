"""Auto-registration of the ``tidelog`` PySpark data source.

PySpark imports every top-level module whose name starts with ``pyspark_`` at the first use of a Python
data source and registers its ``DefaultSource``, so ``spark.read.format("tidelog")`` works without a
``register()`` call wherever Tidelog is installed. Kept light: it runs in Spark's planner workers.

An exception here would fail that look-up for every Python data source of the session, so a worker
Python that has Tidelog without its Spark dependencies (pyarrow, confluent-kafka) gets a stand-in
``tidelog`` source that says so when a query uses it.
"""

try:
    from tidelog.spark.source import TidelogDataSource as DefaultSource
except ImportError:
    from pyspark_tidelog.unavailable import UnavailableTidelogSource as DefaultSource

__all__ = ["DefaultSource"]
