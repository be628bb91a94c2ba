package lakeloader.jvm;

import static lakeloader.jvm.CommonCase.texts;
import static lakeloader.jvm.CommonCase.textLists;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.DateTimeException;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import lakeloader.jvm.CommonCase.NotCommon;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The common case of a DTS Avro line (an INSERT, INIT, UPDATE or DELETE record of a db.table whose every field is
 * typed by the record itself: by its MySQL type number, or by a value in one of its images, each declaration one
 * whose values keep their text, every value plainly of it) read in one pass, or NULL for any other line: that one
 * takes the Spark SQL parser (lakeloader.parse.formats.dts_avro), which stays the reference for every line.
 *
 * <p>The record is decoded by DtsRecords. Each field is declared as that parser declares it (`_declared`: the MySQL
 * declaration of its type number for a MySQL or DRDS source, or of its sample value's union branch, the after
 * image's value first) and typed as it types it: a configured type wins, else the Spark type the settings give the
 * declaration (the parser resolved the batch's first declarations once and passes those whose values keep their
 * text: strings, integers, floating numbers, decimals of at most 38 digits and bytes). A field that no value
 * types (a NULL in a column whose type number does not say) is not the common case: the parser gives it the
 * batch's type of that column, which a record alone cannot know. Values keep their text: numbers as sent, Float
 * as DtsRecords writes a double, Character as decoded text (Base64 for the binary charset), bytes as Base64; a
 * value is the common case only where the parser's converter keeps it (an integer in its type's range, a plain
 * decimal that fits its precision and scale, ...). Dates, times and timestamps, and anything else the parser might
 * reject, are not the common case, so this class never decides a rejection.
 *
 * <p>The result (lakeloader.spark's DTS_COMMON_CASE) holds the op as sent and canonical, db and table, `id` and
 * `sourceTimestamp` as the longs they were sent as, the images as canonical text, the key (the configured one, else
 * the PRIMARY entry of the record's tag `pk_uk_info`, `{"PRIMARY":["id"],"uk_code":["code"]}`, when the image names
 * each of its columns as spelt; a tag that is no such object is not the common case), the fields' names, Spark types and declarations (the parser's batch types read the declarations).
 * tests/spark/test_format_dts_avro_common_case.py holds its rows equal to the Spark SQL parser's.
 *
 * <p>The second argument is the parser's settings as JSON: {"column_types": {"db.table": {"column": "spark type"}},
 * "primary_keys": {"db.table": [column]} (the source's), "data_ops": {operation: canonical op},
 * "declared_types": {declaration: spark type}}.
 */
public final class DtsMessages implements UDF2<String, String, Row> {
    private static final long serialVersionUID = 1L;

    private static final CommonCase.Settings<Config> SETTINGS = new CommonCase.Settings<>(DtsMessages::config);

    private record Config(
            Map<String, Map<String, String>> columnTypes,
            Map<String, String[]> primaryKeys,
            Map<String, String> dataOps,
            Map<String, String> types,
            boolean utc) {}

    /** The flat record's fields (lakeloader.spark's DTS_DECODED record) and an image value's. */
    private static final int ID = 0, SOURCE_TIMESTAMP = 1, SOURCE_TYPE = 2, OPERATION = 3, OBJECT_NAME = 4,
            FIELDS = 5, BEFORE = 7, AFTER = 8, PK_UK_INFO = 9;

    private static final int BRANCH = 0, VALUE = 1, BYTES = 2, TEXT = 3, CHARSET = 4, PRECISION = 7, SCALE = 8,
            YEAR = 9, MONTH = 10, DAY = 11, HOUR = 12, MINUTE = 13, SECOND = 14, MILLIS = 15;

    /** common.CANONICAL_TIMESTAMP: a timestamp's (UTC) or a wall clock's canonical text. */
    private static final DateTimeFormatter CANONICAL_TIMESTAMP =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS", Locale.US);

    private static final Set<String> MYSQL_SOURCES = Set.of("MySQL", "DRDS");

    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** Type numbers whose declaration a value decides ((NEW)DECIMAL, BIT, text or bytes, GEOMETRY). */
    private static final Set<Integer> VALUE_TYPED =
            Set.of(0, 246, 16, 15, 245, 247, 248, 249, 250, 251, 252, 253, 254, 255);

    private static final Set<Integer> STRING_TYPED = Set.of(15, 245, 247, 248, 249, 250, 251, 252, 253, 254);

