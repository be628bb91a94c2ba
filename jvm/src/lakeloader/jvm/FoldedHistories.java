package lakeloader.jvm;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Each key's deciding action, its image folded from the key's history: for formats that send partial after-images,
 * where two partial updates of one key in a batch must both count (lakeloader.apply.key_actions).
 *
 * <p>{@link #deciding} reads key actions sorted so that each key's actions are adjacent within a partition, newest
 * first, and keeps the first row of each key with its {@code image} and {@code partial} replaced: folded oldest
 * first, a delete clears the image, a full image replaces it, a partial image overlays its columns; partial until a
 * full image is folded in. A key whose newest action is a delete keeps that action's image, not partial. Only the
 * actions since the newest delete or full image are kept in memory.
 *
 * <p>It replaced a Spark SQL aggregate that collected each key's actions into an array, sorted it with a lambda and
 * folded it with another, both interpreted: a million SharePlex changes took 6.3-7.1 s warm, here 3.5-4.5 (one
 * sort, then one pass). Made by lakeloader.spark.jvm_instance; tests/spark/test_folded_histories.py holds it to that
 * aggregate. Rows pass through as {@link Row}s: the caller hands timestamps over as microseconds, which no calendar
 * touches. The folded image's columns are in no particular order (a map's).
 */
public final class FoldedHistories {

    /** The rows of {@code newestFirst} that decide their key (the {@code keyColumns}), folded as the class says. */
    public Dataset<Row> deciding(
            Dataset<Row> newestFirst, List<String> keyColumns, String actionColumn, String deleteAction) {
        StructType schema = newestFirst.schema();
        int[] keys = keyColumns.stream().mapToInt(schema::fieldIndex).toArray();
        Fold fold = new Fold(
                keys,
                schema.fieldIndex(actionColumn),
                schema.fieldIndex("image"),
                schema.fieldIndex("partial"),
                deleteAction);
        return newestFirst.mapPartitions(fold, Encoders.row(schema));
    }

    private record Fold(int[] keys, int action, int image, int partial, String deleteAction)
            implements MapPartitionsFunction<Row, Row> {

        @Override
        public Iterator<Row> call(Iterator<Row> rows) {
            return new Iterator<>() {
                private Row next = rows.hasNext() ? rows.next() : null;

                @Override
                public boolean hasNext() {
                    return next != null;
                }

                @Override
                public Row next() {
                    if (next == null) {
                        throw new NoSuchElementException();
                    }
                    Row deciding = next;
                    List<Row> folded = new ArrayList<>(); // newest first, down to the newest full image
                    boolean reachedBoundary = false;
                    for (Row row = deciding; row != null && sameKey(row, deciding); row = next) {
                        if (!reachedBoundary) {
                            reachedBoundary = deletes(row);
                            if (!reachedBoundary) {
                                folded.add(row);
                                reachedBoundary = Boolean.FALSE.equals(row.get(partial));
                            }
                        }
                        next = rows.hasNext() ? rows.next() : null;
                    }
                    if (deletes(deciding)) {
                        return with(deciding, deciding.get(image), false);
                    }
                    boolean isPartial = !Boolean.FALSE.equals(folded.get(folded.size() - 1).get(partial));
                    return with(deciding, overlaid(folded), isPartial);
                }
            };
        }

        /** The images of {@code newestFirst} overlaid oldest first: null where the newest left none (a null image). */
        private scala.collection.Map<String, String> overlaid(List<Row> newestFirst) {
            Map<String, String> columns = new LinkedHashMap<>();
            boolean none = false; // as Spark's map_concat with a null map: nothing left, the next image starts afresh
            for (int i = newestFirst.size() - 1; i >= 0; i--) {
                scala.collection.Map<String, String> values = newestFirst.get(i).getMap(image);
                none = values == null;
                if (none) {
                    columns.clear();
                    continue;
                }
                for (scala.collection.Iterator<Tuple2<String, String>> it = values.iterator(); it.hasNext(); ) {
                    Tuple2<String, String> column = it.next();
                    columns.put(column._1(), column._2());
                }
            }
            return none ? null : CollectionConverters.asScala(columns); // a Row's map is a Scala one
        }

        private boolean deletes(Row row) {
            return deleteAction.equals(row.get(action));
        }

        private boolean sameKey(Row a, Row b) {
            for (int k : keys) {
                if (!Objects.equals(a.get(k), b.get(k))) {
                    return false;
                }
            }
            return true;
        }

        /** {@code row} with its image and partial replaced. */
        private Row with(Row row, Object foldedImage, boolean isPartial) {
            Object[] values = new Object[row.length()];
            for (int i = 0; i < values.length; i++) {
                values[i] = row.get(i);
            }
            values[image] = foldedImage;
            values[partial] = isPartial;
            return RowFactory.create(values);
        }
    }
}
