package tidelog.oracle;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * A consumer group of two members, with the classic protocol or KIP-848's {@code consumer} protocol.
 *
 * <p>{@value #PARTITIONS} partitions hold {@value #FIRST} records (value i in partition i % 4). Member a
 * joins, then b; both consume and commit after every poll until every record is read and the
 * partitions are split between them. Then a leaves, b must take all partitions and read
 * {@value #SECOND} more records. Reports every record each member read, both assignments, what
 * Admin says of the group afterwards and its committed offsets.
 */
final class GroupScenario {
    static final int PARTITIONS = 4;
    static final int FIRST = 400;
    static final int SECOND = 40;
    private static final Duration WAIT = Duration.ofSeconds(60);

    private GroupScenario() {}

    static Object run(String bootstrap, String prefix, String protocol) throws Exception {
        String topic = prefix + "-topic";
        String group = prefix + "-group";
        List<Object> consumed = Collections.synchronizedList(new ArrayList<>());
        Map<String, Object> result = Output.map("topic", topic, "group", group, "protocol", protocol);
        try (Admin admin = Admin.create(ClientConfig.admin(bootstrap))) {
            Topics.create(admin, topic, PARTITIONS, Map.of());
            produce(bootstrap, topic, 0, FIRST);
            Member a = new Member("a", bootstrap, topic, group, protocol, consumed).begin();
            waitFor("member a has partitions", () -> !a.assignment().isEmpty(), () -> a.assignment());
            Member b = new Member("b", bootstrap, topic, group, protocol, consumed).begin();
            waitFor("both members share the partitions and every record is read", () -> {
                Set<Integer> sa = a.assignment();
                Set<Integer> sb = b.assignment();
                Set<Integer> all = new TreeSet<>(sa);
                all.addAll(sb);
                return consumed.size() >= FIRST && !sa.isEmpty() && !sb.isEmpty()
                        && all.size() == PARTITIONS && sa.size() + sb.size() == PARTITIONS;
            }, () -> Output.map("a", a.assignment(), "b", b.assignment(), "consumed", consumed.size(),
                    "errors", List.of(a.errors, b.errors)));
            result.put("shared_assignment", Output.map("a", a.assignment(), "b", b.assignment()));
            a.end();
            waitFor("member b takes every partition", () -> b.assignment().size() == PARTITIONS,
                    () -> b.assignment());
            result.put("after_leave_assignment", Output.map("b", b.assignment()));
            produce(bootstrap, topic, FIRST, FIRST + SECOND);
            waitFor("member b reads the new records", () -> consumed.size() >= FIRST + SECOND,
                    () -> consumed.size());
            b.end();
            result.put("commit_errors", List.of(a.errors, b.errors));
            result.put("consumed", consumed);
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group))
                    .describedGroups().get(group).get(30, TimeUnit.SECONDS);
            List<Object> members = new ArrayList<>();
            for (MemberDescription m : d.members()) {
                members.add(m.clientId());
            }
            result.put("describe", Output.map("state", d.groupState().toString(), "type", d.type().toString(),
                    "simple", d.isSimpleConsumerGroup(), "members", members,
                    "coordinator", d.coordinator().id()));
            Map<String, Object> listed = null;
            for (GroupListing g : admin.listGroups().all().get(30, TimeUnit.SECONDS)) {
                if (g.groupId().equals(group)) {
                    listed = Output.map("type", g.type().map(Object::toString).orElse(null),
                            "protocol", g.protocol(),
                            "state", g.groupState().map(Object::toString).orElse(null));
                }
            }
            result.put("listed", listed);
            Map<String, Object> committed = new TreeMap<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS).entrySet()) {
                committed.put(Integer.toString(e.getKey().partition()),
                        e.getValue() == null ? null : e.getValue().offset());
            }
            result.put("committed", committed);
        }
        return result;
    }

    private static void produce(String bootstrap, String topic, int from, int to) {
        try (KafkaProducer<String, String> producer =
                     new KafkaProducer<>(ClientConfig.producer(bootstrap, "oracle-group-producer"))) {
            for (int i = from; i < to; i++) {
                producer.send(new ProducerRecord<>(topic, i % PARTITIONS, null, Integer.toString(i)));
            }
            producer.flush();
        }
    }

    private static void waitFor(String what, BooleanSupplier done, Supplier<Object> state)
            throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out waiting until " + what + "; state: " + state.get());
            }
            Thread.sleep(50);
        }
    }

    /** One group member: a thread that polls, records what it read, commits, and notes its assignment. */
    private static final class Member implements Runnable {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final String topic;
        final List<Object> consumed;
        final List<String> errors = Collections.synchronizedList(new ArrayList<>());
        private volatile Set<Integer> assignment = Set.of();
        private volatile boolean stopping;
        private final Thread thread;

        Member(String name, String bootstrap, String topic, String group, String protocol, List<Object> consumed) {
            this.name = name;
            this.topic = topic;
            this.consumed = consumed;
            Properties p = ClientConfig.consumer(bootstrap, "oracle-member-" + name, group);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            this.consumer = new KafkaConsumer<>(p);
            this.thread = new Thread(this, "member-" + name);
        }

        Member begin() {
            consumer.subscribe(List.of(topic));
            thread.start();
            return this;
        }

        Set<Integer> assignment() {
            return assignment;
        }

        void end() throws InterruptedException {
            stopping = true;
            thread.join(WAIT.toMillis());
        }

        @Override
        public void run() {
            try {
                while (!stopping) {
                    boolean any = false;
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                        consumed.add(List.of(name, r.partition(), r.offset(), Integer.parseInt(r.value())));
                        any = true;
                    }
                    if (any) {
                        try {
                            consumer.commitSync();
                        } catch (RuntimeException e) {
                            errors.add(Output.describe(e));
                        }
                    }
                    Set<Integer> now = new TreeSet<>();
                    for (TopicPartition tp : consumer.assignment()) {
                        now.add(tp.partition());
                    }
                    assignment = Collections.unmodifiableSet(now);
                }
            } catch (RuntimeException e) {
                errors.add("poll: " + Output.describe(e));
            } finally {
                consumer.close();
                assignment = Set.of();
            }
        }
    }
}
