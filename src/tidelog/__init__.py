"""Tidelog: a streaming log platform that speaks the Apache Kafka wire protocol."""

__version__ = "0.1.0"

__all__ = ["__version__"]
