package lakeloader.jvm;

import static lakeloader.jvm.CommonCase.fields;
import static lakeloader.jvm.CommonCase.scalar;
import static lakeloader.jvm.CommonCase.textLists;
import static lakeloader.jvm.CommonCase.texts;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import lakeloader.jvm.CommonCase.NotCommon;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The common case of a Debezium change event (DebeziumFlatten, or Debezium JSON with or without the schema
 * envelope): an insert, snapshot read, update with both images, or delete, of a table named by `source.db` and
 * `source.table` alone (no `source.schema`), whose images hold the same columns in the same order (those the schema
 * declares, when it declares any, each with a plain Kafka Connect type and no logical type), every value a string
 * or a number plainly of its column's type; parsed in one pass, or NULL for any other message: that one takes the
 * Spark SQL parser (lakeloader.parse.formats.debezium), which stays the reference for every message.
 *
 * <p>The result (lakeloader.spark's DEBEZIUM_COMMON_CASE) holds the event's fields as that parser would produce
 * them: the op as sent and canonical, the db and table, `source.ts_ms` as sent (the parser's own expression reads
 * it), the sequence (`source.ts_ms`, else the event's `ts_ms`) and the log position (`source.pos`, 0 for none,
 * after the number of its binlog `source.file`) as
 * numbers (read here as the parser's expressions read them, which match each row's texts with regular
 * expressions), the images as canonical text, the configured key and the columns with their Spark types
 * (configured, else declared, else string). A message is taken only when every check of that parser passes and
 * every value's canonical text is itself (ConfiguredImages). Anything else (a logical type, DDL, heartbeats,
 * control messages, an update without its before image, a missing image, a schema-qualified table, a time that is
 * no number of at most 18 digits plainly spelt (CommonCase.plainLong), a log position of more digits, a boolean or
 * a structure among the values, a key column missing or NULL, a repeated name, a configured type of another family)
 * returns NULL, so this class never decides a rejection.
 * tests/spark/test_format_debezium_common_case.py holds its rows equal to the Spark SQL parser's.
 *
 * <p>The second argument is the parser's settings as JSON: {"column_types": {"db.table": {"column": "spark type"}},
 * "primary_keys": {"db.table": [column]} (the source's), "data_ops": {wire op: canonical op}, "envelope": whether
 * the event may sit in `payload` beside `schema` (Debezium JSON) or is the message itself (DebeziumFlatten),
 * "plain_types": {Kafka Connect type: Spark type} (the types the function reads)}.
 */
public final class DebeziumEvents implements UDF2<String, String, Row> {
    /** debezium._log_position's pattern. */
    private static final Pattern LOG_POSITION = Pattern.compile("^(\\d{1,30})(@\\d{1,20})?$");

    /** debezium.BINLOG_NUMBER: the number a MySQL binlog file's name ends with; positions restart in each file. */
    private static final Pattern BINLOG_NUMBER = Pattern.compile("\\.(\\d{1,8})$");

    private static final long FILE_SPAN = 10_000_000_000L;

    private static final long serialVersionUID = 1L;

    private static final CommonCase.Settings<Config> SETTINGS = new CommonCase.Settings<>(DebeziumEvents::config);

    private record Config(
            Map<String, Map<String, String>> columnTypes,
            Map<String, String[]> primaryKeys,
            Map<String, String> dataOps,
            boolean envelope,
            Map<String, String> plainTypes) {}

    /** What an event holds, as read. */
    private static final class Event {
        boolean read; // whether any of the event's fields was there (an envelope's payload: whether it was sent)
        String op;
        String db;
        String schema;
        String table;
        String sourceTime;
        String position;
        String file;
        String time;
        List<String[]> before;
        List<String[]> after;
        List<String[]> declared; // the schema's columns as [name, type], NULL: none declared
    }

    /** One of a schema's structs, as read. */
    private static final class Struct {
        String name;
        List<String[]> columns;
    }

    @Override
    public Row call(String text, String settings) {
        return text == null ? null : CommonCase.rowOrNull(() -> parsed(text, SETTINGS.of(settings)));
    }

