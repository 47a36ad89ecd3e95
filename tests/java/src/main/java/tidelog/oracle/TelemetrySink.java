package tidelog.oracle;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;

/**
 * A metrics reporter that takes client telemetry (KIP-714) and drops it: with it in the oracle broker's
 * {@code metric.reporters}, Kafka serves GetTelemetrySubscriptions and PushTelemetry, so the suite can
 * compare Tidelog's answers (tests/oracle/test_telemetry_oracle.py). Kafka serves neither API without one.
 */
public final class TelemetrySink implements MetricsReporter, ClientTelemetryExporterProvider {
    @Override
    public ClientTelemetryExporter clientTelemetryExporter() {
        return (context, payload) -> { };
    }

    @Override
    public void init(List<KafkaMetric> metrics) {}

    @Override
    public void metricChange(KafkaMetric metric) {}

    @Override
    public void metricRemoval(KafkaMetric metric) {}

    @Override
    public void close() {}

    @Override
    public void configure(Map<String, ?> configs) {}
}
