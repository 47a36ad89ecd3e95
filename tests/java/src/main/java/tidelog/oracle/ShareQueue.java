package tidelog.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
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
 * Kafka's KafkaShareConsumer (KIP-932): two share consumers of one group (explicit acknowledgement) take a
 * two-partition topic of {@link #RECORDS} records as a queue. Consumer "a" RELEASEs the first record it gets,
 * once; every other delivery is ACCEPTed. Reports what each accepted ([partition, offset, delivery count]) and
 * which record was released, for pytest to check that each record was accepted once and the released one came
 * back with delivery count 2.
 */
final class ShareQueue {
    static final int RECORDS = 100;
    static final long DEADLINE_MS = 120_000;

    private ShareQueue() {}

    static Object run(String bootstrap, String prefix) throws Exception {
        String topic = prefix + "-topic";
        String group = prefix + "-group";
        try (Admin admin = Admin.create(ClientConfig.admin(bootstrap))) {
            Topics.create(admin, topic, 2, Map.of());
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                    .all().get();
        }
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(ClientConfig.producer(bootstrap, "share-p"))) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, "v" + i));
            }
            producer.flush();
        }
        Set<List<Long>> accepted = new HashSet<>();
        List<List<Long>> released = new ArrayList<>();
        AtomicBoolean done = new AtomicBoolean();
        Map<String, List<List<Long>>> byConsumer = Map.of("a", new ArrayList<>(), "b", new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        for (String name : List.of("a", "b")) {
            Thread t = new Thread(() -> {
                try {
                    consume(bootstrap, group, topic, name, byConsumer.get(name), accepted, released, done);
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                    done.set(true);
                }
            }, "share-" + name);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join(DEADLINE_MS + 60_000);
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException(Output.describe(failures.get(0)), failures.get(0));
        }
        return Output.map("a", byConsumer.get("a"), "b", byConsumer.get("b"), "released", released);
    }

    private static void consume(String bootstrap, String group, String topic, String name, List<List<Long>> mine,
                                Set<List<Long>> accepted, List<List<Long>> released, AtomicBoolean done) {
        Properties p = ClientConfig.common(bootstrap, "share-" + name);
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", "explicit");
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        try (KafkaShareConsumer<String, String> c =
                     new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(topic));
            boolean releasedOne = false;
            while (!done.get() && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    List<Long> key = List.of((long) r.partition(), r.offset());
                    if (name.equals("a") && !releasedOne) {
                        releasedOne = true;
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                        synchronized (released) {
                            released.add(key);
                        }
                        continue;
                    }
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    mine.add(List.of(key.get(0), key.get(1), (long) r.deliveryCount().orElse((short) -1)));
                    synchronized (accepted) {
                        accepted.add(key);
                        if (accepted.size() >= RECORDS) {
                            done.set(true);
                        }
                    }
                }
                c.commitSync();
            }
        }
    }
}
