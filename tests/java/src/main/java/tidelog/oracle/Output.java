package tidelog.oracle;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** What the pytest side reads: one JSON object per line on stdout. Thread-safe. */
final class Output {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Output() {}

    static synchronized void line(Object value) {
        try {
            System.out.println(MAPPER.writeValueAsString(value));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        System.out.flush();
    }

    /** An insertion-ordered map from alternating keys and values. */
    static Map<String, Object> map(Object... keysAndValues) {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            map.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return map;
    }

    /** The exception a future or a client call failed with, without the wrappers futures add. */
    static Throwable cause(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** "SimpleClassName: message" of the unwrapped cause. */
    static String describe(Throwable t) {
        Throwable c = cause(t);
        return c.getClass().getSimpleName() + ": " + c.getMessage();
    }
}
