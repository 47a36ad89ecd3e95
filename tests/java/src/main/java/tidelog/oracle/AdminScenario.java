package tidelog.oracle;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidMetadataException;

/**
 * Admin calls one after another, each recorded as a {@link Steps step}.
 * Topic "{prefix}-a" (3 partitions) and "{prefix}-b" (compacted) are the subjects, group "{prefix}-g".
 * Results hold nothing that differs between two fresh brokers (no ids, ports or times), so the
 * output of two brokers can be compared as it is.
 */
final class AdminScenario {
    private static final long TIMEOUT_S = 30;

    private final Admin admin;
    private final String bootstrap;
    private final Steps steps = new Steps();

    private AdminScenario(Admin admin, String bootstrap) {
        this.admin = admin;
        this.bootstrap = bootstrap;
    }

    static Object run(String bootstrap, String prefix) {
        try (Admin admin = Admin.create(ClientConfig.admin(bootstrap))) {
            AdminScenario s = new AdminScenario(admin, bootstrap);
            s.topics(prefix);
            s.configs(prefix);
            s.offsets(prefix);
            s.groups(prefix);
            s.deletion(prefix);
            return s.steps.results();
        }
    }

    private void step(String name, Callable<Object> call) {
        steps.run(name, call);
    }

    private <T> T get(org.apache.kafka.common.KafkaFuture<T> future) throws Exception {
        return future.get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    // ------------------------------------------------------------------------------------ topics

    private void topics(String prefix) {
        String a = prefix + "-a";
        String b = prefix + "-b";
        step("describe-cluster", () -> {
            DescribeClusterResult r = admin.describeCluster();
            List<Object> nodes = new ArrayList<>();
            for (Node n : get(r.nodes())) {
                nodes.add(List.of(n.id(), n.host()));
            }
            Node controller = get(r.controller());
            return Output.map("nodes", nodes, "controller_in_nodes", controller != null
                    && get(r.nodes()).stream().anyMatch(n -> n.id() == controller.id()),
                    "cluster_id_set", get(r.clusterId()) != null && !get(r.clusterId()).isEmpty());
        });
        step("create-topics", () -> {
            CreateTopicsResult r = admin.createTopics(List.of(
                    new NewTopic(a, 3, (short) 1).configs(Map.of("retention.ms", "3600000")),
                    new NewTopic(b, 1, (short) 1).configs(Map.of("cleanup.policy", "compact"))));
            get(r.all());
            return Output.map(
                    a, List.of(get(r.numPartitions(a)), get(r.replicationFactor(a)),
                            get(r.config(a)).get("retention.ms").value()),
                    b, List.of(get(r.numPartitions(b)), get(r.replicationFactor(b)),
                            get(r.config(b)).get("cleanup.policy").value()));
        });
        step("create-existing-topic", () -> get(admin.createTopics(List.of(new NewTopic(a, 1, (short) 1))).all()));
        step("create-validate-only", () -> {
            get(admin.createTopics(List.of(new NewTopic(prefix + "-c", 2, (short) 1)),
                    new CreateTopicsOptions().validateOnly(true)).all());
            return get(admin.listTopics().names()).contains(prefix + "-c");
        });
        step("create-invalid-config", () -> get(admin.createTopics(List.of(
                new NewTopic(prefix + "-d", 1, (short) 1).configs(Map.of("cleanup.policy", "bogus")))).all()));
        step("create-unknown-config", () -> get(admin.createTopics(List.of(
                new NewTopic(prefix + "-d", 1, (short) 1).configs(Map.of("no.such.config", "1")))).all()));
        step("create-zero-partitions", () -> get(admin.createTopics(List.of(
                new NewTopic(prefix + "-e", 0, (short) 1))).all()));
        step("create-replication-3", () -> get(admin.createTopics(List.of(
                new NewTopic(prefix + "-f", 1, (short) 3))).all()));
        step("create-with-compression-level", () -> {
            String name = prefix + "-z";
            get(admin.createTopics(List.of(new NewTopic(name, 1, (short) 1).configs(
                    Map.of("compression.type", "zstd", "compression.zstd.level", "10")))).all());
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, name);
            Config config = eventually(() -> get(admin.describeConfigs(List.of(resource)).all()).get(resource));
            return config.get("compression.zstd.level").value();
        });
        step("create-small-segment-bytes", () -> get(admin.createTopics(List.of(
                new NewTopic(prefix + "-s", 1, (short) 1).configs(Map.of("segment.bytes", "20000")))).all()));
        step("create-invalid-name", () -> get(admin.createTopics(List.of(
                new NewTopic(prefix + "-bad/name", 1, (short) 1))).all()));
        step("list-topics", () -> ours(get(admin.listTopics().names()), prefix));
        step("describe-topic", () -> describe(a));
        step("describe-unknown-topic", () -> describe(prefix + "-missing"));
        step("create-partitions", () -> {
            get(admin.createPartitions(Map.of(a, NewPartitions.increaseTo(5))).all());
            return describe(a);
        });
        step("create-partitions-decrease", () -> get(admin.createPartitions(
                Map.of(a, NewPartitions.increaseTo(2))).all()));
        step("create-partitions-unknown-topic", () -> get(admin.createPartitions(
                Map.of(prefix + "-missing", NewPartitions.increaseTo(2))).all()));
    }

