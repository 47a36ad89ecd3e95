package tidelog.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * Fetches a broker must serve in a particular way, one {@link Steps step} each: a seek into the
 * middle of a compressed batch, a record larger than the consumer's fetch limits (KIP-74: the first
 * batch comes anyway), a position below the log start with each auto.offset.reset, offsetsForTimes,
 * and read_committed on a topic without transactions. Topic "{prefix}-t": one partition, 100 records
 * (value = offset, timestamps base + offset seconds) in one gzip batch, then one 20 kB record.
 */
final class FetchEdges {
    private final String bootstrap;
    private final TopicPartition tp;
    private final Steps steps = new Steps();

    private FetchEdges(String bootstrap, String prefix) {
        this.bootstrap = bootstrap;
        this.tp = new TopicPartition(prefix + "-t", 0);
    }

    static Object run(String bootstrap, String prefix) throws Exception {
        FetchEdges s = new FetchEdges(bootstrap, prefix);
        long base = (System.currentTimeMillis() / 1000 - 3600) * 1000;
        try (Admin admin = Admin.create(ClientConfig.admin(bootstrap))) {
            Topics.create(admin, s.tp.topic(), 1, Map.of());
            s.produce(base);
            s.steps(admin, base);
        }
        return s.steps.results();
    }

    private void produce(long base) throws Exception {
        Properties p = ClientConfig.producer(bootstrap, "oracle-fetch-edges");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "gzip");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "1000");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "1000000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 100; i++) {
                producer.send(new ProducerRecord<>(tp.topic(), 0, base + i * 1000L, null, Integer.toString(i)));
            }
            producer.flush();
            producer.send(new ProducerRecord<>(tp.topic(), 0, base + 100_000L, null, "y".repeat(20_000))).get();
        }
    }

    private KafkaConsumer<String, String> consumer(String... keysAndValues) {
        Properties p = ClientConfig.consumer(bootstrap, "oracle-fetch-edges", null);
        for (int i = 0; i < keysAndValues.length; i += 2) {
            p.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
        c.assign(List.of(tp));
        return c;
    }

    /** [offset, value length] of the first {@code n} records read from the current position. */
    private static List<Object> first(KafkaConsumer<String, String> c, int n) {
        List<Object> out = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (out.size() < n && System.nanoTime() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                if (out.size() < n) {
                    out.add(List.of(r.offset(), r.value().length()));
                }
            }
        }
        return out;
    }

    private void steps(Admin admin, long base) {
        steps.run("seek-into-compressed-batch", () -> {
            try (KafkaConsumer<String, String> c = consumer()) {
                c.seek(tp, 50);
                return first(c, 3);
            }
        });
        steps.run("record-larger-than-fetch-limits", () -> {
            try (KafkaConsumer<String, String> c = consumer(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, "1024",
                    ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, "1024")) {
                c.seek(tp, 100);
                return first(c, 1);
            }
        });
        steps.run("small-fetch-limits-from-start", () -> {
            try (KafkaConsumer<String, String> c = consumer(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, "1024",
                    ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, "1024")) {
                c.seekToBeginning(List.of(tp));
                List<Object> got = first(c, 101);
                return List.of(got.size(), got.get(got.size() - 1));
            }
        });
        steps.run("offsets-for-times", () -> {
            try (KafkaConsumer<String, String> c = consumer()) {
                Map<TopicPartition, OffsetAndTimestamp> at = c.offsetsForTimes(Map.of(tp, base + 41_500L));
                Map<TopicPartition, OffsetAndTimestamp> none = c.offsetsForTimes(Map.of(tp, base + 500_000L));
                return java.util.Arrays.asList(at.get(tp).offset(), at.get(tp).timestamp() - base, none.get(tp));
            }
        });
        steps.run("beginning-and-end-offsets", () -> {
            try (KafkaConsumer<String, String> c = consumer()) {
                return List.of(c.beginningOffsets(List.of(tp)).get(tp), c.endOffsets(List.of(tp)).get(tp));
            }
        });
        steps.run("read-committed-without-transactions", () -> {
            try (KafkaConsumer<String, String> c = consumer(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed")) {
                c.seek(tp, 98);
                return List.of(first(c, 3), c.endOffsets(List.of(tp)).get(tp));
            }
        });
        steps.run("delete-records", () -> admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(60)))
                .lowWatermarks().get(tp).get(30, TimeUnit.SECONDS).lowWatermark());
        steps.run("seek-below-log-start-reset-earliest", () -> {
            try (KafkaConsumer<String, String> c = consumer(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest")) {
                c.seek(tp, 10);
                return first(c, 1);
            }
        });
        steps.run("seek-below-log-start-reset-latest", () -> {
            try (KafkaConsumer<String, String> c = consumer(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest")) {
                c.seek(tp, 10);
                c.poll(Duration.ofSeconds(2));
                return c.position(tp);
            }
        });
        steps.run("seek-below-log-start-reset-none", () -> {
            try (KafkaConsumer<String, String> c = consumer(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none")) {
                c.seek(tp, 10);
                return first(c, 1);
            }
        });
        steps.run("seek-beyond-end-reset-earliest", () -> {
            try (KafkaConsumer<String, String> c = consumer(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest")) {
                c.seek(tp, 500);
                return first(c, 1);
            }
        });
    }
}
