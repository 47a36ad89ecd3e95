"""Apache Kafka as the oracle: its broker, Java client and tools, built from tests/java/pom.xml (docs/oracle.md)."""
