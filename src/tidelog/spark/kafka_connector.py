"""Spark's own Kafka connector (``format("kafka")``): the Maven package that matches the installed PySpark.

Spark's connector is a JVM package that PySpark does not ship: Spark downloads it from Maven Central (into
its Ivy cache, ``~/.ivy2.5.2`` by default) when a session starts with ``spark.jars.packages``. It must
be built for the Spark and Scala versions of the Spark that runs it, so both are read from the installed
pyspark (its version, and the Scala suffix of its ``spark-core_<scala>-<version>.jar``), never written
down::

    builder = SparkSession.builder
    for key, value in kafka_connector_conf().items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()        # then spark.read.format("kafka") works against Tidelog

The connector depends on jars PySpark already ships (Hadoop's client, lz4, snappy, slf4j ...); the
configuration excludes those that are present in pyspark's ``jars`` directory, so Spark downloads only
the connector, its token provider, kafka-clients and commons-pool2 (about 21 MB instead of 125 MB).
Functions of the installed pyspark only; no state.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyspark

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"

#: Dependencies of the connector (group, artifact; ``{scala}`` is filled in) that a PySpark install may
#: already hold; each is excluded only when a jar of that artifact is in pyspark's ``jars`` directory.
_MAYBE_PROVIDED = [
    ("org.apache.hadoop", "hadoop-client-runtime"),
    ("org.apache.hadoop", "hadoop-client-api"),
    ("at.yawk.lz4", "lz4-java"),
    ("org.lz4", "lz4-java"),
    ("org.xerial.snappy", "snappy-java"),
    ("org.slf4j", "slf4j-api"),
    ("com.google.code.findbugs", "jsr305"),
    ("org.scala-lang.modules", "scala-parallel-collections_{scala}"),
]


def pyspark_jars() -> Path:
    jars = Path(pyspark.__file__).parent / "jars"
    if not jars.is_dir():
        raise RuntimeError(f"pyspark {pyspark.__version__} at {jars.parent} has no jars directory (a Spark Connect "
                           "client-only install?): the Kafka connector needs a full PySpark")
    return jars


def spark_version() -> str:
    """The Spark version of the installed PySpark (which is its JVM jars' version)."""
    return pyspark.__version__


def scala_binary_version() -> str:
    """The Scala binary version Spark was built for (``2.13``), from pyspark's ``spark-core_<scala>`` jar."""
    for jar in sorted(pyspark_jars().glob("spark-core_*.jar")):
        match = re.fullmatch(r"spark-core_(\d+\.\d+)-.*\.jar", jar.name)
        if match:
            return match.group(1)
    raise RuntimeError(f"no spark-core_<scala>-<version>.jar in {pyspark_jars()}")


def kafka_connector_coordinate() -> str:
    """``org.apache.spark:spark-sql-kafka-0-10_<scala>:<spark version>`` for the installed PySpark."""
    return f"org.apache.spark:spark-sql-kafka-0-10_{scala_binary_version()}:{spark_version()}"


def provided_exclusions() -> list[str]:
    """``group:artifact`` of the connector's dependencies that pyspark's ``jars`` directory already holds."""
    jars, scala = pyspark_jars(), scala_binary_version()
    out = []
    for group, artifact in _MAYBE_PROVIDED:
        name = artifact.format(scala=scala)
        if any(jars.glob(f"{name}-[0-9]*.jar")):
            out.append(f"{group}:{name}")
    return out


def kafka_connector_conf() -> dict[str, str]:
    """Session settings that put Spark's Kafka connector for this PySpark on the classpath."""
    return {"spark.jars.packages": kafka_connector_coordinate(),
            "spark.jars.excludes": ",".join(provided_exclusions())}


def maven_central_url(coordinate: str, extension: str = "jar") -> str:
    """Where Maven Central serves ``group:artifact:version``'s jar (or pom)."""
    group, artifact, version = coordinate.split(":")
    return f"{MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.{extension}"


def ivy_jar_name(coordinate: str) -> str:
    """The file name Spark gives the connector jar in ``<ivy dir>/jars`` once it has downloaded it."""
    group, artifact, version = coordinate.split(":")
    return f"{group}_{artifact}-{version}.jar"


__all__ = ["MAVEN_CENTRAL", "ivy_jar_name", "kafka_connector_conf", "kafka_connector_coordinate",
           "maven_central_url", "provided_exclusions", "pyspark_jars", "scala_binary_version", "spark_version"]
