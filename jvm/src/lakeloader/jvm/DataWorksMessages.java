package lakeloader.jvm;

import static lakeloader.jvm.CommonCase.fields;
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
import java.util.Iterator;
import java.util.LinkedHashMap;
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
 * The common case of a DataWorks JSON message (a data change whose images hold exactly its declared columns, in
 * order, every value plainly of its type) parsed in one pass, or NULL for any other message: that one takes the
 * Spark SQL parser (lakeloader.parse.formats.dataworks), which stays the reference for every message.
 *
 * <p>The result (lakeloader.spark's DATAWORKS_COMMON_CASE) holds the message's fields as that parser would produce
 * them: the canonical op, names, the sequence as a number (at most 18 digits plainly spelt, CommonCase.plainLong:
 * read here, where the parser's expression matches each row's text with a regular expression), the event time as
 * sent (the parser's own expression reads it), the images as canonical text, the key and the declared columns with
 * their Spark types. A message is taken only when
 * every check of that parser passes and every value is in a form whose canonical text is itself (a JSON integer
 * in a LONG's range, any JSON number for DOUBLE, true/false for BOOLEAN, a string for STRING, strict Base64 for
 * BYTES) or, for DATE, epoch milliseconds from 1970 to 9999 when the session's time zone is UTC. Anything else
 * (DDL, heartbeats, a partial or reordered image, a repeated name, a value that needs a judgement, a configured
 * type other than string, double, float and the integers) returns NULL, so this class never decides a rejection.
 * The names the framing refuses (the reserved prefix, names differing only by case) are its to check, as for
 * every parser's rows. tests/spark/test_format_dataworks_common_case.py holds its rows equal to the Spark SQL
 * parser's.
 *
 * <p>The second argument is the parser's settings as JSON (`Config`): {"time_zone", "column_types": {"db.table":
 * {"column": "spark type"}}, "wire_types", "data_ops", "row_ids", "unqualified_schemas", "versions"}, parsed once per distinct
 * text. The value forms this class reads are its own, by wire type name: a wire type it has no form for is left to
 * the Spark SQL parser.
 */
public final class DataWorksMessages implements UDF2<String, String, Row> {
    private static final long serialVersionUID = 1L;

    private static final Pattern BASE64 =
            Pattern.compile("(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?");
    private static final String CONFIGURED = "configured ";

    /** The integer families a configured type may name, with their ranges. */
    private static final Map<String, long[]> INTEGERS = Map.of(
            "tinyint", new long[] {Byte.MIN_VALUE, Byte.MAX_VALUE},
            "smallint", new long[] {Short.MIN_VALUE, Short.MAX_VALUE},
            "int", new long[] {Integer.MIN_VALUE, Integer.MAX_VALUE},
            "bigint", new long[] {Long.MIN_VALUE, Long.MAX_VALUE});

    /** A configured type this class leaves to the Spark SQL parser. */
    private static final String UNSUPPORTED = "unsupported";

    private static final CommonCase.Settings<Config> SETTINGS = new CommonCase.Settings<>(DataWorksMessages::config);

    /**
     * What this class reads from the parser (its settings argument): whether the session's time zone is UTC, per
     * "db.table" its configured columns' declarations, the format's wire types with their Spark types
     * (dataworks.VALUE_TYPES), its data ops with their canonical ops (dataworks.OPS) and its row id columns, in
     * the order they are tried as a key (the second for Oracle sources only), and the schemas that do not qualify
     * the database in a table's name (lower case; CommonCase.schemaQualified), and the versions the parser reads
     * (dataworks.VERSIONS; a message without one is read too).
     */
    private record Config(
            boolean utc,
            Map<String, Map<String, Declared>> configured,
            Map<String, String> wireTypes,
            Map<String, String> dataOps,
            List<String> rowIds,
            Set<String> unqualified,
            Set<String> versions) {}

