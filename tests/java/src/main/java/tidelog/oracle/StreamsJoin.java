package tidelog.oracle;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams table join: LEFT and RIGHT (String keys and values, copartitioned) read as tables and
 * joined on their key into OUTPUT as "left|right". Both tables are state stores with changelog topics,
 * and their source topics form a copartition group, which the broker checks under
 * {@code group.protocol=streams}.
 *
 * <pre>java -cp ... tidelog.oracle.StreamsJoin BOOTSTRAP APPLICATION_ID LEFT RIGHT OUTPUT STATE_DIR GROUP_PROTOCOL</pre>
 *
 * Prints {"state": ...} on every state change and {"error": ...} if a stream thread dies; runs until
 * SIGTERM (the shutdown hook closes Streams, leaving the group, and prints {"closed": true}).
 */
public final class StreamsJoin {
    private StreamsJoin() {}

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 7) {
            System.err.println("usage: StreamsJoin BOOTSTRAP APPLICATION_ID LEFT RIGHT OUTPUT STATE_DIR GROUP_PROTOCOL");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args[6]);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> left = builder.table(args[2], Consumed.with(Serdes.String(), Serdes.String()));
        KTable<String, String> right = builder.table(args[3], Consumed.with(Serdes.String(), Serdes.String()));
        left.join(right, (l, r) -> l + "|" + r)
                .toStream()
                .to(args[4], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setStateListener((now, before) -> Output.line(Output.map("state", now.name())));
        streams.setUncaughtExceptionHandler(e -> {
            Output.line(Output.map("error", Output.describe(e)));
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    .withTimeout(Duration.ofSeconds(30)));
            Output.line(Output.map("closed", true));
            closed.countDown();
        }, "streams-join-shutdown"));
        streams.start();
        closed.await();
    }
}
