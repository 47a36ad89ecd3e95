"""The wire-level differential suite: the same raw requests to Apache Kafka and to Tidelog.

docs/compat.md says how it works, how responses are normalised and which differences are known.
"""
