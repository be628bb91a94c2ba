package lakeloader.jvm;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.apache.spark.sql.Row;

/**
 * What the JVM readers of a JSON format's common case share (DataWorksMessages, OmsMessages): reading an
 * envelope's fields in the shapes the format's Spark SQL parser reads them, and giving up (NotCommon) wherever a
 * message is anything else, which then takes that parser. Names an object holds twice are refused by the JSON
 * reader itself (STRICT_DUPLICATE_DETECTION).
 */
final class CommonCase {
    static final JsonFactory JSON =
            JsonFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

    /** Thrown where the message is not the common case: it takes the Spark SQL parser. */
    static final class NotCommon extends Exception {
        private static final long serialVersionUID = 1L;
        static final NotCommon INSTANCE = new NotCommon();

        private NotCommon() {
            super(null, null, false, false);
        }
    }

    /**
     * A reader's settings, which its parser passes as JSON with every row: read once per distinct text (a session
     * passes one), the last one kept.
     */
    static final class Settings<T> {
        private record Read<T>(String text, T value) {}

        private final Function<JsonNode, T> reader;
        private volatile Read<T> last;

        Settings(Function<JsonNode, T> reader) {
            this.reader = reader;
        }

        T of(String text) throws IOException {
            Read<T> current = last;
            if (current == null || !current.text().equals(text)) {
                current = new Read<>(text, reader.apply(new ObjectMapper().readTree(text)));
                last = current;
            }
            return current.value();
        }
    }

    /** The field Spark's JSON reader fills with a malformed record's text: a message naming it is left to it. */
    static final String CORRUPT_RECORD = "_corrupt_record";

    /** Epoch milliseconds of 0001-01-01 and of 9999-12-31 23:59:59.999 UTC: common.timestamp_of_millis's range. */
    static final long FIRST_MILLIS = -62_135_596_800_000L;

    static final long LAST_MILLIS = 253_402_300_799_999L;

    private static final Pattern MILLIS = Pattern.compile("-?[0-9]{1,15}");

    private CommonCase() {}

    /** Reads one message to its row (the common case), or throws NotCommon. */
    @FunctionalInterface
    interface Reading {
        Row read() throws IOException, NotCommon;
    }

    /** The row a reading gives, or NULL where the message is not the common case (or no valid JSON). */
    static Row rowOrNull(Reading reading) {
        try {
            return reading.read();
        } catch (NotCommon | IOException | RuntimeException notCommon) {
            return null;
        }
    }

    /** Reads one field of an object: its name and its value's first token (it reads or skips the value). */
    @FunctionalInterface
    interface FieldReader {
        void read(String field, JsonToken value) throws IOException, NotCommon;
    }

