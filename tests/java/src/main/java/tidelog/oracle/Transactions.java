package tidelog.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * The transactional producer and a read_committed consumer, step by step, with what the client saw at
 * each step:
 * <ol>
 * <li>producer "a" (transactional.id PREFIX-txn) commits {@link #COMMITTED} records "c-i" over three
 * partitions, aborts {@link #ABORTED} records "a-i" (flushed first, so they are in the log), then commits {@link #WITH_OFFSETS} records "o-i"
 * together with the offsets of group PREFIX-group (partition 0 at 7, partition 1 at 3: sendOffsetsToTransaction
 * with the group's metadata);</li>
 * <li>an open transaction: "a" sends {@link #OPEN} records "z-i" and does not commit; the partitions' end
 * offsets for read_committed and read_uncommitted consumers are taken while it is open;</li>
 * <li>producer "b" with the same transactional.id: initTransactions fences "a" and aborts the open
 * transaction; "a"'s commit then fails (the exception's class is reported);</li>
 * <li>Admin: listTransactions, describeTransactions, describeProducers of partition 0;</li>
 * <li>read_committed and read_uncommitted consumers read everything; the group's committed offsets.</li>
 * </ol>
 */
final class Transactions {
    static final int PARTITIONS = 3;
    static final int COMMITTED = 60;
    static final int ABORTED = 30;
    static final int WITH_OFFSETS = 15;
    static final int OPEN = 9;

    private Transactions() {}

    static Object run(String bootstrap, String prefix) throws Exception {
        String topic = prefix + "-topic";
        String txnId = prefix + "-txn";
        String group = prefix + "-group";
        Map<String, Object> out = new LinkedHashMap<>();
        try (Admin admin = Admin.create(ClientConfig.admin(bootstrap))) {
            Topics.create(admin, topic, PARTITIONS, Map.of());
            KafkaProducer<String, String> a = new KafkaProducer<>(transactional(bootstrap, txnId, "a"));
            try {
                a.initTransactions();
                a.beginTransaction();
                send(a, topic, "c", COMMITTED);
                a.commitTransaction();
                a.beginTransaction();
                send(a, topic, "a", ABORTED);
                a.flush(); // on the broker before the abort (else the client may drop them unsent)
                a.abortTransaction();
                a.beginTransaction();
                send(a, topic, "o", WITH_OFFSETS);
                Map<TopicPartition, OffsetAndMetadata> offsets = Map.of(
                        new TopicPartition(topic, 0), new OffsetAndMetadata(7, "seven"),
                        new TopicPartition(topic, 1), new OffsetAndMetadata(3));
                a.sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(group));
                a.commitTransaction();

                a.beginTransaction();
                send(a, topic, "z", OPEN);
                a.flush();
                out.put("open_end_offsets", Map.of(
                        "read_committed", endOffsets(bootstrap, topic, "read_committed"),
                        "read_uncommitted", endOffsets(bootstrap, topic, "read_uncommitted")));
                out.put("open_describe", describe(admin, txnId));

                try (KafkaProducer<String, String> b = new KafkaProducer<>(transactional(bootstrap, txnId, "b"))) {
                    b.initTransactions();
                    out.put("after_fence_describe", describe(admin, txnId));
                    try {
                        a.commitTransaction();
                        out.put("zombie_commit", "committed");
                    } catch (Exception e) {
                        out.put("zombie_commit", e.getClass().getSimpleName());
                    }
                    b.beginTransaction();
                    b.send(new ProducerRecord<>(topic, 2, "k", "b-0"));
                    b.commitTransaction();
                }
            } finally {
                a.close(Duration.ofSeconds(5));
            }
            // The commit's markers are written after commitTransaction returns: list once they are.
            List<Object> listed = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            do {
                listed.clear();
                for (TransactionListing t : admin.listTransactions().all().get(20, TimeUnit.SECONDS)) {
                    if (t.transactionalId().equals(txnId)) {
                        listed.add(List.of(t.transactionalId(), t.state().toString()));
                    }
                }
                if (listed.toString().contains("Prepare")) {
                    Thread.sleep(50);
                }
            } while (listed.toString().contains("Prepare") && System.nanoTime() < deadline);
            out.put("listed", listed);
            out.put("final_describe", describe(admin, txnId));
            TopicPartition p0 = new TopicPartition(topic, 0);
            List<Object> producers = new ArrayList<>();
            for (ProducerState s : admin.describeProducers(List.of(p0)).partitionResult(p0).get(20, TimeUnit.SECONDS)
                    .activeProducers()) {
                producers.add(Output.map("epoch", s.producerEpoch(), "open", s.currentTransactionStartOffset().isPresent()));
            }
            out.put("producers_p0", producers);
            Map<String, Object> committed = new HashMap<>();
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS)
                    .forEach((tp, om) -> committed.put(Integer.toString(tp.partition()),
                            List.of(om.offset(), om.metadata())));
            out.put("group_offsets", committed);
        }
        out.put("read_committed", read(bootstrap, topic, "read_committed"));
        out.put("read_uncommitted", read(bootstrap, topic, "read_uncommitted"));
        return out;
    }

    private static Properties transactional(String bootstrap, String txnId, String clientId) {
        Properties p = ClientConfig.producer(bootstrap, "oracle-txn-" + clientId);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        return p;
    }

    private static void send(KafkaProducer<String, String> producer, String topic, String tag, int n) {
        for (int i = 0; i < n; i++) {
            producer.send(new ProducerRecord<>(topic, i % PARTITIONS, "k" + i, tag + "-" + i));
        }
    }

    private static Object describe(Admin admin, String txnId) throws Exception {
        TransactionDescription d = admin.describeTransactions(List.of(txnId)).description(txnId).get(20, TimeUnit.SECONDS);
        List<String> partitions = d.topicPartitions().stream().map(tp -> Integer.toString(tp.partition())).sorted()
                .collect(Collectors.toList());
        return Output.map("state", d.state().toString(), "epoch", d.producerEpoch(), "timeout", d.transactionTimeoutMs(),
                "started", d.transactionStartTimeMs().isPresent(), "partitions", partitions);
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap, String isolation) {
        Properties p = ClientConfig.consumer(bootstrap, "oracle-txn-" + isolation, null);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        return new KafkaConsumer<>(p);
    }

    private static List<TopicPartition> partitions(String topic) {
        return IntStream.range(0, PARTITIONS).mapToObj(p -> new TopicPartition(topic, p)).collect(Collectors.toList());
    }

    private static Map<String, Long> endOffsets(String bootstrap, String topic, String isolation) {
        Map<String, Long> out = new HashMap<>();
        try (KafkaConsumer<String, String> c = consumer(bootstrap, isolation)) {
            c.endOffsets(partitions(topic)).forEach((tp, o) -> out.put(Integer.toString(tp.partition()), o));
        }
        return out;
    }

    /** Every record a consumer with this isolation level reads up to its end offsets: [partition, offset, value]. */
    private static List<Object> read(String bootstrap, String topic, String isolation) {
        List<Object> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(bootstrap, isolation)) {
            Collection<TopicPartition> tps = partitions(topic);
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp)) && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.add(List.of(r.partition(), r.offset(), r.value()));
                }
            }
        }
        return out;
    }
}
