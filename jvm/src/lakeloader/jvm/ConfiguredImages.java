package lakeloader.jvm;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import lakeloader.jvm.CommonCase.NotCommon;

/**
 * The images a JVM common-case reader reads by Spark SQL types (OmsMessages, DataHubRows, DataWorks2Messages,
 * CanalMessages): a column is a string unless the source's `column_types` configures a Spark SQL type for it or
 * (DataWorks 2.0, Canal, OMS DefaultExtendColumnType) its declaration resolves to one whose values keep their
 * text, and a message is the common case only where each value's canonical text is its own text, which holds for the
 * Spark SQL converters of those formats: a string or number for a string (or unconfigured) column, a JSON number
 * that is finite as a double or float for those (`checked_finite`), an integer (a JSON integer, or a string of
 * ASCII digits) in range for the integer types, a number in plain notation (a JSON number or string) that fits a
 * decimal(p,s) (`checked_decimal`). Any other value, or a configured type of another family (date, timestamp,
 * boolean, binary), is left to the format's Spark SQL parser (NotCommon). DtsMessages reads its values' text by
 * these families too.
 */
final class ConfiguredImages {
    /** The Spark type families a configured column may have here, with their ranges (NULL: not an integer). */
    private static final Map<String, long[]> FAMILIES = new HashMap<>();

    static {
        FAMILIES.put("string", null);
        FAMILIES.put("double", null);
        FAMILIES.put("float", null);
        FAMILIES.put("tinyint", new long[] {Byte.MIN_VALUE, Byte.MAX_VALUE});
        FAMILIES.put("smallint", new long[] {Short.MIN_VALUE, Short.MAX_VALUE});
        FAMILIES.put("int", new long[] {Integer.MIN_VALUE, Integer.MAX_VALUE});
        FAMILIES.put("bigint", new long[] {Long.MIN_VALUE, Long.MAX_VALUE});
        FAMILIES.put("decimal", null);
    }

    /** common.TYPE_FAMILY, as Spark finds it. */
    private static final Pattern FAMILY = Pattern.compile("^([a-z_]+)");

    /** A number in plain notation, as common.checked_decimal reads it without an exponent. */
    static final Pattern PLAIN_NUMBER = Pattern.compile("-?[0-9]{1,38}(\\.[0-9]{1,38})?");

    private static final Pattern DECIMAL = Pattern.compile("decimal\\(([0-9]{1,2}),([0-9]{1,2})\\)");

    /**
     * A configured Spark type as a value is checked against it: its family ("" for one not listed in FAMILIES),
     * an integer family's range, a decimal(p,s)'s precision and scale (-1: not of that form).
     */
    private record Family(String name, long[] range, int precision, int scale) {}

    /** Each configured type read once (every value of its columns is checked against it). */
    private static final Map<String, Family> FAMILY_OF = new ConcurrentHashMap<>();

    private ConfiguredImages() {}

    /** The source's `column_types` (a JSON object 'db.table' -> {column: Spark type}) as a map. */
    static Map<String, Map<String, String>> tableTypes(JsonNode columnTypes) {
        Map<String, Map<String, String>> tables = new HashMap<>();
        columnTypes.fields().forEachRemaining(table -> tables.put(table.getKey(), CommonCase.texts(table.getValue())));
        return tables;
    }

    /**
     * An image (CommonCase.image's [name, text, kind] entries) as canonical text, where every value's is its own
     * text (its column's type: `types`, or string); NULL for no image.
     */
    static Map<String, String> canonical(List<String[]> image, Map<String, String> types) throws NotCommon {
        if (image == null) {
            return null;
        }
        Map<String, String> values = new LinkedHashMap<>(image.size() * 2);
        for (String[] value : image) {
            String kind = value[2];
            if (kind.equals("boolean") || (!kind.equals("null") && !isOwnText(value[1], kind, types.get(value[0])))) {
                throw NotCommon.INSTANCE;
            }
            values.put(value[0], value[1]);
        }
        return values;
    }

    /** The Spark types of an image's columns, in its order (a column not configured is a string). */
    static String[] columnTypes(String[] names, Map<String, String> types) {
        String[] columnTypes = new String[names.length];
        for (int i = 0; i < names.length; i++) {
            columnTypes[i] = types.getOrDefault(names[i], "string");
        }
        return columnTypes;
    }