    private Object describe(String topic) throws Exception {
        TopicDescription d = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
        List<Object> partitions = new ArrayList<>();
        for (TopicPartitionInfo p : d.partitions()) {
            partitions.add(List.of(p.partition(), p.leader().id(), ids(p.replicas()), ids(p.isr())));
        }
        return Output.map("internal", d.isInternal(), "topic_id_set", !d.topicId().toString().equals("AAAAAAAAAAAAAAAAAAAAAA"),
                "partitions", partitions);
    }

    private static List<Integer> ids(List<Node> nodes) {
        List<Integer> ids = new ArrayList<>();
        for (Node n : nodes) {
            ids.add(n.id());
        }
        return ids;
    }

    /** Which of this scenario's topics "{prefix}-a", "-b" and "-c" (validate-only: never created) exist. */
    private static List<String> ours(Collection<String> names, String prefix) {
        List<String> out = new ArrayList<>();
        for (String n : List.of(prefix + "-a", prefix + "-b", prefix + "-c")) {
            if (names.contains(n)) {
                out.add(n);
            }
        }
        return out;
    }

    /**
     * The call's result, retried for up to 15 s while it fails with a metadata error. Kafka's brokers
     * learn of a topic created or deleted a moment after the controller answers, so right after
     * CreateTopics or DeleteTopics they may not know yet. (Tidelog answers at once.)
     */
    private static <T> T eventually(Callable<T> call) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (true) {
            try {
                return call.call();
            } catch (Exception e) {
                if (!(Output.cause(e) instanceof InvalidMetadataException) || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(50);
            }
        }
    }

    // ----------------------------------------------------------------------------------- configs

