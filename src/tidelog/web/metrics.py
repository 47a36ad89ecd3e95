"""Prometheus metrics of one broker, served at ``GET /metrics`` (docs/metrics.md lists every metric
and maps Kafka's JMX names onto them).

Two kinds of figures, both read only when Prometheus scrapes:

* counters and histograms the hot path keeps in plain Python (:mod:`tidelog.meter`): bytes and
  records in/out per partition, request phase timings per API, fsync latencies;
* gauges computed from the components at scrape time: log sizes and offsets, purgatory sizes,
  connections, partition health from the metadata image, group states and consumer lag,
  transaction states, the start-up recovery time, each log dir's free space and "full" condition.

:class:`BrokerCollector` is a prometheus-client custom collector registered in a registry of the
broker's own (not the process-global default), so several brokers in one process stay apart.
:class:`IsrChanges` counts ISR shrinks and expansions, as a metadata-store subscriber.

Loop-only: a scrape reads the components on the broker's event loop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from aiohttp import web
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector, CollectorRegistry

from tidelog.cluster.metadata import MetadataImage
from tidelog.cluster.store import MetadataStore
from tidelog.coordinator.group import GroupCoordinator
from tidelog.coordinator.txn import TransactionCoordinator
from tidelog.meter import (
    BYTES_IN,
    BYTES_OUT,
    RECORDS_IN,
    RECORDS_OUT,
    REQUEST_PHASES,
    PartitionTraffic,
    RequestTimes,
    SyncHistogram,
)
from tidelog.protocol.api_keys import API_REGISTRY
from tidelog.replica.manager import ReplicaManager
from tidelog.share.manager import SharePartitionManager
from tidelog.share.stats import ACK_TYPE_NAMES, ARCHIVE_REASONS
from tidelog.storage.log_manager import StartupReport
from tidelog.telemetry.pushed import PushedMetrics
from tidelog.telemetry.samples import COUNTER, prometheus_name

#: Metric name of each request phase (Kafka's RequestMetrics: TotalTimeMs, RequestQueueTimeMs, ...).
PHASE_METRICS = {
    "total": ("tidelog_request_total_time_seconds", "Time from a request's arrival to its response leaving"),
    "request_queue": ("tidelog_request_queue_time_seconds",
                      "Time a request waited behind earlier requests of the same read before its handler ran"),
    "local": ("tidelog_request_local_time_seconds", "Time the handler ran on the event loop (decode and work)"),
    "remote": ("tidelog_request_remote_time_seconds",
               "Time a request waited after its handler returned (long polls, coordinator writes, executor work)"),
    "response_queue": ("tidelog_response_queue_time_seconds",
                       "Time a finished response waited for earlier responses of its connection to leave"),
    "response_send": ("tidelog_response_send_time_seconds",
                      "Time encoding a response and handing it to the transport"),
}

TRAFFIC = ((BYTES_IN, "bytes_in", "Record bytes appended"), (RECORDS_IN, "records_in", "Records appended"),
           (BYTES_OUT, "bytes_out", "Record bytes sent to fetchers"),
           (RECORDS_OUT, "records_out", "Records (offsets) sent to fetchers"))


class IsrChanges:
    """ISR shrinks and expansions of partitions this broker leads, counted from metadata changes
    (Kafka's IsrShrinksPerSec / IsrExpandsPerSec)."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.shrinks = 0
        self.expands = 0

    def __call__(self, old: MetadataImage, new: MetadataImage) -> None:
        for name, topic in new.topics.items():
            before = old.topics.get(name)
            if before is None or before.topic_id != topic.topic_id:
                continue
            for p in topic.partitions:
                if p.leader != self.broker_id or p.partition >= len(before.partitions):
                    continue
                was = set(before.partitions[p.partition].isr)
                now = set(p.isr)
                if was - now:
                    self.shrinks += 1
                if now - was:
                    self.expands += 1


@dataclass
class BrokerSources:
    """What the collector reads; built by the composition root."""

    broker_id: int
    store: MetadataStore
    replicas: ReplicaManager  # the logs' figures: replicas.local_logs
    groups: GroupCoordinator
    transactions: TransactionCoordinator
    traffic: PartitionTraffic
    request_times: RequestTimes
    flush_latency: SyncHistogram
    isr_changes: IsrChanges
    connections: Callable[[], Mapping[str, int]]  # listener name -> open connections
    startup_reports: Callable[[], Sequence[StartupReport]]
    #: listener name -> connections closed for failed authentication (TLS handshake or SASL)
    failed_authentications: Callable[[], Mapping[str, int]] = dict
    #: share groups' partitions on this broker (share.version >= 1), else None
    share_partitions: SharePartitionManager | None = None
    #: what clients pushed (client telemetry, telemetry.enable), else None
    pushed_metrics: PushedMetrics | None = None


def _tp(topic: str, partition: int) -> list[str]:
    return [topic, str(partition)]


class BrokerCollector(Collector):
    def __init__(self, sources: BrokerSources) -> None:
        self.s = sources

    def collect(self) -> Iterator[Metric]:
        yield from self._traffic()
        yield from self._requests()
        yield from self._purgatory()
        yield from self._connections()
        yield from self._logs()
        yield from self.partition_metrics(self.s.store.image)
        yield from self._groups()
        yield from self._transactions()
        yield from self._share_groups()
        yield from self._storage()
        if self.s.pushed_metrics is not None:
            yield from client_telemetry_metrics(self.s.pushed_metrics)

    # -------------------------------------------------------------------------------- traffic

    def _traffic(self) -> Iterator[Metric]:
        traffic = self.s.traffic
        totals = traffic.totals()
        by_topic: dict[str, list[int]] = {}
        for (topic, _), c in traffic.by_partition.items():
            t = by_topic.setdefault(topic, [0, 0, 0, 0])
            for i, n in enumerate(c):
                t[i] += n
        for index, what, doc in TRAFFIC:
            yield CounterMetricFamily(f"tidelog_{what}", f"{doc}, all topics", value=totals[index])
            per_topic = CounterMetricFamily(f"tidelog_topic_{what}", f"{doc}, per topic", labels=["topic"])
            for topic, c in by_topic.items():
                per_topic.add_metric([topic], c[index])
            yield per_topic
            per_partition = CounterMetricFamily(f"tidelog_partition_{what}", f"{doc}, per partition",
                                                labels=["topic", "partition"])
            for (topic, partition), c in traffic.by_partition.items():
                per_partition.add_metric(_tp(topic, partition), c[index])
            yield per_partition

    # ------------------------------------------------------------------------------- requests

    def _requests(self) -> Iterator[Metric]:
        requests = CounterMetricFamily("tidelog_requests",
                                       "Requests answered (or completed, acks=0), per API and request version",
                                       labels=["request", "version"])
        families = {phase: HistogramMetricFamily(*PHASE_METRICS[phase], labels=["request"]) for phase in REQUEST_PHASES}
        times = self.s.request_times
        times.fold()
        for api_key in sorted(times.by_api):
            hists = times.histograms(api_key)
            api = API_REGISTRY.get(api_key)
            name = api.name if api is not None else str(api_key)
            for version, n in sorted(times.versions(api_key).items()):
                requests.add_metric([name, str(version)], n)
            for phase, h in zip(REQUEST_PHASES, hists):
                families[phase].add_metric([name], h.cumulative(), h.sum)
        yield requests
        yield from families.values()

    def _purgatory(self) -> Iterator[Metric]:
        purgatory = self.s.replicas.purgatory
        size = GaugeMetricFamily("tidelog_purgatory_size", "Watch entries of delayed operations (one per key watched)",
                                 labels=["operation"])
        size.add_metric(["Fetch"], purgatory.watched())
        size.add_metric(["Produce"], 0)  # acks=all never waits: there are no followers to wait for
        yield size
        ops = GaugeMetricFamily("tidelog_purgatory_delayed_operations", "Delayed operations waiting",
                                labels=["operation"])
        ops.add_metric(["Fetch"], len(purgatory))
        ops.add_metric(["Produce"], 0)
        yield ops

    def _connections(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("tidelog_connections", "Open client connections, per listener", labels=["listener"])
        for listener, n in sorted(self.s.connections().items()):
            family.add_metric([listener], n)
        yield family
        failed = CounterMetricFamily("tidelog_failed_authentication",
                                     "Connections closed for a failed TLS handshake or SASL authentication",
                                     labels=["listener"])
        for listener, n in sorted(self.s.failed_authentications().items()):
            failed.add_metric([listener], n)
        yield failed

    # ------------------------------------------------------------------------------------ logs

    def _logs(self) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("tidelog_log_size_bytes", "Bytes in the partition's log segments", labels=labels)
        segments = GaugeMetricFamily("tidelog_log_segments", "Segments of the partition's log", labels=labels)
        start = GaugeMetricFamily("tidelog_log_start_offset", "First offset of the partition's log", labels=labels)
        end = GaugeMetricFamily("tidelog_log_end_offset", "Offset the next record appended gets", labels=labels)
        hw = GaugeMetricFamily("tidelog_log_high_watermark", "High watermark (consumers read up to it)",
                               labels=labels)
        for summary in self.s.replicas.local_logs.summaries():
            tp = _tp(summary.topic, summary.partition)
            size.add_metric(tp, summary.size_bytes)
            segments.add_metric(tp, summary.segment_count)
            start.add_metric(tp, summary.offsets.log_start_offset)
            end.add_metric(tp, summary.offsets.log_end_offset)
            hw.add_metric(tp, summary.offsets.high_watermark)
        yield from (size, segments, start, end, hw)

    def partition_metrics(self, image: MetadataImage) -> Iterator[Metric]:
        me = self.s.broker_id
        local_logs = self.s.replicas.local_logs
        partitions = leaders = under = under_min = offline = 0
        for topic in image.topics.values():
            for p in topic.partitions:
                if me in p.replicas:
                    partitions += 1
                if p.leader < 0 or p.leader not in image.brokers:
                    offline += 1
                if p.leader != me:
                    continue
                leaders += 1
                if len(p.isr) < len(p.replicas):
                    under += 1
                min_isr = local_logs.min_insync_replicas(topic.name, p.partition)
                if min_isr is not None and len(p.isr) < min_isr:
                    under_min += 1
        yield GaugeMetricFamily("tidelog_partitions", "Partitions with a replica on this broker", value=partitions)
        yield GaugeMetricFamily("tidelog_leader_partitions", "Partitions this broker leads", value=leaders)
        yield GaugeMetricFamily("tidelog_under_replicated_partitions",
                                "Partitions this broker leads whose ISR is smaller than their replica set",
                                value=under)
        yield GaugeMetricFamily("tidelog_under_min_isr_partitions",
                                "Partitions this broker leads whose ISR is below min.insync.replicas", value=under_min)
        yield GaugeMetricFamily("tidelog_offline_partitions",
                                "Partitions of the cluster without a live leader (in this broker's metadata image)",
                                value=offline)
        yield CounterMetricFamily("tidelog_isr_shrinks", "ISR shrinks of partitions this broker leads",
                                  value=self.s.isr_changes.shrinks)
        yield CounterMetricFamily("tidelog_isr_expands", "ISR expansions of partitions this broker leads",
                                  value=self.s.isr_changes.expands)

    # ------------------------------------------------------------------------- coordinators

    def _groups(self) -> Iterator[Metric]:
        coordinator = self.s.groups
        states = Counter((g.group_type, g.state_name()) for g in coordinator.groups.values())
        family = GaugeMetricFamily("tidelog_consumer_groups", "Groups, per type and state", labels=["type", "state"])
        for (group_type, state), n in sorted(states.items()):
            family.add_metric([group_type, state], n)
        yield family
        labels = ["group", "topic", "partition"]
        committed = GaugeMetricFamily("tidelog_consumer_group_committed_offset", "Committed offset", labels=labels)
        lag = GaugeMetricFamily("tidelog_consumer_group_lag",
                                "High watermark minus committed offset (records the group has yet to consume)",
                                labels=labels)
        lag_sum = GaugeMetricFamily("tidelog_consumer_group_total_lag", "Lag summed over the group's partitions",
                                    labels=["group"])
        local_logs = self.s.replicas.local_logs
        for group in sorted(coordinator.offsets.groups()):
            total = 0
            for topic, partition, om in coordinator.offsets.items(group):
                labelled = [group, topic, str(partition)]
                committed.add_metric(labelled, om.offset)
                offsets = local_logs.offsets(topic, partition)
                if offsets is None:
                    continue
                behind = max(0, offsets.high_watermark - om.offset)
                total += behind
                lag.add_metric(labelled, behind)
            lag_sum.add_metric([group], total)
        yield from (committed, lag, lag_sum)

    def _transactions(self) -> Iterator[Metric]:
        states = Counter(meta.state.value for part in self.s.transactions.partitions.values()
                         for meta in part.metadata.values())
        family = GaugeMetricFamily("tidelog_transactions", "Transactional ids this broker coordinates, per state",
                                   labels=["state"])
        for state, n in sorted(states.items()):
            family.add_metric([state], n)
        yield family

    def _share_groups(self) -> Iterator[Metric]:
        """Share partitions led here: what happened to their records (counters) and what is in flight."""
        manager = self.s.share_partitions
        if manager is None:
            return
        labels = ["group", "topic", "partition"]
        acquired = CounterMetricFamily("tidelog_share_records_acquired", "Records acquired by share consumers",
                                       labels=labels)
        redelivered = CounterMetricFamily("tidelog_share_records_redelivered",
                                          "Records acquired again (delivery count above 1)", labels=labels)
        acks = CounterMetricFamily("tidelog_share_record_acknowledgements",
                                   "Records acknowledged, per type (Kafka's RecordAcknowledgementsPerSec)",
                                   labels=[*labels, "ack_type"])
        timeouts = CounterMetricFamily("tidelog_share_acquisition_lock_timeouts",
                                       "Records whose acquisition lock expired (Kafka's AcquisitionLockTimeoutPerSec)",
                                       labels=labels)
        left = CounterMetricFamily("tidelog_share_records_released_on_leave",
                                   "Records released because their member left or its connection closed",
                                   labels=labels)
        archived = CounterMetricFamily("tidelog_share_records_archived", "Records archived, per reason",
                                       labels=[*labels, "reason"])
        dead = CounterMetricFamily("tidelog_share_dead_letter_records",
                                   "Records written to the group's dead-letter queue (KIP-1191; Kafka's "
                                   "DeadLetterQueueRecordCount)", labels=labels)
        dead_failed = CounterMetricFamily("tidelog_share_dead_letter_failed_writes",
                                          "Dead-letter writes that failed, their records archived all the same "
                                          "(Kafka's DeadLetterQueueFailedProduceRequestsPerSec)", labels=labels)
        for key, st in sorted(manager.stats.items(), key=lambda kv: (kv[1].group_id, kv[1].topic, kv[1].partition)):
            if manager.topic_name(key.topic_id) is None:
                continue  # the topic is gone: so are its series
            tp = [st.group_id, st.topic, str(st.partition)]
            acquired.add_metric(tp, st.acquired)
            redelivered.add_metric(tp, st.redelivered)
            for ack_type, name in ACK_TYPE_NAMES.items():
                acks.add_metric([*tp, name], st.acknowledged[ack_type])
            timeouts.add_metric(tp, st.lock_timeouts)
            left.add_metric(tp, st.released_on_leave)
            for reason in ARCHIVE_REASONS:
                archived.add_metric([*tp, reason], st.archived[reason])
            dead.add_metric(tp, st.dead_lettered)
            dead_failed.add_metric(tp, st.dead_letter_failures)
        yield from (acquired, redelivered, acks, timeouts, left, archived, dead, dead_failed)
        in_flight = GaugeMetricFamily("tidelog_share_partition_in_flight_messages",
                                      "Offsets of the share partition's window, start offset to end offset "
                                      "(Kafka's InFlightMessageCount)", labels=labels)
        held = GaugeMetricFamily("tidelog_share_partition_acquired_records",
                                 "Records acquired and not yet acknowledged, released or expired", labels=labels)
        start = GaugeMetricFamily("tidelog_share_partition_start_offset",
                                  "The share partition's start offset (every record before it is done with)",
                                  labels=labels)
        for sp in sorted(manager.partitions.values(), key=lambda sp: (sp.key.group_id, sp.topic, sp.key.partition)):
            tp = [sp.key.group_id, sp.topic, str(sp.key.partition)]
            in_flight.add_metric(tp, sp.in_flight())
            held.add_metric(tp, sp.acquired_count())
            start.add_metric(tp, sp.start_offset)
        yield from (in_flight, held, start)

    # --------------------------------------------------------------------------------- storage

    def _storage(self) -> Iterator[Metric]:
        buckets, total = self.s.flush_latency.snapshot()
        family = HistogramMetricFamily("tidelog_log_flush_time_seconds", "Time to fsync a log's unflushed segments")
        family.add_metric([], buckets, total)
        yield family
        recovery = GaugeMetricFamily("tidelog_log_recovery_seconds",
                                     "Time opening (and after a crash, recovering) the logs of a log dir at start-up",
                                     labels=["log_dir"])
        recovered = GaugeMetricFamily("tidelog_log_recovered_segments",
                                      "Segments re-validated at start-up (0 after a clean shutdown)",
                                      labels=["log_dir"])
        for report in self.s.startup_reports():
            recovery.add_metric([str(report.log_dir)], report.elapsed_ms / 1000)
            recovered.add_metric([str(report.log_dir)], report.segments_recovered)
        yield from (recovery, recovered)
        yield from self._log_dirs()

    def _log_dirs(self) -> Iterator[Metric]:
        full = GaugeMetricFamily("tidelog_log_dir_full",
                                 "1 while writes to the log dir fail (a full disk): they answer KAFKA_STORAGE_ERROR",
                                 labels=["log_dir"])
        free = GaugeMetricFamily("tidelog_log_dir_free_bytes", "Bytes free on the log dir's file system",
                                 labels=["log_dir"])
        for state in self.s.replicas.local_logs.dir_states():
            full.add_metric([state.path], 1 if state.failing else 0)
            if state.free_bytes is not None:
                free.add_metric([state.path], state.free_bytes)
        yield from (full, free)


CLIENT_LABELS = ("client_id", "client_instance_id")


def client_telemetry_metrics(pushed: PushedMetrics) -> Iterator[Metric]:
    """What clients pushed (KIP-714), one family per metric name (OpenTelemetry's Prometheus spelling:
    ``org.apache.kafka.producer.record.queue.time.avg`` -> ``org_apache_kafka_producer_record_queue_time_avg``),
    labelled by client id and client instance id and the data point's own attributes; plus
    ``tidelog_client_telemetry_pushes`` per client instance. Client instances gone for a while are dropped
    (docs/telemetry.md)."""
    pushes = CounterMetricFamily("tidelog_client_telemetry_pushes", "Telemetry pushes taken from a client instance",
                                 labels=[*CLIENT_LABELS, "client_software"])
    families: dict[str, Metric] = {}
    for client in pushed.clients():
        ids = [client.client_id, str(client.client_instance_id)]
        pushes.add_metric([*ids, client.software], client.pushes)
        for (name, point_labels), series in sorted(client.series.items()):
            typ = "counter" if series.kind == COUNTER else "gauge"
            base = prometheus_name(name)
            if base.startswith("tidelog_"):
                continue  # the broker's own names are not a client's to take
            if typ == "counter" and base.endswith("_total"):
                base = base[:-len("_total")]
            family = families.get(base)
            if family is None:
                family = families[base] = Metric(base, series.description or f"{name} (client telemetry)", typ)
            elif family.type != typ:
                continue  # the same name pushed as another type by another client: the first type wins
            own = [(k, v) for k, v in point_labels if k not in CLIENT_LABELS]
            family.add_sample(base + "_total" if typ == "counter" else base,
                              dict([*zip(CLIENT_LABELS, ids, strict=True), *own]), series.value)
    yield pushes
    yield from families.values()


def metrics_registry(sources: BrokerSources) -> CollectorRegistry:
    """A registry of the broker's own holding its collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(sources))
    return registry


def metrics_routes(registry: CollectorRegistry) -> list[web.RouteDef]:
    """``GET /metrics`` (and HEAD): the text format, or OpenMetrics when the scraper asks for it."""

    async def metrics(request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        body = encoder(registry)
        media_type, _, params = content_type.partition(";")
        charset = "utf-8"
        response = web.Response(body=body)
        response.headers["Content-Type"] = content_type if params else f"{media_type}; charset={charset}"
        return response

    return [web.get("/metrics", metrics)]


__all__ = ["PHASE_METRICS", "BrokerCollector", "BrokerSources", "IsrChanges", "client_telemetry_metrics", "metrics_registry", "metrics_routes"]
