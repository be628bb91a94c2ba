package lakeloader.jvm;

import static lakeloader.jvm.CommonCase.textList;
import static lakeloader.jvm.CommonCase.textLists;
import static lakeloader.jvm.CommonCase.texts;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import lakeloader.jvm.CommonCase.NotCommon;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF3;

/**
 * The common case of a DebeziumSmt message (a flat object of the row's fields and `__deleted`, every value a string
 * or a number plainly of its column's type) parsed in one pass, or NULL for any other message: that one takes the
 * Spark SQL parser (lakeloader.parse.formats.debezium_smt), which stays the reference for every message.
 *
 * <p>Nothing in the message names its table: the parser finds it from the message's topic and passes it as the
 * second argument ('db.table' as the configuration names it; the parser gives only messages whose table and
 * ordering key it found). The result (lakeloader.spark's DEBEZIUM_SMT_COMMON_CASE) holds the fields that come
 * from the message as that parser would produce them: `__deleted` as sent and the canonical op, the image (before
 * for a delete, else after) as canonical text, the configured key and the columns with their Spark types. A
 * message is taken only when every check of that parser passes and every value's canonical text is itself
 * (ConfiguredImages). Anything else (a `__deleted` that is no "true" or "false", no fields, a boolean or a
 * structure among the values, a key column missing or NULL, a repeated name, a configured type of another family)
 * returns NULL, so this class never decides a rejection. tests/spark/test_format_debezium_smt_common_case.py holds
 * its rows equal to the Spark SQL parser's.
 *
 * <p>The third argument is the parser's settings as JSON: {"column_types": {"db.table": {"column": "spark type"}},
 * "primary_keys": {"db.table": [column]} (the source's), "deleted": the field's name, "data_ops": {its value:
 * canonical op}, "absent": the value it has when absent or null, "before_ops": [canonical ops that carry the image
 * as the before image]}.
 */
public final class DebeziumSmtRows implements UDF3<String, String, String, Row> {
    private static final long serialVersionUID = 1L;

    private static final CommonCase.Settings<Config> SETTINGS = new CommonCase.Settings<>(DebeziumSmtRows::config);

    private record Config(
            Map<String, Map<String, String>> columnTypes,
            Map<String, String[]> primaryKeys,
            String deleted,
            Map<String, String> dataOps,
            String absent,
            Set<String> beforeOps) {}

    @Override
    public Row call(String text, String table, String settings) {
        return text == null || table == null
                ? null
                : CommonCase.rowOrNull(() -> parsed(text, table, SETTINGS.of(settings)));
    }

    private static Config config(JsonNode root) {
        return new Config(ConfiguredImages.tableTypes(root.path("column_types")), textLists(root.path("primary_keys")), root.path("deleted").asText(),
                texts(root.path("data_ops")), root.path("absent").asText(),
                new HashSet<>(textList(root.path("before_ops"))));
    }

    private static Row parsed(String text, String table, Config settings) throws IOException, NotCommon {
        String[][] deleted = new String[1][];
        List<String[]> image = new ArrayList<>();
        CommonCase.readMessage(text, p -> (field, value) -> {
            String[] entry = CommonCase.entry(p, field, value);
            if (field.equals(settings.deleted())) {
                deleted[0] = entry;
            } else {
                image.add(entry);
            }
        });
        if (image.isEmpty() || (deleted[0] != null && deleted[0][2].equals("boolean"))) {
            throw NotCommon.INSTANCE; // a boolean's text is the parser's to read
        }
        String rawOp = deleted[0] == null || deleted[0][1] == null ? settings.absent() : deleted[0][1];
        String op = settings.dataOps().get(rawOp);
        if (op == null) {
            throw NotCommon.INSTANCE;
        }
        Map<String, String> types = settings.columnTypes().getOrDefault(table, Map.of());
        Map<String, String> values = ConfiguredImages.canonical(image, types);
        String[] key = settings.primaryKeys().get(table);
        ConfiguredImages.requireKey(key, values);
        String[] names = values.keySet().toArray(new String[0]);
        boolean before = settings.beforeOps().contains(op);
        CommonCase.requireStorableNames(names, values, null);
        return RowFactory.create(rawOp, op, before ? values : null, before ? null : values, key, names,
                ConfiguredImages.columnTypes(names, types));
    }
}