    /**
     * The key's columns must be in the image, named exactly, with a value: else the parser looks for a name
     * differing by case or rejects the message, which is not the common case.
     */
    static void requireKey(String[] key, Map<String, String> image) throws NotCommon {
        if (key == null) {
            return;
        }
        for (String column : key) {
            if (image.get(column) == null) {
                throw NotCommon.INSTANCE;
            }
        }
    }

    /** Whether a value (a string or number's text) is its own canonical text in a column of the configured type. */
    private static boolean isOwnText(String text, String kind, String type) {
        if (type == null) {
            return true; // a string column
        }
        Family family = familyOf(type);
        return switch (family.name()) {
            case "string" -> true;
            case "double", "float" -> (kind.equals("int") || kind.equals("float")) && isFinite(family.name(), text);
            case "decimal" -> fitsDecimal(family, text);
            case "" -> false;
            default -> (kind.equals("int") || kind.equals("string")) && inRange(text, family.range());
        };
    }

    /**
     * Whether a JSON number is a finite value of a double or float (common.checked_finite): MySQL's DOUBLE and
     * FLOAT hold no infinity, and a number beyond their range (1e400, a float's 3.5e38) would read as one.
     */
    static boolean isFinite(String type, String number) {
        return type.equals("float")
                ? Float.isFinite(Float.parseFloat(number))
                : Double.isFinite(Double.parseDouble(number));
    }

    private static Family familyOf(String type) {
        return FAMILY_OF.computeIfAbsent(type, ConfiguredImages::readFamily);
    }

    private static Family readFamily(String type) {
        Matcher family = FAMILY.matcher(type);
        String name = family.find() && FAMILIES.containsKey(family.group(1)) ? family.group(1) : "";
        Matcher decimal = DECIMAL.matcher(type);
        return decimal.matches()
                ? new Family(name, null, Integer.parseInt(decimal.group(1)), Integer.parseInt(decimal.group(2)))
                : new Family(name, FAMILIES.get(name), -1, -1);
    }

    /** Whether an integer Spark type (tinyint, smallint, int, bigint) keeps the text: an integer in its range. */
    static boolean isInteger(String type, String text) {
        long[] range = FAMILIES.get(type);
        return range != null && inRange(text, range);
    }

    /** Whether a decimal(p,s) Spark type keeps the text: a plain number that fits it (`decimalFits`). */
    static boolean fitsDecimal(String type, String text) {
        return fitsDecimal(familyOf(type), text);
    }

    private static boolean fitsDecimal(Family decimal, String text) {
        return decimal.precision() >= 0 && PLAIN_NUMBER.matcher(text).matches()
                && decimalFits(text, decimal.precision(), decimal.scale());
    }

    /**
     * Whether plain number text (-?digits, and .digits) fits decimal(precision, scale) as common.decimal_fits
     * decides: at most precision - scale integer digits and scale fraction digits once leading and trailing zeros
     * are discounted (zero always fits).
     */
    private static boolean decimalFits(String text, int precision, int scale) {
        String unsigned = text.startsWith("-") ? text.substring(1) : text;
        int point = unsigned.indexOf('.');
        String digits = point < 0 ? unsigned : unsigned.substring(0, point) + unsigned.substring(point + 1);
        int integerLength = point < 0 ? unsigned.length() : point;
        int leading = 0;
        while (leading < digits.length() && digits.charAt(leading) == '0') {
            leading++;
        }
        int significantEnd = digits.length();
        while (significantEnd > 0 && digits.charAt(significantEnd - 1) == '0') {
            significantEnd--;
        }
        if (significantEnd == 0) {
            return true;
        }
        int integerDigits = Math.max(integerLength - leading, 0);
        int fractionDigits = Math.max(significantEnd - integerLength, 0);
        return integerDigits <= precision - scale && fractionDigits <= scale;
    }

    /** Whether the text is an integer (-?[0-9]{1,19}) in the range. */
    private static boolean inRange(String text, long[] range) {
        int start = text.startsWith("-") ? 1 : 0;
        int digits = text.length() - start;
        if (digits < 1 || digits > 19) {
            return false;
        }
        for (int i = start; i < text.length(); i++) {
            if (text.charAt(i) < '0' || text.charAt(i) > '9') {
                return false;
            }
        }
        try {
            long value = Long.parseLong(text);
            return value >= range[0] && value <= range[1];
        } catch (NumberFormatException overflow) {
            return false;
        }
    }
}
