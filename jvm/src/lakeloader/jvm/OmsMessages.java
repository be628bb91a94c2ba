package lakeloader.jvm;

import static lakeloader.jvm.CommonCase.fields;
import static lakeloader.jvm.CommonCase.scalar;
import static lakeloader.jvm.CommonCase.texts;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import lakeloader.jvm.CommonCase.NotCommon;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The common case of an OMS Default JSON message (a data change whose images hold the same columns in the same
 * order, every value a string or a number plainly of its column's type) parsed in one pass, or NULL for any other
 * message: that one takes the Spark SQL parser (lakeloader.parse.formats.oms_default), which
 * stays the reference for every message.
 *
 * <p>The result (lakeloader.spark's OMS_COMMON_CASE) holds the message's fields as that parser would produce them:
 * the op as sent and canonical, the names, the sequence (the time's whole seconds, 0 without a time), the second
 * sequence (storeDataSequence, 0 without one) and the time in epoch microseconds (EpochMicros), read here rather
 * than by the parser's regular expressions over each row's texts, the images as canonical
 * text (a string column's value is its text, a number's the digits it was sent with), the key and the columns with
 * their Spark types. A message is taken only when every check of that parser passes and every value's canonical
 * text is itself (ConfiguredImages). Anything else (DDL, heartbeats, a missing image, a key column missing or NULL,
 * a time or sequence that is no number or not in its plainest spelling of at most 18 digits, a boolean or a
 * structure among the values, a repeated name, a configured type of another family) returns NULL, so this class
 * never decides a rejection. The names the framing refuses are its to check, as for every parser's rows.
 * tests/spark/test_format_oms_common_case.py holds its rows equal to the Spark SQL parser's.
 *
 * <p>DefaultExtendColumnType (lakeloader.parse.formats.oms_extend) is read too when the settings hold "light_types":
 * an image's `__light_type` ({column: {"schemaType": declaration}}, the after image's, else the before's) is then
 * metadata, not a column, and a column it declares has the Spark type the settings give its declaration (the
 * parser resolved the batch's first declarations once, and passes those whose values keep their text); a
 * declaration not among them, or a `__light_type` of any other shape, is not the common case. A configured type
 * wins over the declared one, as in the parser.
 *
 * <p>The second argument is the parser's settings as JSON: {"column_types": {"db.table": {"column": "spark type"}}
 * (the source's), "data_ops": {wire op: canonical op}, "key_separator", and for DefaultExtendColumnType
 * "light_types": {"plain": {declaration: spark type}, "oracle": {...}} (by the tenant's dbType: one holding
 * ORACLE reads declarations in their Oracle meaning)}.
 */
public final class OmsMessages implements UDF2<String, String, Row> {
    private static final long serialVersionUID = 1L;

    private static final CommonCase.Settings<Config> SETTINGS = new CommonCase.Settings<>(OmsMessages::config);

    /** oms_default's reading of the seconds in a time field: the same pattern, found as Spark finds it. */
    private static final Pattern SECONDS = Pattern.compile("^(-?[0-9]+)(\\.[0-9]*)?$");

    /** An image's field of column declarations in DefaultExtendColumnType. */
    private static final String LIGHT_TYPE = "__light_type";

    private record Config(
            Map<String, Map<String, String>> columnTypes,
            Map<String, String> dataOps,
            String keySeparator,
            Map<String, String> plainLightTypes,
            Map<String, String> oracleLightTypes) {
        boolean readsLightTypes() {
            return plainLightTypes != null;
        }
    }

    /** What the envelope holds, as read. */
    private static final class Message {
        String op;
        String db;
        String table;
        String timestamp;
        String checkpoint;
        String storeSequence;
        String primaryKey;
        String dbType;
        List<String[]> before;
        List<String[]> after;
        Map<String, String> beforeDeclared;
        Map<String, String> afterDeclared;
    }

    @Override
    public Row call(String text, String settings) {
        if (text == null) {
            return null;
        }
        return CommonCase.rowOrNull(() -> {
            Config config = SETTINGS.of(settings);
            return parsed(read(text, config.readsLightTypes()), config);
        });
    }

    private static Config config(JsonNode root) {
        JsonNode lightTypes = root.path("light_types");
        return new Config(ConfiguredImages.tableTypes(root.path("column_types")), texts(root.path("data_ops")),
                root.path("key_separator").asText(),
                lightTypes.isMissingNode() ? null : texts(lightTypes.path("plain")),
                lightTypes.isMissingNode() ? null : texts(lightTypes.path("oracle")));
    }

    private static Message read(String text, boolean lightTypes) throws IOException, NotCommon {
        Message m = new Message();
        CommonCase.readMessage(text, p -> (field, value) -> {
            switch (field) {
                case "prevStruct" -> m.before = lightTypes
                        ? imageWithLightTypes(p, value, declared -> m.beforeDeclared = declared)
                        : CommonCase.image(p, value);
                case "postStruct" -> m.after = lightTypes
                        ? imageWithLightTypes(p, value, declared -> m.afterDeclared = declared)
                        : CommonCase.image(p, value);
                case "recordType" -> m.op = scalar(p, value);
                case "allMetaData" -> readMetadata(p, value, m);
                default -> p.skipChildren();
            }
        });
        return m;
    }

    /** allMetaData: the fields the parser reads must be strings or numbers; the others may hold anything. */
    private static void readMetadata(JsonParser p, JsonToken value, Message m) throws IOException, NotCommon {
        if (value == JsonToken.VALUE_NULL) {
            return;
        }
        fields(p, value, (field, token) -> {
            switch (field) {
                case "db" -> m.db = scalar(p, token);
                case "table_name" -> m.table = scalar(p, token);
                case "timestamp" -> m.timestamp = scalar(p, token);
                case "checkpoint" -> m.checkpoint = scalar(p, token);
                case "storeDataSequence" -> m.storeSequence = scalar(p, token);
                case "record_primary_key" -> m.primaryKey = scalar(p, token);
                case "dbType" -> m.dbType = scalar(p, token);
                default -> p.skipChildren();
            }
        });
    }

    private static Row parsed(Message m, Config settings) throws NotCommon {
        String op = m.op == null ? null : settings.dataOps().get(m.op);
        if (op == null || m.db == null || m.table == null) {
            throw NotCommon.INSTANCE;
        }
        String time = timeText(m);
        long seq = time == null ? 0 : seconds(time);
        long seq2 = m.storeSequence == null ? 0 : CommonCase.plainLong(m.storeSequence);
        Long eventMicros = time == null ? null : EpochMicros.micros(time, 6);
        boolean needsAfter = op.equals("INSERT") || op.equals("UPDATE");
        boolean needsBefore = op.equals("DELETE") || op.equals("UPDATE");
        if ((needsAfter && m.after == null) || (needsBefore && m.before == null)) {
            throw NotCommon.INSTANCE;
        }
        Map<String, String> configured = settings.columnTypes().getOrDefault(m.db + "." + m.table, Map.of());
        Map<String, String> types = settings.readsLightTypes() ? declaredTypes(m, configured, settings) : configured;
        Map<String, String> before = ConfiguredImages.canonical(m.before, types);
        Map<String, String> after = ConfiguredImages.canonical(m.after, types);
        if (before != null && after != null && !List.copyOf(before.keySet()).equals(List.copyOf(after.keySet()))) {
            throw NotCommon.INSTANCE; // the parser joins two images' different names
        }
        Map<String, String> keyed = after != null ? after : before;
        String[] key = primaryKey(m.primaryKey, settings.keySeparator());
        ConfiguredImages.requireKey(key, keyed);
        String[] names = keyed.keySet().toArray(new String[0]);
        CommonCase.requireStorableNames(names, before, after);
        return RowFactory.create(m.op, op, m.db, m.table, seq, seq2, eventMicros, before, after, key, names,
                ConfiguredImages.columnTypes(names, types));
    }

    /**
     * An image whose `__light_type` field declares its columns: the other fields as CommonCase.image reads them, the
     * declarations (column -> schemaType) to `declared`; NULL for null.
     */
    private static List<String[]> imageWithLightTypes(
            JsonParser p, JsonToken token, Consumer<Map<String, String>> declared) throws IOException, NotCommon {
        if (token == JsonToken.VALUE_NULL) {
            return null;
        }
        List<String[]> image = new ArrayList<>();
        fields(p, token, (name, v) -> {
            if (name.equals(LIGHT_TYPE)) {
                declared.accept(lightTypes(p, v));
            } else {
                image.add(CommonCase.entry(p, name, v));
            }
        });
        return image;
    }

    /** {column: {"schemaType": declaration}}, nothing else, as a map column -> declaration. */
    private static Map<String, String> lightTypes(JsonParser p, JsonToken token) throws IOException, NotCommon {
        Map<String, String> declared = new HashMap<>();
        fields(p, token, (column, v) -> {
            String[] schemaType = new String[1];
            fields(p, v, (field, t) -> {
                if (!field.equals("schemaType") || t != JsonToken.VALUE_STRING) {
                    throw NotCommon.INSTANCE;
                }
                schemaType[0] = p.getText();
            });
            if (schemaType[0] == null) {
                throw NotCommon.INSTANCE;
            }
            declared.put(column, schemaType[0]);
        });
        return declared;
    }

    /**
     * The Spark type of each column of the message's images: configured, else as its `__light_type` declares it
     * (the after image's declarations, else the before's), else string. A declaration the settings do not give is
     * not the common case.
     */
    private static Map<String, String> declaredTypes(Message m, Map<String, String> configured, Config settings)
            throws NotCommon {
        Map<String, String> declared = m.afterDeclared != null ? m.afterDeclared : m.beforeDeclared;
        if (declared == null) {
            return configured;
        }
        boolean oracle = m.dbType != null && m.dbType.toUpperCase(Locale.ROOT).contains("ORACLE");
        Map<String, String> known = oracle ? settings.oracleLightTypes() : settings.plainLightTypes();
        Map<String, String> types = new LinkedHashMap<>(configured);
        for (Map.Entry<String, String> column : declared.entrySet()) {
            if (!configured.containsKey(column.getKey())) {
                String type = known.get(column.getValue());
                if (type == null) {
                    throw NotCommon.INSTANCE;
                }
                types.put(column.getKey(), type);
            }
        }
        return types;
    }

    /** oms_default._time_text: the timestamp when it is sent, else a checkpoint that is a number of seconds. */
    private static String timeText(Message m) {
        if (m.timestamp != null) {
            return m.timestamp;
        }
        return m.checkpoint != null && SECONDS.matcher(m.checkpoint).find() ? m.checkpoint : null;
    }

    /**
     * oms_default._seq of a time: its whole seconds. The common case is seconds a long holds without rounding (18
     * digits at most); a time that is no number, or longer, is the parser's.
     */
    private static long seconds(String time) throws NotCommon {
        Matcher seconds = SECONDS.matcher(time);
        if (!seconds.find()) {
            throw NotCommon.INSTANCE;
        }
        return CommonCase.plainLong(seconds.group(1));
    }

    /** record_primary_key's names (split as Spark's `split` splits them), NULL for none. */
    private static String[] primaryKey(String names, String separator) {
        if (names == null || names.isEmpty()) {
            return null;
        }
        return names.split(Pattern.quote(separator), -1);
    }
}
