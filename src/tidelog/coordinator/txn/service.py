"""The transaction coordinator service: what the front ends call, one ``async`` method per transaction
API (Kafka's ``TransactionCoordinator`` facade). Each method routes to the transactional id's
``__transaction_state`` partition, runs the operation there (the
:class:`~tidelog.coordinator.txn.coordinator.TransactionCoordinator` writes its transition at once)
and returns once the partition's high watermark passes that write (runtime rule 6:
:meth:`CoordinatorRuntime.run <tidelog.coordinator.runtime.CoordinatorRuntime.run>`). A write that is
not committed in time raises the coordinator's KafkaError (NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE), answered as the API's error response; on a single node nothing waits.

The transaction markers an EndTxn starts are written afterwards by the coordinator's marker channel,
not awaited here (as in Kafka, EndTxn is answered once PrepareCommit/PrepareAbort is committed).
DescribeTransactions waits for the writes it shows, as DescribeGroups does; ListTransactions and the
KIP-890 verification answer from memory at once.

Loop-only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable

from tidelog.coordinator.txn.coordinator import InitProducerIdResult, TransactionCoordinator
from tidelog.coordinator.txn.end_txn import Reply
from tidelog.coordinator.txn.metadata import TopicPartition
from tidelog.coordinator.txn.state import TransactionVersion
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import DescribeTransactionsResponse, ListTransactionsResponse


class TransactionCoordinatorService:
    """The transaction APIs over one :class:`TransactionCoordinator`."""

    def __init__(self, coordinator: TransactionCoordinator) -> None:
        self.coordinator = coordinator
        self.runtime = coordinator.runtime

    def partition_for(self, transactional_id: str) -> int:
        """The id's ``__transaction_state`` partition (FindCoordinator routing)."""
        return self.coordinator.partition_for(transactional_id)

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None = None) -> InitProducerIdResult:
        """InitProducerId with a transactional id; ``expected`` (producer id, epoch) with KIP-360."""
        return await self.runtime.run(self.partition_for(transactional_id), lambda: self.coordinator.init_producer_id(
            transactional_id, timeout_ms, expected))

    async def add_partitions_to_txn(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                    partitions: Iterable[TopicPartition],
                                    client_version: TransactionVersion = TransactionVersion.TV_0) -> ErrorCode:
        """AddPartitionsToTxn (and AddOffsetsToTxn: the group's ``__consumer_offsets`` partition)."""
        return await self.runtime.run(self.partition_for(transactional_id), lambda: self.coordinator.add_partitions(
            transactional_id, producer_id, producer_epoch, partitions, client_version))

    async def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                partitions: Iterable[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ ``verify_only`` (KIP-890 part 1)."""
        return self.coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                      client_version: TransactionVersion = TransactionVersion.TV_0) -> Reply:
        return await self.runtime.run(self.partition_for(transactional_id), lambda: self.coordinator.end_txn(
            transactional_id, producer_id, producer_epoch, commit, client_version))

    async def describe_transactions(self, transactional_ids: Iterable[str]
                                    ) -> list[DescribeTransactionsResponse.TransactionState]:
        """The ids' states, once the writes they reflect are committed (as DescribeGroups)."""
        ids = list(transactional_ids)
        described = self.coordinator.describe_transactions(ids)
        for partition in {self.partition_for(t) for t in ids}:
            await self.runtime.wait_committed(partition)
        return described

    async def list_transactions(self, state_filters: Iterable[str] = (), producer_id_filters: Iterable[int] = (),
                                duration_filter_ms: int = -1, transactional_id_pattern: str | None = None
                                ) -> ListTransactionsResponse:
        return self.coordinator.list_transactions(state_filters, producer_id_filters, duration_filter_ms,
                                                  transactional_id_pattern)


__all__ = ["TransactionCoordinatorService"]
