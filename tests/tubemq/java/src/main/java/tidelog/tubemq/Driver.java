package tidelog.tubemq;

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.inlong.tubemq.client.config.ConsumerConfig;
import org.apache.inlong.tubemq.client.config.TubeClientConfig;
import org.apache.inlong.tubemq.client.consumer.ConsumePosition;
import org.apache.inlong.tubemq.client.consumer.ConsumeOffsetInfo;
import org.apache.inlong.tubemq.client.consumer.ConsumerResult;
import org.apache.inlong.tubemq.client.consumer.MessageListener;
import org.apache.inlong.tubemq.client.consumer.PullMessageConsumer;
import org.apache.inlong.tubemq.client.consumer.PushMessageConsumer;
import org.apache.inlong.tubemq.client.factory.MessageSessionFactory;
import org.apache.inlong.tubemq.client.factory.TubeSingleSessionFactory;
import org.apache.inlong.tubemq.client.producer.MessageProducer;
import org.apache.inlong.tubemq.client.producer.MessageSentCallback;
import org.apache.inlong.tubemq.client.producer.MessageSentResult;
import org.apache.inlong.tubemq.corebase.Message;

/**
 * Drives the real TubeMQ Java client against a broker for Tidelog's pytest suite (tests/tubemq/).
 * Each subcommand does one client-side job and reports what the client observed as JSON lines on
 * stdout; the Python tests decide what is right. Client failures go to stderr with exit code 1.
 *
 * <pre>
 *   produce  MASTER TOPIC [heartbeatMs]          messages from stdin, one JSON object per line:
 *            {"body": "...", "attributes": [["k", "v"]], "msgType": "t", "msgTime": "yyyyMMddHHmm"}
 *            prints per message {"ok", "errCode", "errMsg", "messageId", "partition", "appendOffset"}
 *   bench    MASTER TOPIC COUNT SIZE WINDOW [WARMUP]   asynchronous sends of COUNT messages of SIZE bytes with
 *            at most WINDOW in flight, after WARMUP untimed ones; prints {"sent", "failed", "seconds"}
 *   drain    MASTER GROUP TOPIC COUNT             a pull consumer reads COUNT messages; prints {"received",
 *            "bytes", "seconds"} timed from its first message to its last
 *   pull     MASTER GROUP TOPICS [heartbeatMs] [first|latest] [TYPES]   a pull consumer (TOPICS comma-separated;
 *            TYPES, comma-separated, filters by $msgType$)
 *   push     MASTER GROUP TOPICS [heartbeatMs] [first|latest]   a push consumer
 * </pre>
 *
 * With a heartbeatMs, a client that has failed its master heartbeats the client's maximum number of times
 * (its master's broker was killed) waits {@link #HEARTBEAT_AFTER_FAIL_MS} before the next one instead of
 * the client's default minute, so that a test sees it move to the next master in seconds.
 *
 * Consumers print {"event": "partitions", "partitions": [[topic, id]...]} whenever the partitions they
 * consume change, {"event": "record", "topic", "partition", "messageId", "body", "attribute", "msgType",
 * "msgTime"} per message (confirmed as consumed after printing), and {"event": "closed"} after a clean
 * shutdown, which they do when stdin reaches EOF.
 */
public final class Driver {

    private static final Gson GSON = new Gson();
    /** TubeClientConfig.heartbeatPeriodAfterFail with a heartbeatMs (the client's default: 60,000). */
    private static final long HEARTBEAT_AFTER_FAIL_MS = 2_000;
    private static final Object OUT = new Object();

    private Driver() {
    }

    static void emit(JsonObject line) {
        synchronized (OUT) {
            System.out.println(GSON.toJson(line));
            System.out.flush();
        }
    }

    public static void main(String[] args) {
        if (args.length < 3) {
            System.err.println("usage: Driver produce|bench|drain|pull|push MASTER ...");
            System.exit(2);
        }
        try {
            run(args);
        } catch (Throwable e) {
            // The client's threads are not daemons: leave the JVM explicitly.
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    private static void run(String[] args) throws Throwable {
        switch (args[0]) {
            case "produce":
                produce(args[1], args[2], args.length > 3 ? Long.parseLong(args[3]) : 0);
                break;
            case "bench":
                bench(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]), Integer.parseInt(args[5]),
                        args.length > 6 ? Integer.parseInt(args[6]) : 0);
                break;
            case "drain":
                drain(args[1], args[2], args[3], Integer.parseInt(args[4]));
                break;
            case "pull":
            case "push":
                consume(args[0].equals("pull"), args[1], args[2], args[3],
                        args.length > 4 ? Long.parseLong(args[4]) : 0, args.length > 5 ? args[5] : "first",
                        args.length > 6 ? new TreeSet<>(List.of(args[6].split(","))) : null);
                break;
            default:
                System.err.println("unknown subcommand " + args[0]);
                System.exit(2);
        }
    }

