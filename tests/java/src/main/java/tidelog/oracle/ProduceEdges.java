package tidelog.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;

/**
 * Produce requests a broker must refuse or treat specially, one {@link Steps step} each: records too
 * large for the broker or the topic, timestamps out of the allowed window, a record without key for
 * a compacted topic, LogAppendTime topics, tombstones with headers, empty keys and values; then what
 * was stored is read back. Each record is sent alone and waited for.
 */
final class ProduceEdges {
    private static final long HOUR_MS = 3_600_000L;

    private final String bootstrap;
    private final String prefix;
    private final Steps steps = new Steps();

    private ProduceEdges(String bootstrap, String prefix) {
        this.bootstrap = bootstrap;
        this.prefix = prefix;
    }

    static Object run(String bootstrap, String prefix) throws Exception {
        ProduceEdges s = new ProduceEdges(bootstrap, prefix);
        try (Admin admin = Admin.create(ClientConfig.admin(bootstrap))) {
            Topics.create(admin, prefix + "-plain", 1, Map.of());
            Topics.create(admin, prefix + "-small", 1, Map.of("max.message.bytes", "1000"));
            Topics.create(admin, prefix + "-recent", 1, Map.of("message.timestamp.before.max.ms", "60000"));
            Topics.create(admin, prefix + "-compact", 1, Map.of("cleanup.policy", "compact"));
            Topics.create(admin, prefix + "-append", 1, Map.of("message.timestamp.type", "LogAppendTime"));
        }
        s.steps();
        return s.steps.results();
    }

    private RecordMetadata send(String topic, Long timestamp, String key, String value, Properties extra)
            throws Exception {
        Properties p = ClientConfig.producer(bootstrap, "oracle-edges");
        p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, "4000000");
        p.putAll(extra);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            ProducerRecord<String, String> record = new ProducerRecord<>(topic, null, timestamp, key, value);
            record.headers().add("h", "x".getBytes());
            return producer.send(record).get(30, TimeUnit.SECONDS);
        }
    }

    private RecordMetadata send(String topic, Long timestamp, String key, String value) throws Exception {
        return send(topic, timestamp, key, value, new Properties());
    }

    private void steps() {
        long now = System.currentTimeMillis();
        steps.run("record-larger-than-message-max-bytes", () -> send(prefix + "-plain", null, "k", "x".repeat(2_000_000), props(
                ProducerConfig.BUFFER_MEMORY_CONFIG, "8000000")).offset());
        steps.run("record-larger-than-topic-max-message-bytes", () -> send(prefix + "-small", null, "k", "x".repeat(2000)).offset());
        steps.run("record-within-topic-max-message-bytes", () -> send(prefix + "-small", null, "k", "x".repeat(500)).offset());
        steps.run("timestamp-two-hours-ahead", () -> send(prefix + "-plain", now + 2 * HOUR_MS, "k", "v").offset());
        steps.run("timestamp-two-hours-old-default-topic", () -> send(prefix + "-plain", now - 2 * HOUR_MS, "k", "v").offset());
        steps.run("timestamp-two-hours-old-recent-topic", () -> send(prefix + "-recent", now - 2 * HOUR_MS, "k", "v").offset());
        steps.run("no-key-to-compacted-topic", () -> send(prefix + "-compact", null, null, "v").offset());
        steps.run("tombstone-to-compacted-topic", () -> send(prefix + "-compact", null, "k", null).offset());
        steps.run("log-append-time", () -> {
            RecordMetadata md = send(prefix + "-append", 1000L, "k", "v");
            return List.of(md.offset(), Math.abs(md.timestamp() - System.currentTimeMillis()) < 60_000);
        });
        steps.run("empty-key-and-value", () -> send(prefix + "-plain", null, "", "").offset());
        steps.run("read-back", () -> Output.map(
                "plain", read(prefix + "-plain", 2), "small", read(prefix + "-small", 1),
                "compact", read(prefix + "-compact", 1), "append", read(prefix + "-append", 1)));
    }

    /** [offset, key, value, header h, timestamp type, timestamp within a minute of now] per record. */
    private List<Object> read(String topic, int expected) throws InterruptedException {
        List<Object> out = new ArrayList<>();
        long now = System.currentTimeMillis();
        for (ConsumerRecord<String, String> r : Topics.readAll(bootstrap, topic, 1, expected, Duration.ofSeconds(20))) {
            Header h = r.headers().lastHeader("h");
            out.add(java.util.Arrays.asList(r.offset(), r.key(), r.value() == null ? null : r.value().length(),
                    h == null ? null : new String(h.value()), r.timestampType().name,
                    Math.abs(r.timestamp() - now) < 60_000));
        }
        return out;
    }

    private static Properties props(String... keysAndValues) {
        Properties p = new Properties();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            p.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return p;
    }
}