    private static Config config(JsonNode root) {
        return new Config(ConfiguredImages.tableTypes(root.path("column_types")), textLists(root.path("primary_keys")),
                texts(root.path("data_ops")), root.path("envelope").asBoolean(), texts(root.path("plain_types")));
    }

    /**
     * The Spark types of the event's columns: the schema's (a plain Kafka Connect type, as the parser's PLAIN_TYPES
     * read it; string), where a configured type wins; NULL for a column neither declares (a string). A declared
     * type of another kind, or a name declared twice, is not the common case.
     */
    private static Map<String, String> types(Event e, Config settings, Map<String, String> configured)
            throws NotCommon {
        if (e.declared == null || e.declared.isEmpty()) {
            return configured;
        }
        Map<String, String> types = new HashMap<>();
        for (String[] column : e.declared) {
            String type = column[1] == null ? null : settings.plainTypes().get(column[1]);
            if (column[0] == null || type == null || types.put(column[0], type) != null) {
                throw NotCommon.INSTANCE;
            }
        }
        types.putAll(configured);
        return types;
    }

    private static List<String> names(List<String[]> declared) {
        List<String> names = new ArrayList<>(declared.size());
        declared.forEach(column -> names.add(column[0]));
        return names;
    }

    /**
     * The event: with an envelope, `payload` when it is an object (the top-level fields are then ignored, as the
     * parser ignores them), else the top-level fields; and the columns the envelope's schema declares.
     */
    private static Event read(String text, boolean envelope) throws IOException, NotCommon {
        Event top = new Event();
        Event payload = new Event();
        CommonCase.readMessage(text, p -> (field, value) -> {
            if (envelope && field.equals("schema")) {
                top.declared = readSchema(p, value);
            } else if (envelope && field.equals("payload")) {
                if (value != JsonToken.VALUE_NULL) {
                    payload.read = true;
                    fields(p, value, (name, token) -> readField(p, name, token, payload));
                }
            } else {
                readField(p, field, value, top);
            }
        });
        if (payload.read) {
            payload.declared = top.declared;
            return payload;
        }
        return top;
    }

    /**
     * The columns a schema declares for the row images as [name, type]: the `after` struct's fields, else the
     * `before` struct's (the first struct so named; NULL: none declared). A schema of another shape is not the
     * common case.
     */
    private static List<String[]> readSchema(JsonParser p, JsonToken token) throws IOException, NotCommon {
        if (token == JsonToken.VALUE_NULL) {
            return null;
        }
        Map<String, List<String[]>> structs = new HashMap<>();
        fields(p, token, (field, value) -> {
            if (!field.equals("fields")) {
                p.skipChildren();
                return;
            }
            if (value == JsonToken.VALUE_NULL) {
                return;
            }
            CommonCase.expect(value, JsonToken.START_ARRAY);
            while (p.nextToken() != JsonToken.END_ARRAY) {
                Struct struct = new Struct();
                fields(p, p.currentToken(), (key, v) -> {
                    switch (key) {
                        case "field" -> struct.name = scalar(p, v);
                        case "fields" -> struct.columns = readColumns(p, v);
                        default -> p.skipChildren();
                    }
                });
                if (struct.name != null && !structs.containsKey(struct.name)) {
                    structs.put(struct.name, struct.columns); // the first struct so named, even without fields
                }
            }
        });
        return structs.get("after") != null ? structs.get("after") : structs.get("before");
    }

