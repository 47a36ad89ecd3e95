package tidelog.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidMetadataException;

/** Creating a topic and reading one back from its first offset to its end. */
final class Topics {
    private Topics() {}

    /**
     * Creates the topic and returns once every partition answers ListOffsets. Kafka acknowledges
     * CreateTopics when the controller has committed it; the broker opens the partitions a moment
     * later, and records sent with acks=0 in between are dropped without a word.
     */
    static void create(Admin admin, String name, int partitions, Map<String, String> configs) throws Exception {
        NewTopic topic = new NewTopic(name, partitions, (short) 1).configs(configs);
        admin.createTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            latest.put(new TopicPartition(name, p), OffsetSpec.latest());
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
                return;
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof InvalidMetadataException) || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(50);
            }
        }
    }

    /**
     * Every record of every partition, read with assign() (no group) up to the end offsets, once they
     * add up to {@code expected} records at least (records sent with acks=0 land a little after the
     * producer's flush returns) or the timeout passes.
     */
    static List<ConsumerRecord<String, String>> readAll(String bootstrap, String topic, int partitions,
                                                         long expected, Duration timeout) throws InterruptedException {
        List<TopicPartition> tps = IntStream.range(0, partitions)
                .mapToObj(p -> new TopicPartition(topic, p)).collect(Collectors.toList());
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(ClientConfig.consumer(bootstrap, "oracle-reader", null))) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.nanoTime() + timeout.toNanos();
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            while (end.values().stream().mapToLong(Long::longValue).sum() < expected && System.nanoTime() < deadline) {
                Thread.sleep(50);
                end = consumer.endOffsets(tps);
            }
            deadline = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < deadline && !reached(consumer, end)) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    out.add(r);
                }
            }
            if (!reached(consumer, end)) {
                throw new IllegalStateException("reading " + topic + " timed out: end offsets " + end
                        + ", read " + out.size() + " records");
            }
        }
        return out;
    }

    private static boolean reached(KafkaConsumer<String, String> consumer, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (consumer.position(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }
}
