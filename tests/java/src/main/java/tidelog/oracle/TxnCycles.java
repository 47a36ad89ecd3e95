package tidelog.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Rapid commit/abort cycles of one transactional producer (transaction version 2: every EndTxn bumps the
 * epoch), aborts of transactions that never sent a record among them (issue 23, finding 3: the Java client
 * was fenced on its own epoch by Tidelog). Each step begins a transaction, does what its name says and ends
 * it; the result lists per step what the client saw ("ok" or the exception's class) and the coordinator's
 * state and epoch afterwards (DescribeTransactions, once no marker is pending), then what a read_committed
 * consumer reads ([partition, "sI-i"], I the step's index).
 *
 * <p>Steps: "commit:N" sends N records and commits; "abort:N" sends N records, flushes them and aborts;
 * "abort-unflushed:N" sends N records and aborts before they leave (linger.ms is long: the broker sees the
 * EndTxn only); "abort-empty" / "commit-empty" send nothing (the client sends no EndTxn); "offsets-abort"
 * only sends offsets, then aborts; a "+offsets" suffix also sends offsets; "toolarge-abort" sends a record
 * the broker refuses (MESSAGE_TOO_LARGE), then aborts.
 *
 * <p>"commit-held:N" commits N records while their markers cannot be written (the topic's
 * min.insync.replicas is raised above the single broker's ISR just before the commit, so the coordinator
 * keeps retrying the marker); the next step, "abort-unflushed-release:N", then aborts a transaction whose
 * records never leave, so its EndTxn reaches the coordinator while the commit's markers are still pending;
 * {@link #RELEASE_AFTER_MS} later (the abort is blocked meanwhile) the setting is removed again. Kafka answers
 * that EndTxn CONCURRENT_TRANSACTIONS, which the client retries until the commit completes.
 *
 * <p>{@code -Dtidelog.txnCycles.steps=commit:1,abort-empty,...} runs other steps instead of {@link #STEPS}.
 */
final class TxnCycles {
    static final int PARTITIONS = 2;
    static final int MAX_MESSAGE_BYTES = 2000; // a "toolarge" record is refused by the broker (MESSAGE_TOO_LARGE)
    static final long RELEASE_AFTER_MS = 1500;
    static final List<String> STEPS = List.of(
            "commit:3", "abort-empty", "commit-held:2", "abort-unflushed-release:1", "commit:2", "abort:2",
            "abort-empty", "commit-empty", "abort-unflushed:2", "commit:1+offsets", "offsets-abort",
            "toolarge-abort", "commit:1", "abort-unflushed:1+offsets", "commit:1");

    private TxnCycles() {}

    static Object run(String bootstrap, String prefix) throws Exception {
        String topic = prefix + "-topic";
        String txnId = prefix + "-txn";
        Map<String, Object> out = new LinkedHashMap<>();
        List<Object> steps = new ArrayList<>();
        out.put("steps", steps);
        try (Admin admin = Admin.create(ClientConfig.admin(bootstrap))) {
            Topics.create(admin, topic, PARTITIONS, Map.of("max.message.bytes", Integer.toString(MAX_MESSAGE_BYTES)));
            Properties p = ClientConfig.producer(bootstrap, "oracle-txn-cycles");
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
            p.put(ProducerConfig.LINGER_MS_CONFIG, "500"); // records sent and aborted before a flush never leave
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                producer.initTransactions();
                steps.add(List.of("init", "ok", describe(admin, txnId, true)));
                String only = System.getProperty("tidelog.txnCycles.steps");
                int i = 0;
                for (String step : only == null ? STEPS : List.of(only.split(","))) {
                    String outcome;
                    try {
                        cycle(producer, admin, step, topic, "s" + i++, prefix + "-group");
                        outcome = "ok";
                    } catch (Exception e) {
                        outcome = Output.cause(e).getClass().getSimpleName();
                    }
                    // The held commit stays PrepareCommit until the next step releases its markers.
                    steps.add(List.of(step, outcome, describe(admin, txnId, !step.startsWith("commit-held"))));
                    if (!outcome.equals("ok")) {
                        break; // a fenced or failed producer cannot go on
                    }
                }
            } finally {
                minInsyncReplicas(admin, topic, null);
            }
        }
        out.put("read_committed", read(bootstrap, topic));
        return out;
    }

    private static void cycle(KafkaProducer<String, String> producer, Admin admin, String step, String topic,
                              String tag, String group) throws Exception {
        boolean withOffsets = step.endsWith("+offsets");
        String[] parts = step.replace("+offsets", "").split(":");
        int n = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
        producer.beginTransaction();
        for (int i = 0; i < n; i++) {
            producer.send(new ProducerRecord<>(topic, i % PARTITIONS, "k" + i, tag + "-" + i));
        }
        if (withOffsets) {
            producer.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 1), new OffsetAndMetadata(n + 1)),
                    new ConsumerGroupMetadata(group));
        }
        switch (parts[0]) {
            case "commit":
            case "commit-empty":
                producer.commitTransaction();
                break;
            case "commit-held":
                producer.flush(); // in the log (acks=all) before the markers are held back
                minInsyncReplicas(admin, topic, "2");
                producer.commitTransaction();
                break;
            case "abort":
                producer.flush();
                producer.abortTransaction();
                break;
            case "abort-unflushed":
            case "abort-empty":
                producer.abortTransaction();
                break;
            case "abort-unflushed-release":
                Thread release = new Thread(() -> {
                    try {
                        Thread.sleep(RELEASE_AFTER_MS);
                        minInsyncReplicas(admin, topic, null);
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }, "release-markers");
                release.start();
                try {
                    producer.abortTransaction();
                } finally {
                    release.join();
                }
                break;
            case "offsets-abort":
                producer.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(1)),
                        new ConsumerGroupMetadata(group));
                producer.abortTransaction();
                break;
            case "toolarge-abort":
                producer.send(new ProducerRecord<>(topic, 0, "big", "x".repeat(2 * MAX_MESSAGE_BYTES)));
                try {
                    producer.flush();
                } finally {
                    producer.abortTransaction();
                }
                break;
            default:
                throw new IllegalArgumentException("unknown step " + step);
        }
    }

    /** Set the topic's min.insync.replicas, or remove the setting (null). */
    private static void minInsyncReplicas(Admin admin, String topic, String value) throws Exception {
        ConfigEntry entry = new ConfigEntry("min.insync.replicas", value == null ? "" : value);
        AlterConfigOp op = new AlterConfigOp(entry, value == null ? AlterConfigOp.OpType.DELETE : AlterConfigOp.OpType.SET);
        admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, topic), List.of(op)))
                .all().get(20, TimeUnit.SECONDS);
    }

    /** [state, epoch]; {@code settled}: once no marker is pending (Kafka writes them after EndTxn is answered). */
    private static Object describe(Admin admin, String txnId, boolean settled) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            TransactionDescription d = admin.describeTransactions(List.of(txnId)).description(txnId)
                    .get(20, TimeUnit.SECONDS);
            String state = d.state().toString();
            if (!settled || !state.contains("Prepare") || System.nanoTime() > deadline) {
                return List.of(state, (int) d.producerEpoch());
            }
            Thread.sleep(20);
        }
    }

    private static List<Object> read(String bootstrap, String topic) {
        Properties p = ClientConfig.consumer(bootstrap, "oracle-txn-cycles-reader", null);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<Object> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp)) && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.add(List.of(r.partition(), r.value()));
                }
            }
        }
        return out;
    }
}