    /** A struct's fields as [name, type]; a field with a logical type name is not the common case. */
    private static List<String[]> readColumns(JsonParser p, JsonToken token) throws IOException, NotCommon {
        if (token == JsonToken.VALUE_NULL) {
            return null;
        }
        CommonCase.expect(token, JsonToken.START_ARRAY);
        List<String[]> columns = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
            String[] column = new String[2];
            fields(p, p.currentToken(), (key, v) -> {
                switch (key) {
                    case "field" -> column[0] = scalar(p, v);
                    case "type" -> column[1] = scalar(p, v);
                    case "name" -> CommonCase.expect(v, JsonToken.VALUE_NULL);
                    case "parameters" -> {
                        if (v != JsonToken.VALUE_NULL) {
                            CommonCase.expect(v, JsonToken.START_OBJECT);
                            p.skipChildren();
                        }
                    }
                    default -> p.skipChildren();
                }
            });
            columns.add(column);
        }
        return columns;
    }

    private static void readField(JsonParser p, String field, JsonToken value, Event e) throws IOException, NotCommon {
        switch (field) {
            case "op" -> e.op = scalar(p, value);
            case "before" -> e.before = CommonCase.image(p, value);
            case "after" -> e.after = CommonCase.image(p, value);
            case "ts_ms" -> e.time = scalar(p, value);
            case "source" -> readSource(p, value, e);
            default -> p.skipChildren();
        }
    }

    /** source: the fields the parser reads must be strings or numbers; the others may hold anything. */
    private static void readSource(JsonParser p, JsonToken value, Event e) throws IOException, NotCommon {
        if (value == JsonToken.VALUE_NULL) {
            return;
        }
        fields(p, value, (field, token) -> {
            switch (field) {
                case "db" -> e.db = scalar(p, token);
                case "schema" -> e.schema = scalar(p, token);
                case "table" -> e.table = scalar(p, token);
                case "ts_ms" -> e.sourceTime = scalar(p, token);
                case "pos" -> e.position = scalar(p, token);
                case "file" -> e.file = scalar(p, token);
                case "version", "connector", "name" -> scalar(p, token);
                default -> p.skipChildren();
            }
        });
    }

    private static Row parsed(String text, Config settings) throws IOException, NotCommon {
        Event e = read(text, settings.envelope());
        String op = e.op == null ? null : settings.dataOps().get(e.op);
        String time = e.sourceTime != null ? e.sourceTime : e.time;
        if (op == null || e.db == null || e.table == null || e.schema != null || time == null) {
            throw NotCommon.INSTANCE;
        }
        long seq = CommonCase.plainLong(time);
        long seq2 = logPosition(e.position, e.file);
        boolean needsAfter = op.equals("INSERT") || op.equals("UPDATE");
        boolean needsBefore = op.equals("DELETE") || op.equals("UPDATE");
        if ((needsAfter && e.after == null) || (needsBefore && e.before == null)) {
            throw NotCommon.INSTANCE; // an update without its before image is the parser's UPDATE_AFTER
        }
        String table = e.db + "." + e.table;
        Map<String, String> types = types(e, settings, settings.columnTypes().getOrDefault(table, Map.of()));
        Map<String, String> before = ConfiguredImages.canonical(e.before, types);
        Map<String, String> after = ConfiguredImages.canonical(e.after, types);
        if (before != null && after != null && !List.copyOf(before.keySet()).equals(List.copyOf(after.keySet()))) {
            throw NotCommon.INSTANCE; // the parser joins two images' different names
        }
        Map<String, String> keyed = after != null ? after : before;
        String[] key = settings.primaryKeys().get(table);
        ConfiguredImages.requireKey(key, keyed);
        String[] names = keyed.keySet().toArray(new String[0]);
        if (e.declared != null && !e.declared.isEmpty() && !names(e.declared).equals(List.of(names))) {
            throw NotCommon.INSTANCE; // an image the declarations do not name in order: the parser looks them up
        }
        CommonCase.requireStorableNames(names, before, after);
        return RowFactory.create(e.op, op, e.db, e.table, e.sourceTime, seq, seq2, before, after, key, names,
                ConfiguredImages.columnTypes(names, types));
    }

    /**
     * debezium._log_position, 0 for none: `pos` when a plain number, OMS's `<offset>@<seconds>` by its offset (the
     * same pattern, found as Spark finds it), after the number of the binlog file it is in (`mysql-bin.000004`:
     * 4 * 10^10 + offset) when `file` ends in one of at most 8 digits and the offset is below 10^10. An offset of
     * more than 18 digits is not the common case.
     */
    private static long logPosition(String position, String file) throws NotCommon {
        Matcher offset = position == null ? null : LOG_POSITION.matcher(position);
        if (offset == null || !offset.find()) {
            return 0;
        }
        long at = CommonCase.plainLong(offset.group(1));
        Matcher numbered = file == null ? null : BINLOG_NUMBER.matcher(file);
        return numbered != null && numbered.find() && at < FILE_SPAN
                ? Long.parseLong(numbered.group(1)) * FILE_SPAN + at : at;
    }
}
