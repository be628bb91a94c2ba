package lakeloader.jvm;

import static lakeloader.jvm.CommonCase.expect;
import static lakeloader.jvm.CommonCase.scalar;
import static lakeloader.jvm.CommonCase.strings;
import static lakeloader.jvm.CommonCase.texts;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import lakeloader.jvm.CommonCase.NotCommon;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The common case of a Canal JSON message (an INSERT, INIT, UPDATE or DELETE of one row whose columns are exactly
 * those `mysqlType` declares, in its order, each declared with a type whose values keep their text, every value
 * plainly of it; an UPDATE's `old` one entry of some of those columns) parsed in one pass, or NULL for any other
 * message: that one takes the Spark SQL parser (lakeloader.parse.formats.canal), which stays the reference for
 * every message. Images as DTS tasks created before 2022-03-20 swap them are not read here (the parser does not
 * call this class for such a source).
 *
 * <p>The result (lakeloader.spark's CANAL_COMMON_CASE) holds the message's fields as that parser would produce them:
 * the op as sent and canonical, the names, `es` and `id` as numbers (read here as the parser's expressions read
 * them, which match each row's texts with regular expressions: `es` must be an integer of at most 18 digits plainly
 * spelt, CommonCase.plainLong, an `id` that is no integer is 0 and one spelt otherwise not the common case), the
 * images as canonical text (an UPDATE's before image is its row with `old` laid over it, as
 * `common.overlay` lays it), the key and the declared columns with their Spark types. Declarations are typed as
 * the parser types them: a configured type wins, else the Spark type the settings give the declaration (the parser
 * resolved the batch's first declarations once and passes those whose values keep their text: strings, integers,
 * floating numbers, decimals); a declaration not among them is not the common case, nor is anything else (DDL, several rows,
 * a key named in another case, a value of another kind), so this class never decides a rejection. The names the
 * framing refuses are its to check, as for every parser's rows. tests/spark/test_format_canal_common_case.py holds
 * its rows equal to the Spark SQL parser's.
 *
 * <p>The second argument is the parser's settings as JSON: {"column_types": {"db.table": {"column": "spark type"}}
 * (the source's), "data_ops": {wire op: canonical op}, "declared_types": {"plain": {declaration: spark type}}}.
 */
public final class CanalMessages implements UDF2<String, String, Row> {
    private static final long serialVersionUID = 1L;

    private static final CommonCase.Settings<Config> SETTINGS = new CommonCase.Settings<>(CanalMessages::config);

    private record Config(
            Map<String, Map<String, String>> columnTypes, Map<String, String> dataOps, Map<String, String> types) {}

    /** What the envelope holds, as read. */
    private static final class Message {
        String op;
        boolean ddl;
        String db;
        String table;
        String es;
        String id;
        List<String> primaryKey;
        List<String[]> declared;
        List<List<String[]>> data;
        List<List<String[]>> old;
    }

    @Override
    public Row call(String text, String settings) {
        return text == null ? null : CommonCase.rowOrNull(() -> parsed(read(text), SETTINGS.of(settings)));
    }

    private static Config config(JsonNode root) {
        return new Config(ConfiguredImages.tableTypes(root.path("column_types")), texts(root.path("data_ops")),
                texts(root.path("declared_types").path("plain")));
    }

    // ---------------------------------------------------------------------------------------------------------
    // Reading the envelope: every field the Spark SQL parser reads must have the shape its schema gives it
    // ---------------------------------------------------------------------------------------------------------

    private static Message read(String text) throws IOException, NotCommon {
        Message m = new Message();
        CommonCase.readMessage(text, p -> (field, value) -> {
            switch (field) {
                case "database" -> m.db = scalar(p, value);
                case "table" -> m.table = scalar(p, value);
                case "type" -> m.op = scalar(p, value);
                case "isDdl" -> m.ddl = isTrue(CommonCase.entry(p, field, value));
                case "es" -> m.es = scalar(p, value);
                case "id" -> m.id = scalar(p, value);
                case "pkNames" -> m.primaryKey = strings(p, value);
                case "mysqlType" -> m.declared = CommonCase.image(p, value);
                case "data" -> m.data = rows(p, value);
                case "old" -> m.old = rows(p, value);
                default -> p.skipChildren();
            }
        });
        return m;
    }

    /** Whether an `isDdl` value reads as true (the parser lowers its text). */
    private static boolean isTrue(String[] entry) {
        return entry[1] != null && entry[1].toLowerCase(Locale.ROOT).equals("true");
    }

    /** An array of row objects (`CommonCase.image` each); NULL for null; a NULL element is not the common case. */
    private static List<List<String[]>> rows(JsonParser p, JsonToken token) throws IOException, NotCommon {
        if (token == JsonToken.VALUE_NULL) {
            return null;
        }
        expect(token, JsonToken.START_ARRAY);
        List<List<String[]>> rows = new ArrayList<>();
        for (JsonToken element = p.nextToken(); element == JsonToken.START_OBJECT; element = p.nextToken()) {
            rows.add(CommonCase.image(p, element));
        }
        expect(p.currentToken(), JsonToken.END_ARRAY);
        return rows;
    }

    // ---------------------------------------------------------------------------------------------------------
    // The parser's checks and conversions, for the common case only
    // ---------------------------------------------------------------------------------------------------------

    private static Row parsed(Message m, Config settings) throws NotCommon {
        String op = m.op == null ? null : settings.dataOps().get(m.op);
        if (op == null || m.ddl || m.db == null || m.table == null || m.declared == null) {
            throw NotCommon.INSTANCE;
        }
        if (m.es == null || m.data == null || m.data.size() != 1) {
            throw NotCommon.INSTANCE;
        }
        long es = CommonCase.plainLong(m.es);
        long id = CommonCase.plainLongOrZero(m.id);
        List<String[]> row = m.data.get(0);
        String[] names = declaredNames(m.declared, row);
        Map<String, String> types = declaredTypes(m, names, settings);
        Map<String, String> before = null;
        Map<String, String> after = null;
        switch (m.op) {
            case "DELETE" -> before = ConfiguredImages.canonical(row, types);
            case "UPDATE" -> {
                if (m.old == null || m.old.size() != 1) {
                    throw NotCommon.INSTANCE;
                }
                before = ConfiguredImages.canonical(overlay(row, m.old.get(0)), types);
                after = ConfiguredImages.canonical(row, types);
            }
            default -> after = ConfiguredImages.canonical(row, types);
        }
        if (m.old != null) { // the parser's names include the columns `old` names, also outside an UPDATE
            for (List<String[]> values : m.old) {
                requireDeclared(values, names);
            }
        }
        String[] key = m.primaryKey == null || m.primaryKey.isEmpty() ? null : m.primaryKey.toArray(new String[0]);
        ConfiguredImages.requireKey(key, after != null ? after : before);
        CommonCase.requireStorableNames(names, before, after);
        return RowFactory.create(m.op, op, m.db, m.table, es, id, before, after, key, names,
                ConfiguredImages.columnTypes(names, types));
    }

    /** The declared names, which the row must hold in their order; a declaration must be a string. */
    private static String[] declaredNames(List<String[]> declared, List<String[]> row) throws NotCommon {
        if (declared.size() != row.size()) {
            throw NotCommon.INSTANCE;
        }
        String[] names = new String[declared.size()];
        for (int i = 0; i < names.length; i++) {
            String[] declaration = declared.get(i);
            if (!declaration[2].equals("string") || !declaration[0].equals(row.get(i)[0])) {
                throw NotCommon.INSTANCE;
            }
            names[i] = declaration[0];
        }
        return names;
    }

    /** The declared columns' Spark types: configured, else the settings' type of the declaration. */
    private static Map<String, String> declaredTypes(Message m, String[] names, Config settings) throws NotCommon {
        Map<String, String> configured = settings.columnTypes().getOrDefault(m.db + "." + m.table, Map.of());
        Map<String, String> types = new HashMap<>(names.length * 2);
        for (int i = 0; i < names.length; i++) {
            String type = configured.get(names[i]);
            if (type == null) {
                type = settings.types().get(m.declared.get(i)[1]);
            }
            if (type == null) {
                throw NotCommon.INSTANCE;
            }
            types.put(names[i], type);
        }
        return types;
    }

    /** Values (`old`'s) must be of declared columns, else the parser's names differ from the declared ones. */
    private static void requireDeclared(List<String[]> values, String[] names) throws NotCommon {
        Set<String> declared = new HashSet<>(List.of(names));
        for (String[] value : values) {
            if (!declared.contains(value[0])) {
                throw NotCommon.INSTANCE;
            }
        }
    }

    /** `common.overlay` of the row and its `old` values: the row's columns `old` does not name, then `old`'s. */
    private static List<String[]> overlay(List<String[]> row, List<String[]> old) {
        Set<String> changed = new HashSet<>();
        for (String[] value : old) {
            changed.add(value[0]);
        }
        List<String[]> merged = new ArrayList<>(row.size());
        for (String[] value : row) {
            if (!changed.contains(value[0])) {
                merged.add(value);
            }
        }
        merged.addAll(old);
        return merged;
    }
}
