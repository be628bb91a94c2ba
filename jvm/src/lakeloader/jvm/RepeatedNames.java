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
 * The first name that one object of a JSON text's first value holds twice (as JSON reads names: escapes decoded),
 * or NULL when no object does, or when that value is no valid JSON (Spark's JSON reader reports that). Like
 * Spark's JSON reader, it reads the first value only: what follows it is never read.
 *
 * <p>JSON leaves a repeated name's meaning open, and Spark's JSON reader keeps one of the values of a struct's field
 * without a word and builds a map with the name twice, which any later rebuilding of the map refuses by failing
 * the whole job. lakeloader.parse.formats.common.parse_json quarantines such a message instead. Registered by
 * lakeloader.spark as the SQL function {@code lakeloader_repeated_name}.
 */
public final class RepeatedNames implements UDF1<String, String> {
    private static final long serialVersionUID = 1L;
    private static final JsonFactory JSON = new JsonFactory();

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
                    return repeated; // the first value read whole: all the JSON reader reads
                }
            }
            return null;
        } catch (IOException | RuntimeException invalid) {
            return null;
        }
    }
}
