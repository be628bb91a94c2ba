package lakeloader.jvm;

import static lakeloader.jvm.CommonCase.fields;
import static lakeloader.jvm.CommonCase.scalar;
import static lakeloader.jvm.CommonCase.textLists;
import static lakeloader.jvm.CommonCase.texts;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import lakeloader.jvm.CommonCase.NotCommon;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The common case of a SharePlex JSON message (an insert, update or delete of a table named 'db.table', every value
 * a string or a number plainly of its column's type) parsed in one pass, or NULL for any other message: that one
 * takes the Spark SQL parser (lakeloader.parse.formats.shareplex), which stays the reference for every message.
 *
 * <p>The result (lakeloader.spark's SHAREPLEX_COMMON_CASE) holds the message's fields as that parser would produce
 * them: the op as sent and canonical, the db and table, `meta.scn` and `meta.seq` as numbers (0 without a seq; read
 * here, where the parser's expressions match each row's texts with a regular expression), `meta.time` as sent (the
 * parser's own expression reads it), the images as canonical text (an update's before image is `key`, its after
 * image `key` with `data` laid over it, which is partial), the configured key and the columns with their Spark
 * types. A message is taken only when every check of that parser passes and every value's canonical text is itself
 * (ConfiguredImages). Anything else (DDL, an op of other letters, a table name that is no 'db.table' on one line,
 * no data, a `sql` object beside data, a scn or seq that is not a number of at most 18 digits plainly spelt
 * (CommonCase.plainLong), a boolean or a structure among the values, a key column missing or NULL, a repeated name,
 * a configured type of another family) returns NULL, so this class never decides a rejection.
 * tests/spark/test_format_shareplex_common_case.py holds its rows equal to the Spark SQL parser's.
 *
 * <p>The second argument is the parser's settings as JSON: {"column_types": {"db.table": {"column": "spark type"}},
 * "primary_keys": {"db.table": [column]} (the source's), "data_ops": {wire op, upper case: canonical op}}.
 */
public final class SharePlexMessages implements UDF2<String, String, Row> {
    private static final long serialVersionUID = 1L;

    private static final CommonCase.Settings<Config> SETTINGS = new CommonCase.Settings<>(SharePlexMessages::config);

    private record Config(
            Map<String, Map<String, String>> columnTypes,
            Map<String, String[]> primaryKeys,
            Map<String, String> dataOps) {}

    /** What the message holds, as read. */
    private static final class Message {
        String op;
        String table;
        String scn;
        String seq;
        String time;
        List<String[]> data;
        List<String[]> key;
        boolean sql;
    }

    @Override
    public Row call(String text, String settings) {
        return text == null ? null : CommonCase.rowOrNull(() -> parsed(read(text), SETTINGS.of(settings)));
    }

    private static Config config(JsonNode root) {
        return new Config(ConfiguredImages.tableTypes(root.path("column_types")), textLists(root.path("primary_keys")),
                texts(root.path("data_ops")));
    }

    private static Message read(String text) throws IOException, NotCommon {
        Message m = new Message();
        CommonCase.readMessage(text, p -> (field, value) -> {
            switch (field) {
                case "meta" -> readMeta(p, value, m);
                case "data" -> m.data = CommonCase.image(p, value);
                case "key" -> m.key = CommonCase.image(p, value);
                case "sql" -> {
                    m.sql = value != JsonToken.VALUE_NULL;
                    p.skipChildren();
                }
                default -> p.skipChildren();
            }
        });
        return m;
    }

    /** meta: the fields the parser reads must be strings or numbers; the others may hold anything. */
    private static void readMeta(JsonParser p, JsonToken value, Message m) throws IOException, NotCommon {
        if (value == JsonToken.VALUE_NULL) {
            return;
        }
        fields(p, value, (field, token) -> {
            switch (field) {
                case "op" -> m.op = scalar(p, token);
                case "table" -> m.table = scalar(p, token);
                case "scn" -> m.scn = scalar(p, token);
                case "seq" -> m.seq = scalar(p, token);
                case "time" -> m.time = scalar(p, token);
                default -> p.skipChildren();
            }
        });
    }

    private static Row parsed(Message m, Config settings) throws NotCommon {
        String op = canonicalOp(m, settings.dataOps());
        int dot = m.table == null ? -1 : m.table.indexOf('.');
        if (op == null || dot < 1 || dot == m.table.length() - 1 || !onOneLine(m.table) || m.sql
                || m.data == null || m.data.isEmpty() || m.scn == null) {
            throw NotCommon.INSTANCE;
        }
        long scn = CommonCase.plainLong(m.scn);
        long seq = m.seq == null ? 0 : CommonCase.plainLong(m.seq);
        String db = m.table.substring(0, dot);
        String table = m.table.substring(dot + 1);
        Map<String, String> types = settings.columnTypes().getOrDefault(m.table, Map.of());
        Map<String, String> data = ConfiguredImages.canonical(m.data, types);
        Map<String, String> before = switch (op) {
            case "DELETE", "UPDATE_BEFORE" -> data;
            case "UPDATE" -> ConfiguredImages.canonical(m.key, types);
            default -> null;
        };
        Map<String, String> after = switch (op) {
            case "INSERT" -> data;
            case "UPDATE", "UPDATE_AFTER" -> overlay(ConfiguredImages.canonical(m.key, types), data);
            default -> null;
        };
        Map<String, String> keyed = after != null ? after : before;
        String[] key = settings.primaryKeys().get(m.table);
        ConfiguredImages.requireKey(key, keyed);
        String[] names = keyed.keySet().toArray(new String[0]);
        boolean partial = op.equals("UPDATE") || op.equals("UPDATE_AFTER");
        CommonCase.requireStorableNames(names, before, after);
        return RowFactory.create(m.op, op, db, table, scn, seq, m.time, before, after, partial, key, names,
                ConfiguredImages.columnTypes(names, types));
    }

    /**
     * The canonical op of meta.op, trimmed of spaces and in upper case (an op of other than ASCII letters and spaces
     * is left to the parser); an update without `key` is its after-half.
     */
    private static String canonicalOp(Message m, Map<String, String> dataOps) {
        if (m.op == null || !m.op.chars().allMatch(c -> c == ' ' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) {
            return null;
        }
        String op = dataOps.get(m.op.strip().toUpperCase(Locale.ROOT));
        return op != null && op.equals("UPDATE") && m.key == null ? "UPDATE_AFTER" : op;
    }

    /** The parser's 'db.table' pattern reads the table up to a line terminator: such names are left to it. */
    private static boolean onOneLine(String name) {
        return name.chars().noneMatch(c -> c == '\n' || c == '\r' || c == '\u0085' || c == '\u2028' || c == '\u2029');
    }

    /** An image (`base`; NULL counts as empty) with the values of `changes` laid over it (common.overlay). */
    private static Map<String, String> overlay(Map<String, String> base, Map<String, String> changes) {
        Map<String, String> overlaid = new LinkedHashMap<>();
        if (base != null) {
            base.forEach((name, value) -> {
                if (!changes.containsKey(name)) {
                    overlaid.put(name, value);
                }
            });
        }
        overlaid.putAll(changes);
        return overlaid;
    }
}
