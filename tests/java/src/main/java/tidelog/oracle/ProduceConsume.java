package tidelog.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;

/**
 * Produce then consume with every acks setting and every codec: for each (acks, codec) a fresh
 * two-partition topic gets {@link #RECORDS} keyed records (key "k{i}", value {@link #value}, header
 * "i" = i), then everything is read back. Reports what the producer was told (partition, offset or
 * the error) and what the consumer read, for pytest to compare.
 */
final class ProduceConsume {
    static final int RECORDS = 100;
    static final List<String> ACKS = List.of("0", "1", "all");
    static final List<String> CODECS = List.of("none", "gzip", "snappy", "lz4", "zstd");

    private ProduceConsume() {}

    static String value(int i) {
        return "value-" + i + "-" + "x".repeat(i % 50);
    }

    static Object run(String bootstrap, String prefix) throws Exception {
        List<Object> cases = new ArrayList<>();
        try (Admin admin = Admin.create(ClientConfig.admin(bootstrap))) {
            for (String acks : ACKS) {
                for (String codec : CODECS) {
                    String topic = prefix + "-acks" + acks + "-" + codec;
                    Topics.create(admin, topic, 2, Map.of());
                    cases.add(oneCase(bootstrap, topic, acks, codec));
                }
            }
        }
        return cases;
    }

    private static Object oneCase(String bootstrap, String topic, String acks, String codec)
            throws InterruptedException {
        Properties p = ClientConfig.producer(bootstrap, "oracle-producer-" + acks + "-" + codec);
        p.put(ProducerConfig.ACKS_CONFIG, acks);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, String.valueOf(acks.equals("all")));
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        List<Object> acked = Collections.synchronizedList(new ArrayList<>());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < RECORDS; i++) {
                final int n = i;
                ProducerRecord<String, String> record = new ProducerRecord<>(topic, "k" + i, value(i));
                record.headers().add("i", Integer.toString(i).getBytes());
                producer.send(record, (md, e) -> acked.add(e == null
                        ? List.of(n, md.partition(), md.offset())
                        : List.of(n, -1, -1, Output.describe(e))));
            }
            producer.flush();
        }
        List<Object> consumed = new ArrayList<>();
        for (ConsumerRecord<String, String> r : Topics.readAll(bootstrap, topic, 2, RECORDS, Duration.ofSeconds(30))) {
            Header h = r.headers().lastHeader("i");
            consumed.add(List.of(r.partition(), r.offset(), r.key(), r.value(),
                    h == null ? "" : new String(h.value()), r.timestampType().name));
        }
        return Output.map("acks", acks, "codec", codec, "topic", topic, "acked", acked, "consumed", consumed);
    }
}