    private static final Map<Integer, String> DECLARED_BY_NUMBER = Map.ofEntries(
            Map.entry(1, "tinyint unsigned"), Map.entry(2, "smallint unsigned"), Map.entry(9, "mediumint"),
            Map.entry(3, "int unsigned"), Map.entry(8, "bigint unsigned"), Map.entry(13, "year"),
            Map.entry(4, "double"), Map.entry(5, "double"), Map.entry(7, "timestamp"), Map.entry(12, "datetime"),
            Map.entry(10, "date"), Map.entry(14, "date"), Map.entry(11, "time"));

    /** common.split_qualified: the table after the last dot, the db before it (Spark's regexp_extract is a find). */
    private static final Pattern QUALIFIED = Pattern.compile("^(.*)\\.([^.]+)$");


    @Override
    public Row call(String text, String settings) {
        return text == null ? null : CommonCase.rowOrNull(() -> parsed(text, SETTINGS.of(settings)));
    }

    private static Config config(JsonNode root) {
        return new Config(ConfiguredImages.tableTypes(root.path("column_types")), textLists(root.path("primary_keys")),
                texts(root.path("data_ops")), texts(root.path("declared_types")),
                root.path("time_zone").asText().equals("UTC"));
    }

    private static Row parsed(String text, Config settings) throws NotCommon {
        Row decoded = DtsRecords.decode(text);
        if (decoded.get(0) != null) {
            throw NotCommon.INSTANCE;
        }
        Row record = decoded.getStruct(1);
        String operation = record.getString(OPERATION);
        String op = settings.dataOps().get(operation);
        String objectName = record.getString(OBJECT_NAME);
        Matcher qualified = objectName == null ? null : QUALIFIED.matcher(objectName);
        List<Row> fields = list(record, FIELDS);
        if (op == null || qualified == null || !qualified.find() || qualified.group(1).isEmpty() || fields == null) {
            throw NotCommon.INSTANCE;
        }
        String db = qualified.group(1);
        String table = qualified.group(2);
        List<Row> before = list(record, BEFORE);
        List<Row> after = list(record, AFTER);
        boolean needsAfter = op.equals("INSERT") || op.equals("UPDATE");
        boolean needsBefore = op.equals("DELETE") || op.equals("UPDATE");
        if ((after == null && needsAfter) || (before == null && needsBefore)
                || (after != null && after.size() != fields.size())
                || (before != null && before.size() != fields.size())) {
            throw NotCommon.INSTANCE;
        }
        boolean mysql = MYSQL_SOURCES.contains(record.getString(SOURCE_TYPE));
        Map<String, String> configured = settings.columnTypes().getOrDefault(db + "." + table, Map.of());
        int n = fields.size();
        String[] names = new String[n];
        String[] declarations = new String[n];
        String[] types = new String[n];
        Set<String> seen = new HashSet<>(n * 2);
        for (int i = 0; i < n; i++) {
            Row field = fields.get(i);
            names[i] = field.getString(0);
            if (names[i] == null || !seen.add(names[i])) {
                throw NotCommon.INSTANCE;
            }
            Row sample = sample(after == null ? null : after.get(i), before == null ? null : before.get(i));
            int number = field.getInt(1);
            if (sample == null && (!mysql || VALUE_TYPED.contains(number))) {
                throw NotCommon.INSTANCE; // the batch's type of the column, not the record's
            }
            declarations[i] = mysql ? mysqlDeclaration(number, sample) : branchDeclaration(sample);
            types[i] = configured.get(names[i]);
            if (types[i] == null && declarations[i] != null) {
                types[i] = settings.types().get(declarations[i]);
            }
            if (types[i] == null) {
                throw NotCommon.INSTANCE;
            }
        }
        Map<String, String> beforeImage = image(before, names, types, settings.utc());
        Map<String, String> afterImage = image(after, names, types, settings.utc());
        String[] key = settings.primaryKeys().get(db + "." + table);
        if (key == null) {
            key = primaryKey(record.getString(PK_UK_INFO));
        }
        ConfiguredImages.requireKey(key, afterImage != null ? afterImage : beforeImage);
        CommonCase.requireStorableNames(names, beforeImage, afterImage);
        return RowFactory.create(operation, op, db, table, longField(record, ID), longField(record, SOURCE_TIMESTAMP),
                beforeImage, afterImage, key, names, types, declarations);
    }

