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

/**
 * The idempotent producer with many small batches in flight: two producers one after the other (so
 * two producer ids) send {@link #FIRST} + {@link #SECOND} records, value = sequence number, key = one
 * of 30 keys, to a three-partition topic; then everything is read back. Each value must be in the
 * log exactly once and in send order within its partition.
 */
final class Idempotence {
    static final int FIRST = 3000;
    static final int SECOND = 300;

    private Idempotence() {}

    static Object run(String bootstrap, String prefix) throws Exception {
        String topic = prefix + "-topic";
        try (Admin admin = Admin.create(ClientConfig.admin(bootstrap))) {
            Topics.create(admin, topic, 3, Map.of());
        }
        List<Object> errors = Collections.synchronizedList(new ArrayList<>());
        send(bootstrap, topic, 0, FIRST, errors);
        send(bootstrap, topic, FIRST, FIRST + SECOND, errors);
        List<Object> consumed = new ArrayList<>();
        for (ConsumerRecord<String, String> r : Topics.readAll(bootstrap, topic, 3, FIRST + SECOND, Duration.ofSeconds(30))) {
            consumed.add(List.of(r.partition(), r.offset(), Integer.parseInt(r.value())));
        }
        return Output.map("topic", topic, "errors", errors, "consumed", consumed);
    }

    private static void send(String bootstrap, String topic, int from, int to, List<Object> errors) {
        Properties p = ClientConfig.producer(bootstrap, "oracle-idempotent-" + from);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "512");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = from; i < to; i++) {
                final int n = i;
                producer.send(new ProducerRecord<>(topic, "key-" + (i % 30), Integer.toString(i)), (md, e) -> {
                    if (e != null) {
                        errors.add(List.of(n, Output.describe(e)));
                    }
                });
            }
            producer.flush();
        }
    }
}
