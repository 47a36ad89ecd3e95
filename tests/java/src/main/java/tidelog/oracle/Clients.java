package tidelog.oracle;

import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs client scenarios against one broker in one JVM and prints one JSON line per scenario:
 * {"scenario": name, "result": ...} or {"scenario": name, "error": "...", "trace": "..."}.
 *
 * <pre>java -cp ... tidelog.oracle.Clients BOOTSTRAP PREFIX SCENARIO...</pre>
 *
 * Scenario S names its topics and groups "PREFIX-S-...", so scenarios never see each other's. Scenarios: produce-consume,
 * idempotence, group-classic, group-consumer, admin, produce-edges, fetch-edges, transactions, txn-cycles, share-queue,
 * share-dlq. Each gets {@value #SCENARIO_TIMEOUT_S} s.
 */
public final class Clients {
    static final long SCENARIO_TIMEOUT_S = 150;
    static final List<String> SCENARIOS =
            List.of("produce-consume", "idempotence", "group-classic", "group-consumer", "admin", "produce-edges",
                    "fetch-edges", "transactions", "txn-cycles", "share-queue", "share-dlq");

    private Clients() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: Clients BOOTSTRAP PREFIX SCENARIO... (scenarios: " + SCENARIOS + ")");
            System.exit(2);
        }
        String bootstrap = args[0];
        String prefix = args[1];
        ExecutorService executor = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "scenario");
            t.setDaemon(true);
            return t;
        });
        for (int i = 2; i < args.length; i++) {
            String name = args[i];
            Future<Object> future = executor.submit(() -> scenario(name, bootstrap, prefix));
            try {
                Output.line(Output.map("scenario", name, "result", future.get(SCENARIO_TIMEOUT_S, TimeUnit.SECONDS)));
            } catch (TimeoutException e) {
                future.cancel(true);
                Output.line(Output.map("scenario", name, "error", "timed out after " + SCENARIO_TIMEOUT_S + " s"));
            } catch (Exception e) {
                Throwable c = Output.cause(e);
                java.io.StringWriter trace = new java.io.StringWriter();
                c.printStackTrace(new java.io.PrintWriter(trace));
                Output.line(Output.map("scenario", name, "error", Output.describe(c), "trace", trace.toString()));
            }
        }
        System.exit(0);
    }

    private static Object scenario(String name, String bootstrap, String runPrefix) throws Exception {
        String prefix = runPrefix + "-" + name;
        switch (name) {
            case "produce-consume":
                return ProduceConsume.run(bootstrap, prefix);
            case "idempotence":
                return Idempotence.run(bootstrap, prefix);
            case "group-classic":
                return GroupScenario.run(bootstrap, prefix, "classic");
            case "group-consumer":
                return GroupScenario.run(bootstrap, prefix, "consumer");
            case "admin":
                return AdminScenario.run(bootstrap, prefix);
            case "produce-edges":
                return ProduceEdges.run(bootstrap, prefix);
            case "fetch-edges":
                return FetchEdges.run(bootstrap, prefix);
            case "transactions":
                return Transactions.run(bootstrap, prefix);
            case "txn-cycles":
                return TxnCycles.run(bootstrap, prefix);
            case "share-queue":
                return ShareQueue.run(bootstrap, prefix);
            case "share-dlq":
                return ShareDeadLetter.run(bootstrap, prefix);
            default:
                throw new IllegalArgumentException("unknown scenario " + name + " (known: " + SCENARIOS + ")");
        }
    }
}