    /** One declared column: its name, converter key (the wire type, or CONFIGURED + family) and Spark type. */
    private record Declared(String name, String conv, String type) {}

    /** What the envelope holds, as read. */
    private static final class Message {
        String version;
        String op;
        String db;
        String schemaName;
        String table;
        String dbType;
        String sequence;
        String eventTime;
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
        Map<String, Map<String, Declared>> configured = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> tables = root.path("column_types").fields(); tables.hasNext(); ) {
            Map.Entry<String, JsonNode> table = tables.next();
            Map<String, Declared> columns = new HashMap<>();
            table.getValue().fields().forEachRemaining(
                    column -> columns.put(column.getKey(), configured(column.getKey(), column.getValue().asText())));
            configured.put(table.getKey(), columns);
        }
        List<String> rowIds = new ArrayList<>();
        root.path("row_ids").forEach(name -> rowIds.add(name.asText()));
        boolean utc = "UTC".equals(root.path("time_zone").asText());
        Set<String> versions = new HashSet<>();
        root.path("versions").forEach(version -> versions.add(version.asText()));
        return new Config(utc, configured, texts(root.path("wire_types")), texts(root.path("data_ops")), rowIds,
                CommonCase.lowerCaseSet(root.path("unqualified_schemas")), versions);
    }

    /** A configured column's declaration (converter key CONFIGURED + the type's family), or UNSUPPORTED. */
    private static Declared configured(String name, String type) {
        boolean supported = type.equals("string") || type.equals("double") || type.equals("float")
                || INTEGERS.containsKey(type);
        return new Declared(name, supported ? CONFIGURED + type : UNSUPPORTED, type);
    }

    // ---------------------------------------------------------------------------------------------------------
    // Reading the envelope: every field the Spark SQL parser reads must have the shape its schema gives it
    // ---------------------------------------------------------------------------------------------------------

    private static Message read(String text) throws IOException, NotCommon {
        Message m = new Message();
        CommonCase.readMessage(text, p -> (field, value) -> {
            switch (field) {
                case "schema" -> readSchema(p, value, m);
                case "payload" -> readPayload(p, value, m);
                case "version" -> m.version = scalar(p, value);
                default -> p.skipChildren();
            }
        });
        return m;
    }

    private static void readSchema(JsonParser p, JsonToken value, Message m) throws IOException, NotCommon {
        fields(p, value, (field, token) -> {
            switch (field) {
                case "dataColumn" -> m.declared = CommonCase.declaredColumns(p, token);
                case "primaryKey" -> m.primaryKey = strings(p, token);
                case "source" -> fields(p, token, (name, v) -> {
                    String text = scalar(p, v);
                    switch (name) {
                        case "dbType" -> m.dbType = text;
                        case "dbName" -> m.db = text;
                        case "schemaName" -> m.schemaName = text;
                        case "tableName" -> m.table = text;
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
                case "before" -> CommonCase.imageIn(p, token, "dataColumn", image -> m.before = image);
                case "after" -> CommonCase.imageIn(p, token, "dataColumn", image -> m.after = image);
                case "sequenceId" -> m.sequence = scalar(p, token);
                case "op" -> m.op = scalar(p, token);
                case "scn" -> scalar(p, token);
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
        if (op == null || m.db == null || m.table == null || m.declared == null) {
            throw NotCommon.INSTANCE;
        }
        if (m.version != null && !settings.versions().contains(m.version)) {
            throw NotCommon.INSTANCE;
        }
        if (m.sequence == null) {
            throw NotCommon.INSTANCE;
        }
        long sequence = CommonCase.plainLong(m.sequence);
        boolean both = m.before != null && m.after != null;
        if (op.equals("UPDATE_AFTER") && both) {
            op = "UPDATE";
        } else if (op.equals("UPDATE")) {
            op = both ? "UPDATE" : (m.after != null ? "UPDATE_AFTER" : "UPDATE_BEFORE");
        }
        boolean needsAfter = op.equals("INSERT") || op.equals("UPDATE_AFTER") || op.equals("UPDATE");
        boolean needsBefore = op.equals("DELETE") || op.equals("UPDATE_BEFORE") || op.equals("UPDATE");
        if ((needsAfter && m.after == null) || (needsBefore && m.before == null)) {
            throw NotCommon.INSTANCE;
        }
        String db = CommonCase.schemaQualified(m.db, m.schemaName, settings.unqualified());
        List<Declared> declared = declarations(m, db, settings);
        Map<String, String> before = canonical(m.before, declared, settings);
        Map<String, String> after = canonical(m.after, declared, settings);
        String[] key = primaryKey(m, settings.rowIds());
        Map<String, String> keyed = after != null ? after : before;
        if (key != null) {
            for (String column : key) {
                if (keyed.get(column) == null) { // absent (the image holds the declared columns) or NULL
                    throw NotCommon.INSTANCE;
                }
            }
        }
        String[] names = new String[declared.size()];
        String[] types = new String[declared.size()];
        for (int i = 0; i < names.length; i++) {
            names[i] = declared.get(i).name();
            types[i] = declared.get(i).type();
        }
        CommonCase.requireStorableNames(names, before, after);
        return RowFactory.create(
                m.op, op, db, m.schemaName, m.table, sequence, m.eventTime, before, after, key, names, types);
    }

    /** The declared columns typed as dataworks.parse types them (its fixed table, then `column_types`). */
    private static List<Declared> declarations(Message m, String db, Config settings) throws NotCommon {
        Map<String, Declared> configured = settings.configured().getOrDefault(db + "." + m.table, Map.of());
        List<Declared> declared = new ArrayList<>(m.declared.size());
        Set<String> names = new HashSet<>();
        for (String[] column : m.declared) {
            String name = column[0];
            if (name == null || !names.add(name)) { // nameless or repeated: the parser rejects the message
                throw NotCommon.INSTANCE;
            }
            Declared retyped = configured.get(name);
            if (retyped != null) {
                if (retyped.conv().equals(UNSUPPORTED)) {
                    throw NotCommon.INSTANCE;
                }
                declared.add(retyped);
            } else {
                String wire = column[1];
                String spark = wire == null ? null : settings.wireTypes().get(wire);
                declared.add(spark == null ? new Declared(name, null, "string") : new Declared(name, wire, spark));
            }
        }
        return declared;
    }

    /** An image as canonical text: it must hold exactly the declared columns, in their order. */
    private static Map<String, String> canonical(List<String[]> image, List<Declared> declared, Config settings)
            throws NotCommon {
        if (image == null) {
            return null;
        }
        if (image.size() != declared.size()) {
            throw NotCommon.INSTANCE;
        }
        Map<String, String> values = new LinkedHashMap<>(image.size() * 2);
        for (int i = 0; i < image.size(); i++) {
            String[] value = image.get(i);
            Declared column = declared.get(i);
            if (!value[0].equals(column.name())) {
                throw NotCommon.INSTANCE;
            }
            values.put(value[0], value[1] == null ? null : converted(value[1], value[2], column, settings));
        }
        return values;
    }

    /** A value's canonical text, only where it is the value's own text (or DATE's plain rendering). */
    private static String converted(String text, String kind, Declared column, Config settings) throws NotCommon {
        String conv = column.conv();
        if (conv == null || conv.equals("STRING") || conv.equals(CONFIGURED + "string")) {
            if (kind.equals("boolean")) {
                throw NotCommon.INSTANCE;
            }
            return text;
        }
        switch (conv) {
            case "LONG" -> {
                return integer(text, kind, Long.MIN_VALUE, Long.MAX_VALUE);
            }
            case "DOUBLE", CONFIGURED + "double", CONFIGURED + "float" -> { // DOUBLE: the exact text, any number
                boolean number = kind.equals("int") || kind.equals("float");
                String configured = conv.startsWith(CONFIGURED) ? conv.substring(CONFIGURED.length()) : null;
                if (!number || configured != null && !ConfiguredImages.isFinite(configured, text)) {
                    throw NotCommon.INSTANCE;
                }
                return text;
            }
            case "BOOLEAN" -> {
                if (!kind.equals("boolean")) {
                    throw NotCommon.INSTANCE;
                }
                return text;
            }
            case "BYTES" -> {
                if (!kind.equals("string") || text.isEmpty() || !BASE64.matcher(text).matches()) {
                    throw NotCommon.INSTANCE;
                }
                return text;
            }
            case "DATE" -> {
                if (!settings.utc() || !kind.equals("int") || text.length() > 15) {
                    throw NotCommon.INSTANCE;
                }
                long millis = Long.parseLong(text);
                if (millis < 0 || millis > CommonCase.LAST_MILLIS) {
                    throw NotCommon.INSTANCE;
                }
                return dateText(millis);
            }
            default -> { // a configured integer; any other wire type has no form here
                long[] range = conv.startsWith(CONFIGURED) ? INTEGERS.get(conv.substring(CONFIGURED.length())) : null;
                if (range == null) {
                    throw NotCommon.INSTANCE;
                }
                return integer(text, kind, range[0], range[1]);
            }
        }
    }

    /** Epoch milliseconds (1970 to 9999) as "yyyy-MM-dd HH:mm:ss.SSS" in UTC (the civil date from the day number). */
    static String dateText(long millis) {
        long days = Math.floorDiv(millis, 86_400_000L);
        long ofDay = Math.floorMod(millis, 86_400_000L);
        long z = days + 719_468;
        long era = Math.floorDiv(z, 146_097);
        long dayOfEra = z - era * 146_097;
        long yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365;
        long dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100);
        long shiftedMonth = (5 * dayOfYear + 2) / 153;
        long day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1;
        long month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9;
        long year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
        char[] out = new char[23];
        digits(out, 0, year, 4);
        out[4] = '-';
        digits(out, 5, month, 2);
        out[7] = '-';
        digits(out, 8, day, 2);
        out[10] = ' ';
        digits(out, 11, ofDay / 3_600_000, 2);
        out[13] = ':';
        digits(out, 14, ofDay / 60_000 % 60, 2);
        out[16] = ':';
        digits(out, 17, ofDay / 1000 % 60, 2);
        out[19] = '.';
        digits(out, 20, ofDay % 1000, 3);
        return new String(out);
    }

    private static void digits(char[] out, int at, long value, int width) {
        for (int i = at + width - 1; i >= at; i--) {
            out[i] = (char) ('0' + value % 10);
            value /= 10;
        }
    }

    private static String integer(String text, String kind, long min, long max) throws NotCommon {
        if (!kind.equals("int") || text.length() > 20) {
            throw NotCommon.INSTANCE;
        }
        try {
            long value = Long.parseLong(text);
            if (value < min || value > max) {
                throw NotCommon.INSTANCE;
            }
        } catch (NumberFormatException overflow) {
            throw NotCommon.INSTANCE;
        }
        return text;
    }

    /** The declared key; for a table without one, a row id column the message declares (the Oracle one for an
     * Oracle source only); else NULL. */
    private static String[] primaryKey(Message m, List<String> rowIds) {
        if (m.primaryKey != null && !m.primaryKey.isEmpty()) {
            return m.primaryKey.toArray(new String[0]);
        }
        boolean oracle = m.dbType != null && m.dbType.toLowerCase(Locale.ROOT).contains("oracle");
        for (int i = 0; i < rowIds.size() && (i == 0 || oracle); i++) {
            for (String[] column : m.declared) {
                if (column[0].equals(rowIds.get(i))) {
                    return new String[] {rowIds.get(i)};
                }
            }
        }
        return null;
    }
}
