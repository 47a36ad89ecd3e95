"""The admin requests of ``tidelog transactions`` that confluent-kafka's admin API lacks (ListTransactions,
DescribeTransactions, DescribeProducers, and WriteTxnMarkers for aborting a transaction), sent over
:class:`~tidelog.cli.broker_connection.BrokerConnection`, the way Kafka's Admin client does
(``listTransactions``, ``describeTransactions``, ``describeProducers``, ``abortTransaction``).

Where the requests go comes from the cluster's metadata, read with confluent-kafka: every broker for
ListTransactions, the transactional id's coordinator (FindCoordinator) for DescribeTransactions, the
partition's leader (or a chosen broker) for DescribeProducers and WriteTxnMarkers. Failures are
:class:`~tidelog.cli.client.CliError`. Not thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka.admin import ClusterMetadata

from tidelog.cli.broker_connection import BrokerConnection
from tidelog.cli.client import CliError
from tidelog.errors import ErrorCode
from tidelog.protocol.messages import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    FindCoordinatorRequest,
    ListTransactionsRequest,
    WriteTxnMarkersRequest,
)

TRANSACTION_KEY_TYPE = 1


def _error(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    coordinator: int
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    coordinator: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_time_ms: int  # -1: no transaction open
    partitions: list[tuple[str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class ProducerState:
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    last_sequence: int
    last_timestamp: int
    current_txn_start_offset: int  # -1: none open


class TransactionAdmin:
    """``metadata``: the cluster's brokers and topics (confluent-kafka's ``list_topics``)."""

    def __init__(self, metadata: ClusterMetadata, properties: dict | None = None) -> None:
        self.metadata = metadata
        self.properties = dict(properties or {})  # --command-config: TLS and SASL
        self._connections: dict[int, BrokerConnection] = {}

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    def __enter__(self) -> TransactionAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def broker_ids(self) -> list[int]:
        return sorted(self.metadata.brokers)

    def connection(self, broker_id: int) -> BrokerConnection:
        if broker_id not in self._connections:
            broker = self.metadata.brokers.get(broker_id)
            if broker is None:
                raise CliError(f"broker {broker_id} is not in the cluster")
            self._connections[broker_id] = BrokerConnection.open(f"{broker.host}:{broker.port}",
                                                                 self.properties)
        return self._connections[broker_id]

    def leader(self, topic: str, partition: int) -> int:
        t = self.metadata.topics.get(topic)
        if t is None or t.error is not None:
            raise CliError(f"topic {topic!r} does not exist")
        p = t.partitions.get(partition)
        if p is None:
            raise CliError(f"topic {topic!r} has no partition {partition}")
        if p.leader < 0:
            raise CliError(f"{topic}-{partition} has no leader")
        return p.leader

    # ---------------------------------------------------------------------------------- requests

    def list_transactions(self, *, states: list[str] = (), producer_ids: list[int] = (), duration_ms: int = -1,
                          pattern: str | None = None) -> list[TransactionListing]:
        """ListTransactions on every broker (each coordinates some transactional ids)."""
        out = []
        for broker_id in self.broker_ids():
            conn = self.connection(broker_id)
            version = conn.version_for(ListTransactionsRequest.API_KEY)
            if duration_ms >= 0 and version < 1:
                raise CliError(f"broker {broker_id} cannot filter by duration (ListTransactions v{version})")
            if pattern and version < 2:
                raise CliError(f"broker {broker_id} cannot filter by a pattern (ListTransactions v{version})")
            r = conn.request(ListTransactionsRequest(state_filters=list(states), producer_id_filters=list(producer_ids),
                                                     duration_filter=duration_ms, transactional_id_pattern=pattern),
                             version)
            if r.error_code:
                raise CliError(f"broker {broker_id} answered ListTransactions with {_error(r.error_code)}")
            out += [TransactionListing(s.transactional_id, broker_id, s.producer_id, s.transaction_state)
                    for s in r.transaction_states]
        return out

    def coordinator(self, transactional_id: str) -> int:
        conn = self.connection(self.broker_ids()[0])
        version = conn.version_for(FindCoordinatorRequest.API_KEY)
        if version >= 4:
            r = conn.request(FindCoordinatorRequest(key_type=TRANSACTION_KEY_TYPE, coordinator_keys=[transactional_id]),
                             version)
            (found,) = r.coordinators
            code, node = found.error_code, found.node_id
        else:
            r = conn.request(FindCoordinatorRequest(key=transactional_id, key_type=TRANSACTION_KEY_TYPE), version)
            code, node = r.error_code, r.node_id
        if code:
            raise CliError(f"cannot find the coordinator of {transactional_id!r}: {_error(code)}")
        return node

    def describe_transaction(self, transactional_id: str) -> TransactionDescription | None:
        """None when the coordinator does not know the id (TRANSACTIONAL_ID_NOT_FOUND)."""
        coordinator = self.coordinator(transactional_id)
        r = self.connection(coordinator).request(DescribeTransactionsRequest(transactional_ids=[transactional_id]))
        (state,) = r.transaction_states
        if state.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            return None
        if state.error_code:
            raise CliError(f"cannot describe {transactional_id!r}: {_error(state.error_code)}")
        return TransactionDescription(coordinator, transactional_id, state.producer_id, state.producer_epoch,
                                      state.transaction_state, state.transaction_timeout_ms,
                                      state.transaction_start_time_ms,
                                      [(t.topic, p) for t in state.topics for p in t.partitions])

    def describe_producers(self, partitions: list[tuple[str, int]],
                           broker_id: int | None = None) -> dict[tuple[str, int], list[ProducerState]]:
        """Active producers of each partition, asked of its leader (or of ``broker_id``)."""
        by_broker: dict[int, list[tuple[str, int]]] = {}
        for tp in partitions:
            by_broker.setdefault(self.leader(*tp) if broker_id is None else broker_id, []).append(tp)
        out: dict[tuple[str, int], list[ProducerState]] = {}
        for broker, tps in by_broker.items():
            topics: dict[str, list[int]] = {}
            for topic, partition in tps:
                topics.setdefault(topic, []).append(partition)
            r = self.connection(broker).request(DescribeProducersRequest(topics=[
                DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps) for t, ps in topics.items()]))
            for t in r.topics:
                for p in t.partitions:
                    if p.error_code:
                        raise CliError(f"cannot describe the producers of {t.name}-{p.partition_index} on broker "
                                       f"{broker}: {_error(p.error_code)}")
                    out[(t.name, p.partition_index)] = [
                        ProducerState(s.producer_id, s.producer_epoch, s.coordinator_epoch, s.last_sequence,
                                      s.last_timestamp, s.current_txn_start_offset) for s in p.active_producers]
        return out

    def abort(self, topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Write an ABORT marker for the producer's open transaction (WriteTxnMarkers to the leader)."""
        marker = WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=False,
            coordinator_epoch=coordinator_epoch,
            topics=[WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=topic, partition_indexes=[partition])])
        r = self.connection(self.leader(topic, partition)).request(WriteTxnMarkersRequest(markers=[marker]))
        codes = [p.error_code for m in r.markers for t in m.topics for p in t.partitions]
        if codes != [0]:
            raise CliError(f"the abort marker for {topic}-{partition} was refused: "
                           f"{', '.join(_error(c) for c in codes) or 'no answer'}")


__all__ = ["ProducerState", "TransactionAdmin", "TransactionDescription", "TransactionListing"]
