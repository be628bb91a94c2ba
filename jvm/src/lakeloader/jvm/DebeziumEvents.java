package lakeloader.jvm;

import static lakeloader.jvm.CommonCase.fields;
import static lakeloader.jvm.CommonCase.scalar;
import static lakeloader.jvm.CommonCase.textLists;
import static lakeloader.jvm.CommonCase.texts;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import lakeloader.jvm.CommonCase.NotCommon;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The common case of a Debezium change event that declares no types (DebeziumFlatten, or Debezium JSON written
 * without the schema envelope or with a null one): an insert, snapshot read, update with both images, or delete,
 * of a table named by `source.db` and `source.table` alone (no `source.schema`), whose images hold the same columns
 * in the same order, every value a string or a number plainly of its column's type; parsed in one pass, or NULL
 * for any other message: that one takes the Spark SQL parser (lakeloader.parse.formats.debezium), which stays the
 * reference for every message.
 *
 * <p>The result (lakeloader.spark's DEBEZIUM_COMMON_CASE) holds the event's fields as that parser would produce
 * them: the op as sent and canonical, the db and table, `source.ts_ms`, the event's `ts_ms` and `source.pos` as
 * sent (the parser's own expressions read them), the images as canonical text, the configured key and the columns
 * with their Spark types (configured, else string). A message is taken only when every check of that parser passes
 * and every value's canonical text is itself (ConfiguredImages). Anything else (a schema envelope, DDL, heartbeats,
 * control messages, an update without its before image, a missing image, a schema-qualified table, a time that is
 * no number, a boolean or a structure among the values, a key column missing or NULL, a repeated name, a
 * configured type of another family) returns NULL, so this class never decides a rejection.
 * tests/spark/test_format_debezium_common_case.py holds its rows equal to the Spark SQL parser's.
 *
 * <p>The second argument is the parser's settings as JSON: {"column_types": {"db.table": {"column": "spark type"}},
 * "primary_keys": {"db.table": [column]} (the source's), "data_ops": {wire op: canonical op}, "envelope": whether
 * the event may sit in `payload` beside `schema` (Debezium JSON) or is the message itself (DebeziumFlatten)}.
 */
public final class DebeziumEvents implements UDF2<String, String, Row> {
    private static final long serialVersionUID = 1L;

    private static final CommonCase.Settings<Config> SETTINGS = new CommonCase.Settings<>(DebeziumEvents::config);

    private record Config(
            Map<String, Map<String, String>> columnTypes,
            Map<String, String[]> primaryKeys,
            Map<String, String> dataOps,
            boolean envelope) {}

    /** What an event holds, as read. */
    private static final class Event {
        boolean read; // whether any of the event's fields was there (an envelope's payload: whether it was sent)
        String op;
        String db;
        String schema;
        String table;
        String sourceTime;
        String position;
        String time;
        List<String[]> before;
        List<String[]> after;
    }

    @Override
    public Row call(String text, String settings) {
        return text == null ? null : CommonCase.rowOrNull(() -> parsed(text, SETTINGS.of(settings)));
    }

    private static Config config(JsonNode root) {
        return new Config(ConfiguredImages.tableTypes(root.path("column_types")), textLists(root.path("primary_keys")),
                texts(root.path("data_ops")), root.path("envelope").asBoolean());
    }

    /**
     * The event: with an envelope, `payload` when it is an object (the top-level fields are then ignored, as the
     * parser ignores them), else the top-level fields; a schema is not the common case.
     */
    private static Event read(String text, boolean envelope) throws IOException, NotCommon {
        Event top = new Event();
        Event payload = new Event();
        CommonCase.readMessage(text, p -> (field, value) -> {
            if (envelope && field.equals("schema")) {
                CommonCase.expect(value, JsonToken.VALUE_NULL);
            } else if (envelope && field.equals("payload")) {
                if (value != JsonToken.VALUE_NULL) {
                    payload.read = true;
                    fields(p, value, (name, token) -> readField(p, name, token, payload));
                }
            } else {
                readField(p, field, value, top);
            }
        });
        return payload.read ? payload : top;
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
                case "version", "connector", "name", "file" -> scalar(p, token);
                default -> p.skipChildren();
            }
        });
    }

    private static Row parsed(String text, Config settings) throws IOException, NotCommon {
        Event e = read(text, settings.envelope());
        String op = e.op == null ? null : settings.dataOps().get(e.op);
        String time = e.sourceTime != null ? e.sourceTime : e.time;
        if (op == null || e.db == null || e.table == null || e.schema != null || time == null
                || !CommonCase.isSequence(time)) {
            throw NotCommon.INSTANCE;
        }
        boolean needsAfter = op.equals("INSERT") || op.equals("UPDATE");
        boolean needsBefore = op.equals("DELETE") || op.equals("UPDATE");
        if ((needsAfter && e.after == null) || (needsBefore && e.before == null)) {
            throw NotCommon.INSTANCE; // an update without its before image is the parser's UPDATE_AFTER
        }
        String table = e.db + "." + e.table;
        Map<String, String> types = settings.columnTypes().getOrDefault(table, Map.of());
        Map<String, String> before = ConfiguredImages.canonical(e.before, types);
        Map<String, String> after = ConfiguredImages.canonical(e.after, types);
        if (before != null && after != null && !List.copyOf(before.keySet()).equals(List.copyOf(after.keySet()))) {
            throw NotCommon.INSTANCE; // the parser joins two images' different names
        }
        Map<String, String> keyed = after != null ? after : before;
        String[] key = settings.primaryKeys().get(table);
        ConfiguredImages.requireKey(key, keyed);
        String[] names = keyed.keySet().toArray(new String[0]);
        return RowFactory.create(e.op, op, e.db, e.table, e.sourceTime, e.time, e.position, before, after, key, names,
                ConfiguredImages.columnTypes(names, types));
    }
}
