"""Producer-id blocks in ZooKeeper (Kafka's ZooKeeper-era ``ProducerIdManager``): ``/latest_producer_id_block``
holds the last block handed out (``{"version":1,"broker":B,"block_start":"S","block_end":"E"}``). A broker
claims the next block by reading the node and writing the following block at the version it read; when
another broker wrote first (BadVersion, or NodeExists for the very first block) it reads again and tries
the next one. So blocks never overlap, whoever allocates at the same time.

Blocking kazoo calls, each bounded by ``timeout_s``: called when a broker's block runs out (once per
``PRODUCER_ID_BLOCK_SIZE`` ids).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from tidelog.cluster import zk_data as zk
from tidelog.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

#: Kafka's limit: a block must end below Long.MAX_VALUE.
MAX_PRODUCER_ID = 2**63 - 1
MAX_ATTEMPTS = 100


def allocate_producer_id_block(client: Callable[[], Any], broker_id: int, size: int, *, timeout_s: float = 5.0,
                               attempts: int = MAX_ATTEMPTS) -> int:
    """Claim the next ``size`` ids for ``broker_id``; returns the first. Raises KafkaError (retriable
    REQUEST_TIMED_OUT without ZooKeeper, UNKNOWN_SERVER_ERROR after ``attempts`` conflicts in a row)."""
    zkc = client()
    if zkc is None:
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "ZooKeeper is unavailable: no producer id block now")
    try:
        for attempt in range(attempts):
            try:
                raw, stat = zkc.get_async(zk.PRODUCER_ID_BLOCK).get(timeout=timeout_s)
                start, version = zk.decode_producer_id_block(raw), stat.version
            except NoNodeError:
                start, version = 0, -1
            end = start + size - 1
            if end > MAX_PRODUCER_ID:
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "producer ids are exhausted")
            data = zk.encode_producer_id_block(broker_id, start, end)
            try:
                if version < 0:
                    zkc.create_async(zk.PRODUCER_ID_BLOCK, data).get(timeout=timeout_s)
                else:
                    zkc.set_async(zk.PRODUCER_ID_BLOCK, data, version=version).get(timeout=timeout_s)
            except (BadVersionError, NodeExistsError):
                log.info("producer id block %d-%d was claimed by another broker; trying the next (attempt %d)",
                         start, end, attempt + 1)
                continue
            log.info("broker %d claimed producer ids %d-%d", broker_id, start, end)
            return start
    except KazooException as e:
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"ZooKeeper is unavailable: {e!r}") from None
    except KazooTimeoutError:
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "ZooKeeper did not answer in time: no producer id block now") \
            from None
    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"no producer id block after {attempts} conflicting writes")


__all__ = ["allocate_producer_id_block"]
