package lakeloader.jvm;

import static lakeloader.jvm.CommonCase.fields;
import static lakeloader.jvm.CommonCase.scalar;
import static lakeloader.jvm.CommonCase.strings;
import static lakeloader.jvm.CommonCase.texts;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import lakeloader.jvm.CommonCase.NotCommon;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The common case of a DataWorks 2.0 JSON message (version 2.0, an insert, update or delete whose images hold exactly
 * its declared columns in order, each declared with a type whose values keep their text, every value plainly of
 * it) parsed in one pass, or NULL for any other message: that one takes the Spark SQL parser
 * (lakeloader.parse.formats.dataworks_v2), which stays the reference for every message.
 *
 * <p>The result (lakeloader.spark's DATAWORKS2_COMMON_CASE) holds the message's fields as that parser would produce
 * them: the op as sent and canonical, the names, the event time as sent (the parser's own expression reads it; it
 * must be an integer), the SCN as a number (read here as the parser's expression reads it, which matches each row's
 * text with a regular expression: one that is no integer is 0, one spelt otherwise than CommonCase.plainLong reads
 * is not the common case), the images as canonical text, the key and the declared columns with
 * their Spark types. Declarations are typed as the parser types them: a configured type wins, else the Spark type
 * the settings give the declaration (the parser resolved the batch's first declarations once and passes those whose
 * values keep their text: strings, integers, floating numbers, decimals); a declaration not among them is not the common
 * case, nor is anything else (DDL, heartbeats, control messages, another version, a partial or reordered image, a
 * repeated name, a value of another kind), so this class never decides a rejection. The names the framing refuses
 * are its to check, as for every parser's rows. tests/spark/test_format_dataworks_v2_common_case.py holds its rows
 * equal to the Spark SQL parser's.
 *
 * <p>The second argument is the parser's settings as JSON: {"column_types": {"db.table": {"column": "spark type"}}
 * (the source's), "data_ops": {wire op: canonical op}, "version", "declared_types": {"plain": {declaration: spark
 * type}, "oracle": {...}} (by the source's dbType: one holding ORACLE reads declarations in their Oracle meaning),
 * "unqualified_schemas": [...] (the schemas that do not qualify the database in a table's name)}.
 */
public final class DataWorks2Messages implements UDF2<String, String, Row> {
    private static final long serialVersionUID = 1L;

    private static final CommonCase.Settings<Config> SETTINGS = new CommonCase.Settings<>(DataWorks2Messages::config);

    /** An event time the parser's try_cast to bigint reads as sent. */
    private static final Pattern MILLIS = Pattern.compile("-?[0-9]{1,18}");

    private record Config(
            Map<String, Map<String, String>> columnTypes,
            Map<String, String> dataOps,
            String version,
            Map<String, String> plainTypes,
            Map<String, String> oracleTypes,
            Set<String> unqualified) {}

    /** What the envelope holds, as read. */
    private static final class Message {
        String version;
        String op;
        String dbType;
        String db;
        String schemaName;
        String table;
        String eventTime;
        String scn;
        List<String[]> declared;
        List<String> primaryKey;
        List<String[]> before;
        List<String[]> after;
    }

    @Override
    public Row call(String text, String settings) {
        return text == null ? null : CommonCase.rowOrNull(() -> parsed(read(text), SETTINGS.of(settings)));
    }

    private static Config config(JsonNode root) {
        JsonNode declared = root.path("declared_types");
        return new Config(ConfiguredImages.tableTypes(root.path("column_types")), texts(root.path("data_ops")),
                root.path("version").asText(), texts(declared.path("plain")), texts(declared.path("oracle")),
                CommonCase.lowerCaseSet(root.path("unqualified_schemas")));
    }

    // ---------------------------------------------------------------------------------------------------------
    // Reading the envelope: every field the Spark SQL parser reads must have the shape its schema gives it
    // ---------------------------------------------------------------------------------------------------------

    private static Message read(String text) throws IOException, NotCommon {
        Message m = new Message();
        CommonCase.readMessage(text, p -> (field, value) -> {
            switch (field) {
                case "version" -> m.version = scalar(p, value);
                case "schema" -> readSchema(p, value, m);
                case "payload" -> readPayload(p, value, m);
                default -> p.skipChildren();
            }
        });
        return m;
    }

    private static void readSchema(JsonParser p, JsonToken value, Message m) throws IOException, NotCommon {
        fields(p, value, (field, token) -> {
            switch (field) {
                case "column" -> m.declared = CommonCase.declaredColumns(p, token);
                case "pk" -> m.primaryKey = strings(p, token);
                case "source" -> fields(p, token, (name, v) -> {
                    String text = scalar(p, v);
                    switch (name) {
                        case "dbType" -> m.dbType = text;
                        case "dbName" -> m.db = text;
                        case "schema" -> m.schemaName = text;
                        case "table" -> m.table = text;
                        default -> { }
                    }
                });
                default -> p.skipChildren();
            }
        });
    }

    private static void readPayload(JsonParser p, JsonToken value, Message m) throws IOException, NotCommon {
        fields(p, value, (field, token) -> {
            switch (field) {
                case "before" -> CommonCase.imageIn(p, token, "data", image -> m.before = image);
                case "after" -> CommonCase.imageIn(p, token, "data", image -> m.after = image);
                case "op" -> m.op = scalar(p, token);
                case "scn" -> m.scn = scalar(p, token);
                case "timestamp" -> fields(p, token, (name, v) -> {
                    String text = scalar(p, v);
                    if (name.equals("eventTime")) {
                        m.eventTime = text;
                    }
                });
                case "ddl" -> CommonCase.noStatement(p, token);
                default -> p.skipChildren();
            }
        });
    }

    // ---------------------------------------------------------------------------------------------------------
    // The parser's checks and conversions, for the common case only
    // ---------------------------------------------------------------------------------------------------------

    private static Row parsed(Message m, Config settings) throws NotCommon {
        String op = m.op == null ? null : settings.dataOps().get(m.op);
        if (op == null || !settings.version().equals(m.version) || m.db == null || m.table == null) {
            throw NotCommon.INSTANCE;
        }
        if (m.declared == null || m.eventTime == null || !MILLIS.matcher(m.eventTime).matches()) {
            throw NotCommon.INSTANCE;
        }
        boolean needsAfter = op.equals("INSERT") || op.equals("UPDATE");
        boolean needsBefore = op.equals("DELETE") || op.equals("UPDATE");
        if ((needsAfter && m.after == null) || (needsBefore && m.before == null)) {
            throw NotCommon.INSTANCE;
        }
        String db = CommonCase.schemaQualified(m.db, m.schemaName, settings.unqualified());
        String[] names = new String[m.declared.size()];
        Map<String, String> types = declaredTypes(m, db, names, settings);
        Map<String, String> before = aligned(ConfiguredImages.canonical(m.before, types), names);
        Map<String, String> after = aligned(ConfiguredImages.canonical(m.after, types), names);
        String[] key = m.primaryKey == null || m.primaryKey.isEmpty() ? null : m.primaryKey.toArray(new String[0]);
        ConfiguredImages.requireKey(key, after != null ? after : before);
        CommonCase.requireStorableNames(names, before, after);
        long scn = CommonCase.plainLongOrZero(m.scn);
        return RowFactory.create(m.op, op, db, m.schemaName, m.table, m.eventTime, scn, before, after, key, names,
                ConfiguredImages.columnTypes(names, types));
    }

    /**
     * The declared columns' names (into `names`) and Spark types: configured, else the settings' type of the
     * declaration. A nameless or repeated column, or a declaration the settings do not give, is not the common case.
     */
    private static Map<String, String> declaredTypes(Message m, String db, String[] names, Config settings)
            throws NotCommon {
        Map<String, String> configured = settings.columnTypes().getOrDefault(db + "." + m.table, Map.of());
        boolean oracle = m.dbType != null && m.dbType.toUpperCase(Locale.ROOT).contains("ORACLE");
        Map<String, String> known = oracle ? settings.oracleTypes() : settings.plainTypes();
        Map<String, String> types = new HashMap<>(names.length * 2);
        for (int i = 0; i < names.length; i++) {
            String[] column = m.declared.get(i);
            String type = configured.get(column[0]);
            if (type == null && column[1] != null) {
                type = known.get(column[1]);
            }
            if (column[0] == null || type == null || types.put(column[0], type) != null) {
                throw NotCommon.INSTANCE;
            }
            names[i] = column[0];
        }
        return types;
    }

    /** The image when it holds exactly the declared columns in their order (NULL for none); else not common. */
    private static Map<String, String> aligned(Map<String, String> image, String[] names) throws NotCommon {
        if (image != null && !List.of(names).equals(List.copyOf(image.keySet()))) {
            throw NotCommon.INSTANCE;
        }
        return image;
    }
}
