"""What happens to partition logs, and who hears about it: one mechanism for every listener.

Events (all fired on the event loop, synchronously, in the order listeners subscribed):

* ``created(topic, partition, log)``: this broker now hosts a log for the partition;
* ``appended(topic, partition, log)``: records were written (not fired for an idempotent retry that
  wrote nothing); the delayed-fetch purgatory, the flush policy and, later, replication and metrics
  listen;
* ``truncated(topic, partition, log)``: the log lost a suffix (a follower truncating, recovery);
* ``deleted(topic, partition)``: the partition's log is gone (topic deletion).

Listeners must be cheap: they run on the produce path. Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable

from tidelog.storage.log import PartitionLog

LogListener = Callable[[str, int, PartitionLog], None]
DeletedListener = Callable[[str, int], None]


class LogEvents:
    __slots__ = ("_appended", "_created", "_deleted", "_truncated")

    def __init__(self) -> None:
        self._created: list[LogListener] = []
        self._appended: list[LogListener] = []
        self._truncated: list[LogListener] = []
        self._deleted: list[DeletedListener] = []

    # ------------------------------------------------------------------------------- subscribe

    def on_created(self, listener: LogListener) -> None:
        self._created.append(listener)

    def on_appended(self, listener: LogListener) -> None:
        self._appended.append(listener)

    def on_truncated(self, listener: LogListener) -> None:
        self._truncated.append(listener)

    def on_deleted(self, listener: DeletedListener) -> None:
        self._deleted.append(listener)

    # ------------------------------------------------------------------------------------ fire

    def created(self, topic: str, partition: int, log: PartitionLog) -> None:
        for listener in self._created:
            listener(topic, partition, log)

    def appended(self, topic: str, partition: int, log: PartitionLog) -> None:
        for listener in self._appended:
            listener(topic, partition, log)

    def truncated(self, topic: str, partition: int, log: PartitionLog) -> None:
        for listener in self._truncated:
            listener(topic, partition, log)

    def deleted(self, topic: str, partition: int) -> None:
        for listener in self._deleted:
            listener(topic, partition)


__all__ = ["DeletedListener", "LogEvents", "LogListener"]
