"""The broker's log levels at run time: Kafka's BROKER_LOGGER config resource.

Lists the broker's Python loggers (``root`` and ``tidelog.*``) with their effective levels under
Kafka's names (TRACE, DEBUG, INFO, WARN, ERROR, FATAL); IncrementalAlterConfigs SETs a level or
DELETEs it (the logger then inherits its parent's), as Kafka's ``RuntimeLoggerManager`` does: unknown
loggers and levels -> INVALID_CONFIG, APPEND/SUBTRACT and removing the root level -> INVALID_REQUEST.
Loop-only, not thread-safe (it changes process-wide logging state).
"""

from __future__ import annotations

import logging

from tidelog.cluster.config_entries import ConfigEntry, ConfigSource, ConfigType
from tidelog.errors import ErrorCode, KafkaError

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


#: Kafka's log level names -> Python levels (Python has no TRACE: it is 5, below DEBUG).
LOG_LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
              "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
ROOT_LOGGER = "root"


def _level_name(level: int) -> str:
    for name, value in sorted(LOG_LEVELS.items(), key=lambda kv: kv[1]):
        if level <= value:
            return name
    return "FATAL"


def _loggers() -> dict[str, logging.Logger]:
    found = {ROOT_LOGGER: logging.getLogger()}
    for name, obj in sorted(logging.Logger.manager.loggerDict.items()):
        if isinstance(obj, logging.Logger) and (name == "tidelog" or name.startswith("tidelog.")):
            found[name] = obj
    return found


def logger_entries() -> list[ConfigEntry]:
    return [
        ConfigEntry(name, _level_name(lg.getEffectiveLevel()), ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, False, (),
                    ConfigType.UNKNOWN, None)
        for name, lg in _loggers().items()
    ]


def alter_loggers(ops, validate_only: bool) -> None:
    loggers = _loggers()
    for c in ops:
        if c.config_operation in (APPEND, SUBTRACT):
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"{OP_NAMES[c.config_operation]} operation is not allowed for the BROKER_LOGGER resource")
        if c.config_operation not in (SET, DELETE):
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {c.config_operation} is not allowed "
                             "for the BROKER_LOGGER resource")
        if c.name not in loggers:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Logger {c.name} does not exist!")
        if c.config_operation == SET and c.value not in LOG_LEVELS:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Cannot set the log level of {c.name} to {c.value} as it is "
                             f"not a supported log level. Valid log levels are {', '.join(sorted(LOG_LEVELS))}")
        if c.config_operation == DELETE and c.name == ROOT_LOGGER:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    if validate_only:
        return
    for c in ops:
        loggers[c.name].setLevel(LOG_LEVELS[c.value] if c.config_operation == SET else logging.NOTSET)


__all__ = ["APPEND", "DELETE", "LOG_LEVELS", "OP_NAMES", "SET", "SUBTRACT", "alter_loggers", "logger_entries"]