    /** The PRIMARY key a record's `pk_uk_info` tag names (null: no tag, or no PRIMARY entry, or an empty one). */
    private static String[] primaryKey(String pkUkInfo) throws NotCommon {
        if (pkUkInfo == null) {
            return null;
        }
        JsonNode keys;
        try {
            keys = MAPPER.readTree(pkUkInfo);
        } catch (IOException e) {
            throw NotCommon.INSTANCE;
        }
        if (keys == null || !keys.isObject()) {
            throw NotCommon.INSTANCE;
        }
        JsonNode primary = keys.get("PRIMARY");
        if (primary == null || primary.isNull()) {
            return null;
        }
        if (!primary.isArray()) {
            throw NotCommon.INSTANCE;
        }
        String[] columns = new String[primary.size()];
        for (int i = 0; i < columns.length; i++) {
            if (!primary.get(i).isTextual()) {
                throw NotCommon.INSTANCE;
            }
            columns[i] = primary.get(i).asText();
        }
        return columns.length == 0 ? null : columns;
    }

    /** One of the record's Avro longs, which DtsRecords always gives, as their decimal text. */
    private static long longField(Row record, int field) {
        return Long.parseLong(record.getString(field));
    }

    /** A list DtsRecords made (a java.util.List: Row.getList reads Scala sequences only). */
    @SuppressWarnings("unchecked")
    private static List<Row> list(Row record, int field) {
        return (List<Row>) record.get(field);
    }

    // ---------------------------------------------------------------------------------------------------------
    // Declarations, as the parser's `_declared` makes them
    // ---------------------------------------------------------------------------------------------------------

    private static boolean hasValue(Row value) {
        return value != null && !"EmptyObject".equals(value.getString(BRANCH));
    }

    /** The value a field's declaration reads: the after image's, else the before image's; NULL for none. */
    private static Row sample(Row after, Row before) {
        return hasValue(after) ? after : hasValue(before) ? before : null;
    }

    /** The MySQL declaration a MYSQL_TYPE_* number stands for (or its value's), as `_mysql_declaration`. */
    private static String mysqlDeclaration(int number, Row value) {
        if (number == 0 || number == 246) {
            return decimalDeclaration(value);
        }
        String declared = DECLARED_BY_NUMBER.get(number);
        if (declared != null) {
            return declared;
        }
        if (number == 16) {
            return value != null && "Integer".equals(value.getString(BRANCH)) ? "bigint unsigned" : "bit";
        }
        String byValue = branchDeclaration(value);
        if (STRING_TYPED.contains(number)) {
            return byValue != null ? byValue : "text";
        }
        if (number == 255) {
            return byValue != null ? byValue : "geometry";
        }
        return byValue;
    }

    /** The declaration a value's union branch implies, as `_branch_declaration` (NULL for none). */
    private static String branchDeclaration(Row value) {
        if (value == null) {
            return null;
        }
        return switch (value.getString(BRANCH)) {
            case "Integer" -> "decimal(38,0)";
            case "Decimal" -> decimalDeclaration(value);
            case "Float" -> "double";
            case "Timestamp", "TimestampWithTimeZone" -> "timestamp";
            case "DateTime" -> dateTimeDeclaration(value);
            case "Character" -> isBinary(value) ? "blob" : "text";
            case "BinaryObject", "BinaryGeometry" -> "blob";
            case "TextObject", "TextGeometry" -> "text";
            default -> null;
        };
    }

    private static String decimalDeclaration(Row value) {
        boolean hasPrecision = value != null && "Decimal".equals(value.getString(BRANCH)) && !value.isNullAt(PRECISION)
                && value.getInt(PRECISION) > 0;
        if (!hasPrecision) {
            return "decimal";
        }
        return "decimal(" + value.getInt(PRECISION) + "," + (value.isNullAt(SCALE) ? 0 : value.getInt(SCALE)) + ")";
    }

    private static String dateTimeDeclaration(Row value) {
        boolean year = !value.isNullAt(YEAR);
        boolean hour = !value.isNullAt(HOUR);
        if (year && hour) {
            return "datetime";
        }
        if (!value.isNullAt(MONTH)) {
            return "date";
        }
        return hour ? "time" : year ? "year" : null;
    }

    private static boolean isBinary(Row value) {
        String charset = value.getString(CHARSET);
        return charset != null && charset.toLowerCase(Locale.ROOT).equals("binary");
    }

    // ---------------------------------------------------------------------------------------------------------
    // Values: each one's text, which must be its canonical text in its column's type
    // ---------------------------------------------------------------------------------------------------------

    /** An image's values by name, as canonical text; NULL for no image. */
    private static Map<String, String> image(List<Row> values, String[] names, String[] types, boolean utc)
            throws NotCommon {
        if (values == null) {
            return null;
        }
        Map<String, String> image = new LinkedHashMap<>(names.length * 2);
        for (int i = 0; i < names.length; i++) {
            image.put(names[i], canonical(values.get(i), types[i], utc));
        }
        return image;
    }

