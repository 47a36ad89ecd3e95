"""Shared helpers for storage tests: batches built with tidelog.records, logs in tmp_path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tidelog.config import TopicConfig
from tidelog.records import RecordBatchBuilder
from tidelog.storage.loader import load_log
from tidelog.storage.log import PartitionLog
from tidelog.testing import ManualClock

T0 = 1_700_000_000_000


def make_batch(
    n: int = 1,
    *,
    ts: int = T0,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    keys: list[bytes | None] | None = None,
    values: list[bytes | None] | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    compression: int = 0,
) -> bytearray:
    builder = RecordBatchBuilder(
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    for i in range(n):
        builder.append(
            timestamp=ts + i,
            key=keys[i] if keys is not None else key,
            value=values[i] if values is not None else value,
        )
    return bytearray(builder.build())


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(wall_ms=T0 + 1000)


OpenLog = Callable[..., PartitionLog]


@pytest.fixture
def open_log(tmp_path: Path, clock: ManualClock) -> OpenLog:
    """open_log(**topic_configs, clean=False, recovery_point=0) -> a PartitionLog in tmp_path/t-0."""

    def _open(clean: bool = False, recovery_point: int = 0, log_start_offset: int = 0, **overrides) -> PartitionLog:
        config = TopicConfig.from_dict({k.replace("_", "."): v for k, v in overrides.items()})
        return load_log(
            tmp_path / "t-0",
            "t",
            0,
            config,
            clock,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            clean_shutdown=clean,
        )

    return _open
