"""Tidelog: a streaming log platform that speaks the Apache Kafka wire protocol.

``tidelog.Broker`` / ``tidelog.AsyncBroker`` start a broker from Python (:mod:`tidelog.embedded`,
imported on first use so that ``import tidelog`` stays cheap).
"""

import importlib
from typing import Any

__version__ = "0.1.0"

_EMBEDDED = ("AsyncBroker", "Broker", "BrokerError")


def __getattr__(name: str) -> Any:
    if name in _EMBEDDED:
        # by name, not an import statement: every module imports ``tidelog`` (for __version__), and none
        # of them depends on the in-process API
        return getattr(importlib.import_module("tidelog.embedded"), name)
    raise AttributeError(f"module 'tidelog' has no attribute {name!r}")


__all__ = ["AsyncBroker", "Broker", "BrokerError", "__version__"]