    /**
     * A value's canonical text in its column's type, where the parser's converter accepts the value's text (its
     * `_value_text`) and this class knows the result; NULL for no value. Numbers, text and bytes keep their text;
     * a DateTime of all its parts in a timestamp_ntz column and one of date parts only in a date column are
     * written as the parser's converters write them, as is a Timestamp in a timestamp or timestamp_ntz column when
     * the session's time zone is UTC (the parser writes it as UTC text in the session's zone, then reads it back).
     */
    private static String canonical(Row value, String type, boolean utc) throws NotCommon {
        if (!hasValue(value)) {
            return null;
        }
        String branch = value.getString(BRANCH);
        String converted = switch (branch) {
            case "DateTime" -> dateTime(value, type);
            case "Timestamp" -> utc && (type.equals("timestamp") || type.equals("timestamp_ntz")) ? timestamp(value)
                    : null;
            case "TimestampWithTimeZone" -> null;
            default -> kept(value, branch, type);
        };
        if (converted == null) {
            throw NotCommon.INSTANCE; // an undecodable Character too: the parser rejects it
        }
        return converted;
    }

    /** The text of a number, a text or bytes, where its column's type keeps it; NULL otherwise. */
    private static String kept(Row value, String branch, String type) {
        boolean bytes = branch.equals("BinaryObject") || branch.equals("BinaryGeometry")
                || (branch.equals("Character") && isBinary(value));
        String text = switch (branch) {
            case "Integer", "Decimal", "Float", "TextObject", "TextGeometry" -> value.getString(VALUE);
            case "Character", "BinaryObject", "BinaryGeometry" -> bytes ? value.getString(BYTES) : value.getString(TEXT);
            default -> null;
        };
        return text != null && keeps(type, text, branch.equals("Float"), bytes) ? text : null;
    }

    /** Whether a column of the Spark type keeps the value's text (its converter does, and accepts it). */
    private static boolean keeps(String type, String text, boolean isFloat, boolean bytes) {
        if (type.equals("string")) {
            return true;
        }
        if (type.equals("binary")) {
            return bytes; // Base64 written by DtsRecords, which the parser's check accepts
        }
        if (type.equals("double") || type.equals("float")) {
            return isFloat ? !text.equals("nan") && !text.endsWith("inf") : ConfiguredImages.PLAIN_NUMBER.matcher(text).matches();
        }
        return ConfiguredImages.fitsDecimal(type, text) || ConfiguredImages.isInteger(type, text);
    }

    /**
     * A DateTime's canonical text: a wall clock of all six parts (microseconds, the field `millis`, optional) in a
     * timestamp_ntz column,
     * a date (no hour) in a date column, each a valid date in years 1-9999; NULL for anything else.
     */
    private static String dateTime(Row value, String type) {
        boolean date = !value.isNullAt(YEAR) && !value.isNullAt(MONTH) && !value.isNullAt(DAY);
        boolean clock = !value.isNullAt(HOUR) && !value.isNullAt(MINUTE) && !value.isNullAt(SECOND);
        int micros = value.isNullAt(MILLIS) ? 0 : value.getInt(MILLIS);
        if (!date || value.getInt(YEAR) < 1 || value.getInt(YEAR) > 9999 || micros < 0 || micros > 999_999) {
            return null;
        }
        try {
            LocalDate day = LocalDate.of(value.getInt(YEAR), value.getInt(MONTH), value.getInt(DAY));
            if (type.equals("date") && value.isNullAt(HOUR)) {
                return day.toString();
            }
            if (type.equals("timestamp_ntz") && clock) {
                LocalTime time = LocalTime.of(value.getInt(HOUR), value.getInt(MINUTE), value.getInt(SECOND),
                        micros * 1_000);
                return CANONICAL_TIMESTAMP.format(LocalDateTime.of(day, time));
            }
            return null;
        } catch (DateTimeException invalid) {
            return null;
        }
    }

    /**
     * A Timestamp's canonical text: seconds and microseconds (the field `millis`, as DTS's SDK reads it) since 1970
     * as UTC text; NULL outside years 1-9999.
     */
    private static String timestamp(Row value) {
        try {
            long seconds = Long.parseLong(value.getString(VALUE));
            long fraction = value.isNullAt(MILLIS) ? 0 : value.getInt(MILLIS);
            long micros = Math.addExact(Math.multiplyExact(seconds, 1_000_000L), fraction);
            LocalDateTime utc = LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1_000_000L),
                    (int) Math.floorMod(micros, 1_000_000L) * 1000, ZoneOffset.UTC);
            return utc.getYear() >= 1 && utc.getYear() <= 9999 ? CANONICAL_TIMESTAMP.format(utc) : null;
        } catch (ArithmeticException | DateTimeException | NumberFormatException outOfRange) {
            return null;
        }
    }
}
