package tidelog.oracle;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams word count: lines from INPUT, split on non-letters and lower-cased, counted per word
 * into OUTPUT (String key, Long value). The count goes through a repartition topic and a RocksDB
 * store with its changelog topic, so the broker serves Streams' internal topics, its consumer group
 * (the classic protocol with the Streams assignor) and DeleteRecords on the repartition topic.
 *
 * <pre>java -cp ... tidelog.oracle.WordCount BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR [GROUP_PROTOCOL]</pre>
 *
 * GROUP_PROTOCOL is Streams' {@code group.protocol}: {@code classic} (the default) or {@code streams}
 * (KIP-1071: the broker assigns the tasks; the group is a streams group).
 *
 * Prints {"state": ...} on every state change and {"error": ...} if a stream thread dies; runs until
 * SIGTERM (the shutdown hook closes Streams, leaving the group, and prints {"closed": true}).
 */
public final class WordCount {
    private WordCount() {}

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 5 && args.length != 6) {
            System.err.println("usage: WordCount BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR [GROUP_PROTOCOL]");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        if (args.length == 6) {
            p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args[5]);
        }
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // Every update goes out at once and is committed every 100 ms: the test sees final counts soon.
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        // Consumed repartition records are purged (DeleteRecords) after each commit, not every 30 s.
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word)
                .count()
                .toStream()
                .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setStateListener((now, before) -> Output.line(Output.map("state", now.name())));
        streams.setUncaughtExceptionHandler(e -> {
            Output.line(Output.map("error", Output.describe(e)));
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // Leave the group on the way out (Streams does not by default), so a second run of the app
            // is assigned at once instead of after the session timeout of this one.
            streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    .withTimeout(Duration.ofSeconds(30)));
            Output.line(Output.map("closed", true));
            closed.countDown();
        }, "word-count-shutdown"));
        streams.start();
        closed.await();
    }
}