    /** An object (`token` its first token), each field given to `reader`. */
    static void fields(JsonParser p, JsonToken token, FieldReader reader) throws IOException, NotCommon {
        expect(token, JsonToken.START_OBJECT);
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            reader.read(field, p.nextToken());
        }
    }

    /** A message: one JSON object whose fields the reader `readerOf` gives for the parser reads, nothing after it. */
    static void readMessage(String text, Function<JsonParser, FieldReader> readerOf) throws IOException, NotCommon {
        try (JsonParser p = JSON.createParser(text)) {
            FieldReader reader = readerOf.apply(p);
            fields(p, p.nextToken(), (field, value) -> {
                if (field.equals(CORRUPT_RECORD)) {
                    throw NotCommon.INSTANCE;
                }
                reader.read(field, value);
            });
            expectEnd(p);
        }
    }

    /** A JSON object of strings as a map. */
    static Map<String, String> texts(JsonNode object) {
        Map<String, String> texts = new HashMap<>();
        object.fields().forEachRemaining(entry -> texts.put(entry.getKey(), entry.getValue().asText()));
        return texts;
    }

    /** A JSON array of strings as a list. */
    static List<String> textList(JsonNode array) {
        List<String> values = new ArrayList<>();
        array.forEach(value -> values.add(value.asText()));
        return values;
    }

    /** A JSON array of strings as the set of their lower-case forms. */
    static Set<String> lowerCaseSet(JsonNode array) {
        Set<String> values = new HashSet<>();
        array.forEach(value -> values.add(value.asText().toLowerCase(Locale.ROOT)));
        return values;
    }

    /**
     * The database part of a table's name when the message names a schema too: "database.schema", unless the schema
     * is absent or empty, equals the database ignoring case or is one of `unqualified` (lower case); as the Spark SQL
     * parsers' common.schema_qualified.
     */
    static String schemaQualified(String db, String schema, Set<String> unqualified) {
        if (db == null || schema == null || schema.isEmpty()) {
            return db;
        }
        String lower = schema.toLowerCase(Locale.ROOT);
        return lower.equals(db.toLowerCase(Locale.ROOT)) || unqualified.contains(lower) ? db : db + "." + schema;
    }

    /** A JSON object of arrays of strings as a map. */
    static Map<String, String[]> textLists(JsonNode object) {
        Map<String, String[]> lists = new HashMap<>();
        object.fields().forEachRemaining(entry -> lists.put(entry.getKey(), textList(entry.getValue()).toArray(new String[0])));
        return lists;
    }

    static void expect(JsonToken token, JsonToken expected) throws NotCommon {
        if (token != expected) {
            throw NotCommon.INSTANCE;
        }
    }

    /** Nothing may follow the message's JSON value (Spark's reader would ignore it: left to the parser). */
    static void expectEnd(JsonParser p) throws IOException, NotCommon {
        if (p.nextToken() != null) {
            throw NotCommon.INSTANCE;
        }
    }

    /** A string or number's text (NULL for null); anything else is not the common case. */
    static String scalar(JsonParser p, JsonToken token) throws IOException, NotCommon {
        return switch (token) {
            case VALUE_NULL -> null;
            case VALUE_STRING, VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> p.getText();
            default -> throw NotCommon.INSTANCE;
        };
    }

    /** An array of strings; NULL for null. */
    static List<String> strings(JsonParser p, JsonToken token) throws IOException, NotCommon {
        if (token == JsonToken.VALUE_NULL) {
            return null;
        }
        expect(token, JsonToken.START_ARRAY);
        List<String> values = new ArrayList<>();
        while (p.nextToken() == JsonToken.VALUE_STRING) {
            values.add(p.getText());
        }
        expect(p.currentToken(), JsonToken.END_ARRAY);
        return values;
    }

    /** [name, declaration] per declared column: an array of objects, their `name` and `type` strings or numbers. */
    static List<String[]> declaredColumns(JsonParser p, JsonToken token) throws IOException, NotCommon {
        expect(token, JsonToken.START_ARRAY);
        List<String[]> columns = new ArrayList<>();
        for (JsonToken element = p.nextToken(); element == JsonToken.START_OBJECT; element = p.nextToken()) {
            String[] column = new String[2];
            fields(p, element, (field, v) -> {
                String text = scalar(p, v);
                if (field.equals("name")) {
                    column[0] = text;
                } else if (field.equals("type")) {
                    column[1] = text;
                }
            });
            columns.add(column);
        }
        expect(p.currentToken(), JsonToken.END_ARRAY);
        return columns;
    }

    /** A `ddl` object without a statement (a data change's); a statement is not the common case. */
    static void noStatement(JsonParser p, JsonToken token) throws IOException, NotCommon {
        if (token == JsonToken.VALUE_NULL) {
            return;
        }
        fields(p, token, (field, value) -> {
            if (field.equals("text") && scalar(p, value) != null) {
                throw NotCommon.INSTANCE;
            }
            p.skipChildren();
        });
    }

    /**
     * An image held in a field of an object (DataWorks' `{"dataColumn": {...}}`, `{"data": {...}}`): the field's
     * image (`image`) to `to`; none for NULL or an object without that field.
     */
    static void imageIn(JsonParser p, JsonToken token, String field, Consumer<List<String[]>> to)
            throws IOException, NotCommon {
        if (token == JsonToken.VALUE_NULL) {
            return;
        }
        fields(p, token, (name, value) -> {
            if (name.equals(field)) {
                to.accept(image(p, value));
            } else {
                p.skipChildren();
            }
        });
    }

    /**
     * An object of scalars as [name, value text, token kind] in order (`entry`); NULL for null. A value that is an
     * object or an array is not the common case.
     */
    static List<String[]> image(JsonParser p, JsonToken token) throws IOException, NotCommon {
        if (token == JsonToken.VALUE_NULL) {
            return null;
        }
        List<String[]> image = new ArrayList<>();
        fields(p, token, (name, v) -> image.add(entry(p, name, v)));
        return image;
    }

    /**
     * A scalar field (`v` its token) as [name, value text, token kind] (kind: null, string, int, float, boolean);
     * an object or an array is not the common case.
     */
    static String[] entry(JsonParser p, String name, JsonToken v) throws IOException, NotCommon {
        String kind = switch (v) {
            case VALUE_NULL -> "null";
            case VALUE_STRING -> "string";
            case VALUE_NUMBER_INT -> "int";
            case VALUE_NUMBER_FLOAT -> "float";
            case VALUE_TRUE, VALUE_FALSE -> "boolean";
            default -> throw NotCommon.INSTANCE;
        };
        return new String[] {name, v == JsonToken.VALUE_NULL ? null : p.getText(), kind};
    }

    /** lakeloader.parse.framing.RESERVED_PREFIX: the loader's metadata columns' prefix, in lower case. */
    static final String RESERVED_PREFIX = "_cdc_";

    /**
     * A row's column names (declared, and its images') must be ones a table stores, as
     * lakeloader.parse.framing.name_problem decides: none empty, none with the loader's reserved prefix in any case, no two that
     * differ only by case (lower case as Spark's {@code lower} makes it: {@code toLowerCase(Locale.ROOT)}). A
     * message naming others is the Spark SQL parser's, and framing quarantines it; so the parse step's first job
     * checks no column names of the rows a reader took (tests/spark/test_parse_step_jobs.py).
     */
    static void requireStorableNames(String[] declared, Map<String, String> before, Map<String, String> after)
            throws NotCommon {
        List<Collection<String>> groups = new ArrayList<>(3);
        groups.add(Arrays.asList(declared));
        if (before != null) {
            groups.add(before.keySet());
        }
        if (after != null) {
            groups.add(after.keySet());
        }
        boolean cased = false;
        for (Collection<String> names : groups) {
            for (String name : names) {
                if (name == null || name.isEmpty()) {
                    throw NotCommon.INSTANCE;
                }
                String lower = name.toLowerCase(Locale.ROOT);
                if (lower.startsWith(RESERVED_PREFIX)) {
                    throw NotCommon.INSTANCE;
                }
                cased |= !lower.equals(name);
            }
        }
        if (!cased) {
            return; // of two names differing only by case, one is not its own lower case
        }
        Map<String, String> byLowerCase = new HashMap<>();
        for (Collection<String> names : groups) {
            for (String name : names) {
                String other = byLowerCase.putIfAbsent(name.toLowerCase(Locale.ROOT), name);
                if (other != null && !other.equals(name)) {
                    throw NotCommon.INSTANCE;
                }
            }
        }
    }

    /**
     * The epoch milliseconds of text (`^-?[0-9]+$`) that common.timestamp_of_millis reads as a time; any other text
     * is not the common case.
     */
    static long millis(String text) throws NotCommon {
        if (!MILLIS.matcher(text).matches()) {
            throw NotCommon.INSTANCE;
        }
        long millis = Long.parseLong(text);
        if (millis < FIRST_MILLIS || millis > LAST_MILLIS) {
            throw NotCommon.INSTANCE;
        }
        return millis;
    }

    /** Whether the text is what common.integer_text reads as a number: \\s*-?[0-9]{1,38}\\s* (Java's \\s). */
    static boolean isSequence(String text) {
        int start = 0;
        int end = text.length();
        while (start < end && isSpace(text.charAt(start))) {
            start++;
        }
        while (end > start && isSpace(text.charAt(end - 1))) {
            end--;
        }
        if (start < end && text.charAt(start) == '-') {
            start++;
        }
        if (end - start < 1 || end - start > 38) {
            return false;
        }
        for (int i = start; i < end; i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return true;
    }

    /**
     * common.integer_text of a sequence in its plainest spelling, -?[0-9]{1,18} between spaces (which Spark's `trim`
     * removes): a long. Anything else (other white space, more digits) is not the common case.
     */
    static long plainLong(String text) throws NotCommon {
        int start = 0;
        int end = text.length();
        while (start < end && text.charAt(start) == ' ') {
            start++;
        }
        while (end > start && text.charAt(end - 1) == ' ') {
            end--;
        }
        int first = start < end && text.charAt(start) == '-' ? start + 1 : start;
        if (end - first < 1 || end - first > 18) {
            throw NotCommon.INSTANCE;
        }
        for (int i = first; i < end; i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                throw NotCommon.INSTANCE;
            }
        }
        return Long.parseLong(text, start, end, 10);
    }

    /**
     * `coalesce(common.integer_text(text), 0)`: 0 for NULL or text that is no integer, the number where plainLong
     * reads one; an integer spelt otherwise is not the common case.
     */
    static long plainLongOrZero(String text) throws NotCommon {
        return text == null || !isSequence(text) ? 0 : plainLong(text);
    }

    private static boolean isSpace(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\u000B' || c == '\f' || c == '\r';
    }
}
