package lakeloader.jvm;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.Set;
import org.apache.spark.sql.api.java.UDF1;

/**
 * Why a JSON text is no single message though Spark's JSON reader would read one from it, or NULL: a name one object
 * holds twice (as JSON reads names: escapes decoded), or text after its first value (which the reader never reads:
 * `{...}{...}` would lose the second message). NULL too when the first value is no valid JSON (the reader reports
 * that).
 *
 * <p>JSON leaves a repeated name's meaning open, and Spark's JSON reader keeps one of the values of a struct's field
 * without a word and builds a map with the name twice, which any later rebuilding of the map refuses by failing
 * the whole job. lakeloader.parse.formats.common.parse_json quarantines such a message instead, with this reason.
 * Registered by lakeloader.spark as the SQL function {@code lakeloader_json_problem}.
 */
public final class JsonProblems implements UDF1<String, String> {
    private static final long serialVersionUID = 1L;
    private static final JsonFactory JSON = new JsonFactory();

    /** The reason for a name held twice, followed by the name in quotes. */
    public static final String REPEATED_NAME = "ambiguous JSON: an object holds a name twice: ";

    public static final String TEXT_AFTER = "malformed JSON: more text after the message's JSON value";

    @Override
    public String call(String text) {
        if (text == null) {
            return null;
        }
        String repeated = null;
        try (JsonParser p = JSON.createParser(text)) {
            Deque<Set<String>> objects = new ArrayDeque<>();
            for (JsonToken token = p.nextToken(); token != null; token = p.nextToken()) {
                switch (token) {
                    case START_OBJECT -> objects.push(new HashSet<>());
                    case END_OBJECT -> objects.pop();
                    case FIELD_NAME -> {
                        if (!objects.peek().add(p.currentName()) && repeated == null) {
                            repeated = p.currentName();
                        }
                    }
                    default -> { }
                }
                boolean opens = token == JsonToken.START_OBJECT || token == JsonToken.START_ARRAY;
                if (!opens && p.getParsingContext().inRoot()) {
                    return repeated != null ? REPEATED_NAME + '"' + repeated + '"' : textAfter(p);
                }
            }
            return null;
        } catch (IOException | RuntimeException invalid) {
            return null;
        }
    }

    /** TEXT_AFTER when anything but white space follows the value the parser has read whole, else NULL. */
    private static String textAfter(JsonParser p) {
        try {
            return p.nextToken() == null ? null : TEXT_AFTER;
        } catch (IOException | RuntimeException invalid) {
            return TEXT_AFTER;
        }
    }
}