    private static TubeClientConfig clientConfig(String master, long heartbeatMs) {
        TubeClientConfig config = new TubeClientConfig(master);
        if (heartbeatMs > 0) {
            config.setHeartbeatPeriodMs(heartbeatMs);
            config.setHeartbeatPeriodAfterFail(HEARTBEAT_AFTER_FAIL_MS);
        }
        authenticate(config);
        return config;
    }

    /** TIDELOG_TUBE_USER and TIDELOG_TUBE_PASSWORD, when set: the client signs its master requests. */
    private static void authenticate(TubeClientConfig config) {
        String user = System.getenv("TIDELOG_TUBE_USER");
        if (user != null) {
            config.setAuthenticInfo(true, user, System.getenv("TIDELOG_TUBE_PASSWORD"));
        }
    }

    // ---------------------------------------------------------------------------------------- produce

    private static void produce(String master, String topic, long heartbeatMs) throws Throwable {
        MessageSessionFactory factory = new TubeSingleSessionFactory(clientConfig(master, heartbeatMs));
        MessageProducer producer = factory.createProducer();
        producer.publish(topic);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonObject spec = JsonParser.parseString(line).getAsJsonObject();
            Message message = new Message(topic, spec.get("body").getAsString().getBytes(StandardCharsets.UTF_8));
            String msgType = text(spec, "msgType");
            String msgTime = text(spec, "msgTime");
            if (spec.has("attributes")) {
                for (JsonElement pair : spec.getAsJsonArray("attributes")) {
                    JsonArray kv = pair.getAsJsonArray();
                    message.setAttrKeyVal(kv.get(0).getAsString(), kv.get(1).getAsString());
                }
            }
            if (msgType != null || msgTime != null) {
                message.putSystemHeader(msgType, msgTime);
            }
            MessageSentResult result = producer.sendMessage(message);
            JsonObject out = new JsonObject();
            out.addProperty("ok", result.isSuccess());
            out.addProperty("errCode", result.getErrCode());
            out.addProperty("errMsg", result.getErrMsg());
            out.addProperty("messageId", result.getMessageId());
            out.addProperty("partition", result.getPartition() == null ? -1 : result.getPartition().getPartitionId());
            out.addProperty("appendOffset", result.getAppendOffset());
            emit(out);
        }
        producer.shutdown();
        factory.shutdown();
    }

    private static String text(JsonObject spec, String name) {
        JsonElement value = spec.get(name);
        return value == null || value.isJsonNull() ? null : value.getAsString();
    }

    // ------------------------------------------------------------------------------------------ bench

    private static void bench(String master, String topic, int count, int size, int window, int warmup)
            throws Throwable {
        MessageSessionFactory factory = new TubeSingleSessionFactory(clientConfig(master, 0));
        MessageProducer producer = factory.createProducer();
        producer.publish(topic);
        byte[] body = new byte[size];
        for (int i = 0; i < size; i++) {
            body[i] = (byte) ('a' + i % 26);
        }
        Semaphore inFlight = new Semaphore(window);
        AtomicLong failed = new AtomicLong();
        sendAll(producer, topic, body, warmup, inFlight, failed);
        inFlight.acquire(window);
        inFlight.release(window);
        failed.set(0);
        long start = System.nanoTime();
        sendAll(producer, topic, body, count, inFlight, failed);
        inFlight.acquire(window);
        double seconds = (System.nanoTime() - start) / 1e9;
        JsonObject out = new JsonObject();
        out.addProperty("sent", count);
        out.addProperty("failed", failed.get());
        out.addProperty("seconds", seconds);
        emit(out);
        producer.shutdown();
        factory.shutdown();
    }

    private static void sendAll(MessageProducer producer, String topic, byte[] body, int count, Semaphore inFlight,
                                AtomicLong failed) throws Throwable {
        for (int i = 0; i < count; i++) {
            inFlight.acquire();
            producer.sendMessage(new Message(topic, body), new MessageSentCallback() {
                @Override
                public void onMessageSent(MessageSentResult result) {
                    if (!result.isSuccess()) {
                        failed.incrementAndGet();
                    }
                    inFlight.release();
                }

                @Override
                public void onException(Throwable e) {
                    failed.incrementAndGet();
                    inFlight.release();
                }
            });
        }
    }

    private static void drain(String master, String group, String topic, int count) throws Throwable {
        MessageSessionFactory factory = new TubeSingleSessionFactory(clientConfig(master, 0));
        ConsumerConfig config = new ConsumerConfig(master, group);
        authenticate(config);
        config.setConsumePosition(ConsumePosition.CONSUMER_FROM_FIRST_OFFSET);
        config.setMsgNotFoundWaitPeriodMs(10);
        PullMessageConsumer consumer = factory.createPullConsumer(config);
        consumer.subscribe(topic, null);
        consumer.completeSubscribe();
        long received = 0;
        long bytes = 0;
        long first = 0;
        while (received < count) {
            ConsumerResult result = consumer.getMessage();
            if (!result.isSuccess()) {
                continue;
            }
            if (first == 0) {
                first = System.nanoTime();
            }
            for (Message message : result.getMessageList()) {
                received++;
                bytes += message.getData().length;
            }
            consumer.confirmConsume(result.getConfirmContext(), true);
        }
        double seconds = (System.nanoTime() - first) / 1e9;
        JsonObject out = new JsonObject();
        out.addProperty("received", received);
        out.addProperty("bytes", bytes);
        out.addProperty("seconds", seconds);
        emit(out);
        consumer.shutdown();
        factory.shutdown();
    }

    // ---------------------------------------------------------------------------------------- consume

    private static void consume(boolean pull, String master, String group, String topics, long heartbeatMs,
                                String from, TreeSet<String> types) throws Throwable {
        MessageSessionFactory factory = new TubeSingleSessionFactory(clientConfig(master, heartbeatMs));
        ConsumerConfig config = new ConsumerConfig(master, group);
        authenticate(config);
        if (heartbeatMs > 0) {
            config.setHeartbeatPeriodMs(heartbeatMs);
            config.setHeartbeatPeriodAfterFail(HEARTBEAT_AFTER_FAIL_MS);
        }
        config.setConsumePosition("latest".equals(from)
                ? ConsumePosition.CONSUMER_FROM_LATEST_OFFSET : ConsumePosition.CONSUMER_FROM_FIRST_OFFSET);
        config.setPullConsumeReadyWaitPeriodMs(300);
        config.setMsgNotFoundWaitPeriodMs(100);
        config.setPullRebConfirmWaitPeriodMs(1000);
        config.setShutDownRebalanceWaitPeriodMs(3000);
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // wait for EOF
                }
            } catch (Exception e) {
                // treat as EOF
            }
            stop.set(true);
        }, "stdin-watcher");
        stdin.setDaemon(true);
        stdin.start();
        PartitionReporter reporter = new PartitionReporter();
        if (pull) {
            PullMessageConsumer consumer = factory.createPullConsumer(config);
            for (String topic : topics.split(",")) {
                consumer.subscribe(topic, types);
            }
            consumer.completeSubscribe();
            while (!stop.get()) {
                reporter.report(consumer.getCurConsumedPartitions());
                ConsumerResult result = consumer.getMessage();
                if (!result.isSuccess()) {
                    continue;
                }
                for (Message message : result.getMessageList()) {
                    emitRecord(result.getTopicName(), result.getPartitionKey(), message);
                }
                consumer.confirmConsume(result.getConfirmContext(), true);
            }
            consumer.shutdown();
        } else {
            PushMessageConsumer consumer = factory.createPushConsumer(config);
            for (String topic : topics.split(",")) {
                consumer.subscribe(topic, types, new MessageListener() {
                    @Override
                    public void receiveMessages(org.apache.inlong.tubemq.client.common.PeerInfo peerInfo,
                                                List<Message> messages) {
                        for (Message message : messages) {
                            emitRecord(message.getTopic(), peerInfo.getPartitionKey(), message);
                        }
                    }

                    @Override
                    public java.util.concurrent.Executor getExecutor() {
                        return null;
                    }

                    @Override
                    public void stop() {
                    }
                });
            }
            consumer.completeSubscribe();
            while (!stop.get()) {
                reporter.report(consumer.getCurConsumedPartitions());
                TimeUnit.MILLISECONDS.sleep(50);
            }
            consumer.shutdown();
        }
        factory.shutdown();
        JsonObject closed = new JsonObject();
        closed.addProperty("event", "closed");
        emit(closed);
    }

    private static void emitRecord(String topic, String partitionKey, Message message) {
        JsonObject out = new JsonObject();
        out.addProperty("event", "record");
        out.addProperty("topic", topic);
        out.addProperty("partition", Integer.parseInt(partitionKey.substring(partitionKey.lastIndexOf(':') + 1)));
        out.addProperty("messageId", message.getIndexId());
        out.addProperty("body", new String(message.getData(), StandardCharsets.UTF_8));
        out.addProperty("attribute", message.getAttribute());
        out.addProperty("msgType", message.getMsgType());
        out.addProperty("msgTime", message.getMsgTime());
        emit(out);
    }

    /** Prints the consumed partitions whenever they change. */
    private static final class PartitionReporter {
        private TreeSet<String> last;

        void report(Map<String, ConsumeOffsetInfo> partitions) {
            TreeSet<String> now = new TreeSet<>(partitions.keySet());
            if (now.equals(last)) {
                return;
            }
            last = now;
            JsonObject out = new JsonObject();
            out.addProperty("event", "partitions");
            JsonArray list = new JsonArray();
            List<String> keys = new ArrayList<>(now);
            for (String key : keys) {  // brokerId:topic:partitionId
                String[] parts = key.split(":");
                JsonArray pair = new JsonArray();
                pair.add(parts[1]);
                pair.add(Integer.parseInt(parts[2]));
                list.add(pair);
            }
            out.add("partitions", list);
            emit(out);
        }
    }
}
