package lakeloader.jvm;

import static lakeloader.jvm.CommonCase.textList;
import static lakeloader.jvm.CommonCase.textLists;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import lakeloader.jvm.CommonCase.NotCommon;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The common case of a DataHub TUPLE row exported as a JSON line (a flat object of the table's columns and the
 * metadata columns, whose op and image flags fit, every value a string or a number plainly of its column's type)
 * parsed in one pass, or NULL for any other line: that one takes the Spark SQL parser
 * (lakeloader.parse.formats.datahub_tuple), which stays the reference for every line. CSV lines are not given to
 * it.
 *
 * <p>The result (lakeloader.spark's DATAHUB_COMMON_CASE) holds the row's fields as that parser would produce them:
 * the op as sent and canonical, the configured database and the table, the sequence id and the execute time's epoch
 * milliseconds as numbers (read here once; the parser's expressions match each row's texts with regular
 * expressions), the image (before or after, by the op) as canonical text, the configured key and the columns with
 * their Spark types. A row is taken only when every check of that parser passes and every value's canonical text is
 * itself (ConfiguredImages). Anything else (flags that do not fit the op, a missing table, a sequence id that is not
 * a number of at most 18 digits plainly spelt (CommonCase.plainLong), an execute time that is not epoch
 * milliseconds, a boolean or a structure among the values, a key column missing or NULL, a repeated name, a
 * configured type of another family) returns NULL, so this class never decides a rejection.
 * tests/spark/test_format_datahub_common_case.py holds its rows equal to the Spark SQL parser's.
 *
 * <p>The second argument is the parser's settings as JSON: {"column_types": {"db.table": {"column": "spark type"}},
 * "primary_keys": {"db.table": [column]} (the source's), "db" (the source's database), "metadata": [the metadata
 * columns], "sequence", "operation", "execute_time", "source_table", "before_image", "after_image" (their names),
 * "row_ops": [[op, before-image flag, after-image flag, canonical op]], "before_ops": [canonical ops that carry the
 * image as the before image]}.
 */
public final class DataHubRows implements UDF2<String, String, Row> {
    private static final long serialVersionUID = 1L;

    private static final CommonCase.Settings<Config> SETTINGS = new CommonCase.Settings<>(DataHubRows::config);

    private record Config(
            Map<String, Map<String, String>> columnTypes,
            Map<String, String[]> primaryKeys,
            String db,
            Set<String> metadata,
            String[] fields,
            List<String[]> rowOps,
            Set<String> beforeOps) {}

    /** The metadata fields read, in Config.fields' order. */
    private static final int SEQUENCE = 0, OPERATION = 1, EXECUTE_TIME = 2, TABLE = 3, BEFORE_FLAG = 4, AFTER_FLAG = 5;

    private static final String[] FIELD_SETTINGS =
            {"sequence", "operation", "execute_time", "source_table", "before_image", "after_image"};

    @Override
    public Row call(String text, String settings) {
        return text == null ? null : CommonCase.rowOrNull(() -> parsed(text, SETTINGS.of(settings)));
    }

    private static Config config(JsonNode root) {
        Map<String, Map<String, String>> columnTypes = ConfiguredImages.tableTypes(root.path("column_types"));
        List<String[]> rowOps = new ArrayList<>();
        root.path("row_ops").forEach(op -> rowOps.add(textList(op).toArray(new String[0])));
        String[] fields = new String[FIELD_SETTINGS.length];
        for (int i = 0; i < fields.length; i++) {
            fields[i] = root.path(FIELD_SETTINGS[i]).asText();
        }
        JsonNode db = root.path("db");
        return new Config(columnTypes, textLists(root.path("primary_keys")), db.isTextual() ? db.asText() : null,
                new HashSet<>(textList(root.path("metadata"))), fields, rowOps,
                new HashSet<>(textList(root.path("before_ops"))));
    }

    private static Row parsed(String text, Config settings) throws IOException, NotCommon {
        Map<String, String[]> metadata = new HashMap<>();
        List<String[]> image = new ArrayList<>();
        CommonCase.readMessage(text, p -> (field, value) -> {
            String[] entry = CommonCase.entry(p, field, value);
            if (settings.metadata().contains(field)) {
                metadata.put(field, entry);
            } else {
                image.add(entry);
            }
        });
        String[] meta = new String[settings.fields().length];
        for (int i = 0; i < meta.length; i++) {
            String[] entry = metadata.get(settings.fields()[i]);
            if (entry != null && entry[2].equals("boolean")) {
                throw NotCommon.INSTANCE; // a boolean's text is the parser's to read
            }
            meta[i] = entry == null ? null : entry[1];
        }
        String op = canonicalOp(meta, settings.rowOps());
        String executeTime = meta[EXECUTE_TIME];
        if (settings.db() == null || meta[TABLE] == null || meta[SEQUENCE] == null) {
            throw NotCommon.INSTANCE;
        }
        long sequence = CommonCase.plainLong(meta[SEQUENCE]);
        // a text time is the parser's to read
        Long executeMillis = executeTime == null ? null : CommonCase.millis(executeTime);
        String table = settings.db() + "." + meta[TABLE];
        Map<String, String> types = settings.columnTypes().getOrDefault(table, Map.of());
        Map<String, String> values = ConfiguredImages.canonical(image, types);
        String[] key = settings.primaryKeys().get(table);
        ConfiguredImages.requireKey(key, values);
        String[] names = values.keySet().toArray(new String[0]);
        boolean before = settings.beforeOps().contains(op);
        CommonCase.requireStorableNames(names, values, null);
        return RowFactory.create(meta[OPERATION], op, settings.db(), meta[TABLE], sequence, executeMillis,
                before ? values : null, before ? null : values, key, names, ConfiguredImages.columnTypes(names, types));
    }

    /** The canonical op of the row's op and image flags, which must be one of the format's combinations. */
    private static String canonicalOp(String[] meta, List<String[]> rowOps) throws NotCommon {
        for (String[] op : rowOps) {
            if (op[0].equals(meta[OPERATION]) && op[1].equals(meta[BEFORE_FLAG]) && op[2].equals(meta[AFTER_FLAG])) {
                return op[3];
            }
        }
        throw NotCommon.INSTANCE;
    }
}
