package tidelog.oracle;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Share groups' dead-letter queues (KIP-1191, share.version=2) with Kafka's KafkaShareConsumer: a share group
 * whose DLQ topic is {@code dlq.PREFIX} (two partitions, {@code errors.deadletterqueue.group.enable=true};
 * group configs {@code share.delivery.count.limit=2}, {@code errors.deadletterqueue.copy.record.enable=true})
 * consumes {@link #RECORDS} records of a three-partition topic with explicit acknowledgement: record {@code i}
 * with {@code i % 10 == 0} is REJECTed, with {@code i % 10 == 1} RELEASEd at every delivery (so its second
 * delivery reaches the limit), every other ACCEPTed. Reports each delivery ([partition, offset, delivery
 * count, index]) per decision, and the DLQ topic's name; pytest reads the DLQ topic and checks its records
 * and {@code __dlq.errors.*} headers.
 */
final class ShareDeadLetter {
    static final int RECORDS = 30;
    static final long DEADLINE_MS = 90_000;

    private ShareDeadLetter() {}

    static Object run(String bootstrap, String prefix) throws Exception {
        String topic = prefix + "-topic";
        String group = prefix + "-group";
        String dlq = "dlq." + prefix;
        try (Admin admin = Admin.create(ClientConfig.admin(bootstrap))) {
            Topics.create(admin, topic, 3, Map.of());
            Topics.create(admin, dlq, 2, Map.of("errors.deadletterqueue.group.enable", "true"));
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            List<AlterConfigOp> configs = new ArrayList<>();
            for (Map.Entry<String, String> e : Map.of(
                    "share.auto.offset.reset", "earliest",
                    "share.delivery.count.limit", "2",
                    "errors.deadletterqueue.topic.name", dlq,
                    "errors.deadletterqueue.copy.record.enable", "true").entrySet()) {
                configs.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()), AlterConfigOp.OpType.SET));
            }
            admin.incrementalAlterConfigs(Map.of(resource, configs)).all().get();
        }
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(ClientConfig.producer(bootstrap, "dlq-p"))) {
            for (int i = 0; i < RECORDS; i++) {
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, i % 3, "k" + i, "v" + i);
                r.headers().add("original", ("h" + i).getBytes(StandardCharsets.UTF_8));
                producer.send(r);
            }
            producer.flush();
        }

        Map<String, List<List<Long>>> deliveries = new HashMap<>();
        for (String decision : List.of("accepted", "rejected", "released")) {
            deliveries.put(decision, new ArrayList<>());
        }
        Map<Integer, Integer> releases = new HashMap<>();
        int accepted = 0;
        int rejected = 0;
        Properties p = ClientConfig.common(bootstrap, "dlq-share");
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", "explicit");
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        try (KafkaShareConsumer<String, String> c =
                     new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(topic));
            while (!(accepted == RECORDS * 8 / 10 && rejected == RECORDS / 10
                     && releases.values().stream().filter(n -> n >= 2).count() == RECORDS / 10)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("not done in " + DEADLINE_MS + " ms: " + deliveries);
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    int index = Integer.parseInt(r.value().substring(1));
                    List<Long> seen = List.of((long) r.partition(), r.offset(),
                                              (long) r.deliveryCount().orElse((short) -1), (long) index);
                    if (index % 10 == 0) {
                        c.acknowledge(r, AcknowledgeType.REJECT);
                        deliveries.get("rejected").add(seen);
                        rejected++;
                    } else if (index % 10 == 1) {
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                        deliveries.get("released").add(seen);
                        releases.merge(index, 1, Integer::sum);
                    } else {
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        deliveries.get("accepted").add(seen);
                        accepted++;
                    }
                }
                c.commitSync();
            }
        }
        return Output.map("dlq", dlq, "topic", topic, "group", group, "accepted", deliveries.get("accepted"),
                          "rejected", deliveries.get("rejected"), "released", deliveries.get("released"));
    }
}
