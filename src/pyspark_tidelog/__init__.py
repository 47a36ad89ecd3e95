"""Auto-registration of the ``tidelog`` PySpark data source.

PySpark imports every top-level module whose name starts with ``pyspark_`` at the first use of a Python
data source and registers its ``DefaultSource``, so ``spark.read.format("tidelog")`` works without a
``register()`` call wherever Tidelog is installed. Kept to one import: it runs in Spark's planner workers.
"""

from tidelog.spark.source import TidelogDataSource as DefaultSource

__all__ = ["DefaultSource"]
