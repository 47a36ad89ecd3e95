package tidelog.oracle;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * Named steps of a scenario, each recorded as {"ok": what it returned} or {"error": the exception's
 * simple class name, "message": ...}; a failed step does not stop the next ones. Not thread-safe.
 */
final class Steps {
    private final Map<String, Object> results = new LinkedHashMap<>();

    void run(String name, Callable<Object> call) {
        try {
            results.put(name, Output.map("ok", call.call()));
        } catch (Exception e) {
            Throwable c = Output.cause(e);
            results.put(name, Output.map("error", c.getClass().getSimpleName(), "message", String.valueOf(c.getMessage())));
        }
    }

    Map<String, Object> results() {
        return results;
    }
}
