"""The ``tidelog`` PySpark data source: Spark's Kafka connector, on the Python Data Source API.

Spark creates the source with the query's options and asks it for readers and writers; each of those
is pickled to the process that runs it, so the source holds options only. Where each step runs and
which errors it raises:

* ``schema()`` (when ``load()`` runs): the general source options are checked here, so a bad
  combination fails at ``load()`` as with the Kafka source;
* ``reader()`` / ``streamReader()`` (when the query is planned or started): the batch or streaming rules,
  and a user-given ``.schema(...)`` is refused;
* ``writer()`` / ``streamWriter()``: the sink options and the input columns; ``exactlyOnce=true``
  picks the transactional stream writer (``exactly_once.py``) and is refused for batch writes.

Immutable apart from Spark's own ``options`` dict.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from tidelog.spark.exactly_once import TidelogExactlyOnceStreamWriter
from tidelog.spark.options import (
    INCLUDE_HEADERS,
    parse_sink_options,
    parse_source_options,
    validate_general_options,
)
from tidelog.spark.reader import TidelogBatchReader
from tidelog.spark.schema import check_sink_schema, check_user_schema, source_schema
from tidelog.spark.stream import TidelogStreamReader
from tidelog.spark.writer import TidelogBatchWriter, TidelogStreamWriter


class TidelogDataSource(DataSource):
    """``format("tidelog")``: batch and streaming reads and writes of Kafka-protocol topics."""

    @classmethod
    def name(cls) -> str:
        return "tidelog"

    def _include_headers(self) -> bool:
        return str(self.options.get(INCLUDE_HEADERS, "false")).strip().lower() == "true"

    def schema(self) -> StructType:
        validate_general_options(self.options)
        return source_schema(self._include_headers())

    def reader(self, schema: StructType) -> DataSourceReader:
        options = parse_source_options(self.options, streaming=False)
        check_user_schema(schema, options.include_headers)
        return TidelogBatchReader(options, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = parse_source_options(self.options, streaming=True)
        check_user_schema(schema, options.include_headers)
        return TidelogStreamReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> TidelogBatchWriter:
        if overwrite:
            raise ValueError("Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
                             "ErrorIfExists (Spark lets a Python data source write in Append mode only: use "
                             'mode("append")).')
        options = parse_sink_options(self.options)
        if options.exactly_once:
            raise ValueError("Option 'exactlyOnce' applies to streaming writes (writeStream) only: a batch job has "
                             "no micro-batch id to record, so a job run again would write its records again")
        check_sink_schema(schema, options.topic)
        return TidelogBatchWriter(options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> TidelogStreamWriter | TidelogExactlyOnceStreamWriter:
        options = parse_sink_options(self.options)
        check_sink_schema(schema, options.topic)
        if options.exactly_once:
            return TidelogExactlyOnceStreamWriter(options, schema)
        return TidelogStreamWriter(options, schema)


__all__ = ["TidelogDataSource"]