    private void configs(String prefix) {
        String a = prefix + "-a";
        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, a);
        step("describe-topic-configs", () -> entries(topic));
        step("describe-broker-configs", () -> entries(new ConfigResource(ConfigResource.Type.BROKER, brokerId())));
        step("alter-topic-configs", () -> {
            get(admin.incrementalAlterConfigs(Map.of(topic, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", "200000"), AlterConfigOp.OpType.SET)))).all());
            return entries(topic);
        });
        step("alter-topic-configs-duplicate-key", () -> get(admin.incrementalAlterConfigs(Map.of(topic, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "1000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("retention.ms", "2000"), AlterConfigOp.OpType.SET)))).all()));
        step("alter-topic-configs-set-delete", () -> {
            get(admin.incrementalAlterConfigs(Map.of(topic, List.of(
                    new AlterConfigOp(new ConfigEntry("segment.ms", "3600000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("retention.ms", null), AlterConfigOp.OpType.DELETE)))).all());
            return entries(topic);
        });
        step("alter-topic-configs-invalid-value", () -> get(admin.incrementalAlterConfigs(Map.of(topic, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET)))).all()));
        step("alter-topic-configs-unknown-name", () -> get(admin.incrementalAlterConfigs(Map.of(topic, List.of(
                new AlterConfigOp(new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET)))).all()));
        step("alter-unknown-topic-configs", () -> get(admin.incrementalAlterConfigs(Map.of(
                new ConfigResource(ConfigResource.Type.TOPIC, prefix + "-missing"), List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "1000"), AlterConfigOp.OpType.SET)))).all()));
        step("describe-unknown-topic-configs", () -> entries(
                new ConfigResource(ConfigResource.Type.TOPIC, prefix + "-missing")));
    }

    private String brokerId() throws Exception {
        return Integer.toString(get(admin.describeCluster().nodes()).iterator().next().id());
    }

    /** name -> [value, source, read-only, sensitive], sorted by name. */
    private Object entries(ConfigResource resource) throws Exception {
        Config config = get(admin.describeConfigs(List.of(resource)).all()).get(resource);
        Map<String, Object> out = new TreeMap<>();
        for (ConfigEntry e : config.entries()) {
            out.put(e.name(), List.of(String.valueOf(e.value()), e.source().name(), e.isReadOnly(), e.isSensitive()));
        }
        return out;
    }

    // ----------------------------------------------------------------------------------- offsets

    private void offsets(String prefix) {
        String a = prefix + "-a";
        TopicPartition p0 = new TopicPartition(a, 0);
        TopicPartition p2 = new TopicPartition(a, 2);
        long base = (System.currentTimeMillis() / 1000 - 120) * 1000;
        step("produce", () -> {
            try (KafkaProducer<String, String> producer =
                         new KafkaProducer<>(ClientConfig.producer(bootstrap, "oracle-admin-producer"))) {
                // partition 0: ten batches of one record, timestamps base, base+1s ... base+9s
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>(a, 0, base + i * 1000L, "k" + i, "v" + i)).get();
                }
                // partition 2: one batch of three records whose largest timestamp is in the middle
                long[] stamps = {base + 5000, base + 9000, base + 1000};
                for (long ts : stamps) {
                    producer.send(new ProducerRecord<>(a, 2, ts, "k", "v"));
                }
                producer.flush();
            }
            return null;
        });
        step("list-offsets", () -> Output.map(
                "earliest", offset(p0, OffsetSpec.earliest(), base),
                "latest", offset(p0, OffsetSpec.latest(), base),
                "max-timestamp", offset(p0, OffsetSpec.maxTimestamp(), base),
                "for-timestamp", offset(p0, OffsetSpec.forTimestamp(base + 3500), base),
                "for-exact-timestamp", offset(p0, OffsetSpec.forTimestamp(base + 3000), base),
                "for-future-timestamp", offset(p0, OffsetSpec.forTimestamp(base + 100_000), base),
                "empty-partition-latest", offset(new TopicPartition(a, 1), OffsetSpec.latest(), base),
                "empty-partition-max-timestamp", offset(new TopicPartition(a, 1), OffsetSpec.maxTimestamp(), base)));
        step("list-offsets-within-batch", () -> Output.map(
                "max-timestamp", offset(p2, OffsetSpec.maxTimestamp(), base),
                "for-timestamp-before-all", offset(p2, OffsetSpec.forTimestamp(base), base),
                "for-timestamp-second", offset(p2, OffsetSpec.forTimestamp(base + 6000), base),
                "for-timestamp-after-all", offset(p2, OffsetSpec.forTimestamp(base + 9500), base)));
        step("delete-records", () -> get(admin.deleteRecords(
                Map.of(p0, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(p0)).lowWatermark());
        step("list-offsets-after-delete", () -> Output.map(
                "earliest", offset(p0, OffsetSpec.earliest(), base),
                "latest", offset(p0, OffsetSpec.latest(), base),
                "for-old-timestamp", offset(p0, OffsetSpec.forTimestamp(base), base)));
        step("delete-records-beyond-end", () -> get(admin.deleteRecords(
                Map.of(p0, RecordsToDelete.beforeOffset(100))).lowWatermarks().get(p0)).lowWatermark());
        step("delete-records-to-end", () -> get(admin.deleteRecords(
                Map.of(p0, RecordsToDelete.beforeOffset(-1))).lowWatermarks().get(p0)).lowWatermark());
        step("list-offsets-unknown-topic", () -> offset(new TopicPartition(prefix + "-missing", 0),
                OffsetSpec.latest(), base));
    }

    /** [offset, timestamp - base] the broker answers for one partition (timestamp -1 stays -1). */
    private Object offset(TopicPartition tp, OffsetSpec spec, long base) throws Exception {
        ListOffsetsResultInfo info = get(admin.listOffsets(Map.of(tp, spec)).partitionResult(tp));
        return List.of(info.offset(), info.timestamp() < 0 ? info.timestamp() : info.timestamp() - base);
    }

    // ------------------------------------------------------------------------------------ groups

    private void groups(String prefix) {
        String group = prefix + "-g";
        TopicPartition p0 = new TopicPartition(prefix + "-a", 0);
        TopicPartition p1 = new TopicPartition(prefix + "-a", 1);
        step("commit-offsets", () -> {
            try (KafkaConsumer<String, String> consumer =
                         new KafkaConsumer<>(ClientConfig.consumer(bootstrap, "oracle-committer", group))) {
                consumer.commitSync(Map.of(p0, new OffsetAndMetadata(7, "meta"), p1, new OffsetAndMetadata(0)));
            }
            return null;
        });
        step("list-groups", () -> listed(group));
        step("describe-group", () -> describeGroup(group));
        step("list-group-offsets", () -> groupOffsets(group));
        step("alter-group-offsets", () -> {
            get(admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(3))).all());
            return groupOffsets(group);
        });
        step("delete-group-offsets", () -> {
            get(admin.deleteConsumerGroupOffsets(group, Set.of(p0)).all());
            return groupOffsets(group);
        });
        step("list-offsets-unknown-group", () -> groupOffsets(prefix + "-nobody"));
        step("describe-unknown-group", () -> describeGroup(prefix + "-nobody"));
        step("delete-group", () -> {
            get(admin.deleteConsumerGroups(List.of(group)).all());
            return listed(group);
        });
        step("delete-unknown-group", () -> get(admin.deleteConsumerGroups(List.of(prefix + "-nobody")).all()));
    }

    private Object listed(String group) throws Exception {
        for (GroupListing g : get(admin.listGroups().all())) {
            if (g.groupId().equals(group)) {
                return Output.map("type", g.type().map(Object::toString).orElse(null), "protocol", g.protocol(),
                        "state", g.groupState().map(Object::toString).orElse(null),
                        "simple", g.isSimpleConsumerGroup());
            }
        }
        return null;
    }

    private Object describeGroup(String group) throws Exception {
        ConsumerGroupDescription d = get(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group));
        return Output.map("state", d.groupState().toString(), "type", d.type().toString(),
                "simple", d.isSimpleConsumerGroup(), "assignor", d.partitionAssignor(),
                "members", d.members().size());
    }

    private Object groupOffsets(String group) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e :
                get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()).entrySet()) {
            OffsetAndMetadata o = e.getValue();
            out.put(e.getKey().toString(), o == null ? null : List.of(o.offset(), o.metadata()));
        }
        return out;
    }

    // ---------------------------------------------------------------------------------- deletion

    private void deletion(String prefix) {
        step("delete-topic", () -> {
            get(admin.deleteTopics(List.of(prefix + "-b")).all());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);  // see eventually()
            List<String> left = ours(get(admin.listTopics().names()), prefix);
            while (left.contains(prefix + "-b") && System.nanoTime() < deadline) {
                Thread.sleep(50);
                left = ours(get(admin.listTopics().names()), prefix);
            }
            return left;
        });
        step("delete-unknown-topic", () -> get(admin.deleteTopics(List.of(prefix + "-missing")).all()));
    }
}
