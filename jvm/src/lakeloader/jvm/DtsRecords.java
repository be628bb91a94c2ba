package lakeloader.jvm;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.Charset;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * A DTS Avro line (the Base64 of one schemaless Avro {@code com.alibaba.dts.formats.avro.Record}, written with
 * dts_record.avsc) -> struct(decode_error, record): the flat record of exact text that
 * lakeloader.parse.formats.dts_avro types and checks, or why the line is no record.
 *
 * <p>The record is read by hand, field by field in the schema's order (dts_record.avsc, which the DTS producers
 * and our generator write with): the schema is fixed, and reading it directly costs a fraction of a generic
 * Avro reader's objects. Every value becomes text that loses nothing: numbers as their digits (a Float's double
 * as Python's {@code repr} writes it, the shortest text that reads back as the same double), bytes as Base64,
 * timestamps and date-times as their parts; Character bytes are also decoded with their MySQL charset (NULL
 * when the charset is binary or unknown, or the bytes do not decode). The struct's fields are
 * lakeloader.spark's DTS_DECODED; tests/spark/test_dts_records.py holds this class to the
 * Python decoder it replaced (fastavro), which stays there as its reference.
 */
public final class DtsRecords implements UDF1<String, Row> {
    private static final long serialVersionUID = 1L;

    static final String NOT_BASE64 = "not Base64";
    static final String NOT_A_RECORD = "not a DTS Avro record: ";
    static final int MAX_ERROR_LENGTH = 120;

    private static final String[] SOURCE_TYPES = {
        "MySQL", "Oracle", "SQLServer", "PostgreSQL", "MongoDB", "Redis", "DB2", "PPAS", "DRDS", "HBASE", "HDFS",
        "FILE", "OTHER"
    };
    private static final String[] OPERATIONS = {
        "INSERT", "UPDATE", "DELETE", "DDL", "BEGIN", "COMMIT", "ROLLBACK", "ABORT", "HEARTBEAT", "CHECKPOINT",
        "COMMAND", "FILL", "FINISH", "CONTROL", "RDB", "NOOP", "INIT"
    };
    /** An image value's union, in the schema's order (index 0 is null). */
    private static final String[] VALUE_BRANCHES = {
        null, "Integer", "Character", "Decimal", "Float", "Timestamp", "DateTime", "TimestampWithTimeZone",
        "BinaryGeometry", "TextGeometry", "BinaryObject", "TextObject", "EmptyObject"
    };
    private static final String[] EMPTY_OBJECT = {"NULL", "NONE"};

    /** MySQL charset names -> Java charsets (MySQL's latin1 is Windows-1252, its utf8 the 3-byte subset of UTF-8). */
    private static final Map<String, Charset> CHARSETS = Map.ofEntries(
        Map.entry("utf8", StandardCharsets.UTF_8),
        Map.entry("utf8mb3", StandardCharsets.UTF_8),
        Map.entry("utf8mb4", StandardCharsets.UTF_8),
        Map.entry("utf-8", StandardCharsets.UTF_8),
        Map.entry("latin1", Charset.forName("windows-1252")),
        Map.entry("ascii", StandardCharsets.US_ASCII),
        Map.entry("gbk", Charset.forName("GBK")),
        Map.entry("gb2312", Charset.forName("GB2312")),
        Map.entry("gb18030", Charset.forName("GB18030")),
        Map.entry("big5", Charset.forName("Big5")),
        Map.entry("ujis", Charset.forName("EUC-JP")),
        Map.entry("sjis", Charset.forName("Shift_JIS")),
        Map.entry("euckr", Charset.forName("EUC-KR")),
        Map.entry("ucs2", StandardCharsets.UTF_16BE),
        Map.entry("utf16", StandardCharsets.UTF_16BE),
        Map.entry("utf16le", StandardCharsets.UTF_16LE),
        Map.entry("utf32", Charset.forName("UTF-32BE")));

    @Override
    public Row call(String line) {
        return decode(line);
    }

    /** struct(decode_error, record) of a line (DtsMessages reads the record too). */
    static Row decode(String line) {
        String text = line == null ? "" : strip(line);
        if (text.isEmpty()) {
            return failed("empty line");
        }
        byte[] data;
        try {
            if (text.length() % 4 != 0) { // padding is required, as Python's b64decode requires it
                return failed(NOT_BASE64);
            }
            data = Base64.getDecoder().decode(text);
        } catch (IllegalArgumentException e) {
            return failed(NOT_BASE64);
        }
        Reader in = new Reader(data);
        Row record;
        try {
            record = in.record();
        } catch (NotARecord e) {
            String reason = NOT_A_RECORD + e.getMessage();
            return failed(reason.length() > MAX_ERROR_LENGTH ? reason.substring(0, MAX_ERROR_LENGTH) : reason);
        }
        if (in.remaining() > 0) {
            return failed(NOT_A_RECORD + in.remaining() + " bytes after the record");
        }
        return RowFactory.create(null, record);
    }

    private static Row failed(String reason) {
        return RowFactory.create(reason, null);
    }

    /** The line without the white space around it (Python's str.strip: Unicode white space and separators). */
    private static String strip(String s) {
        int start = 0;
        int end = s.length();
        while (start < end && isSpace(s.charAt(start))) {
            start++;
        }
        while (end > start && isSpace(s.charAt(end - 1))) {
            end--;
        }
        return s.substring(start, end);
    }

    private static boolean isSpace(char c) {
        return Character.isWhitespace(c) || Character.isSpaceChar(c) || (c >= '\u001c' && c <= '\u001f');
    }

    /** Why bytes are no record; its message follows NOT_A_RECORD. */
    private static final class NotARecord extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NotARecord(String message) {
            super(message, null, false, false);
        }
    }

    /** Avro binary decoding of one record, in the order of dts_record.avsc's fields. */
    private static final class Reader {
        private final byte[] data;
        private int pos;
        private final CharsetDecoder utf8 = strict(StandardCharsets.UTF_8);

        Reader(byte[] data) {
            this.data = data;
        }

        int remaining() {
            return data.length - pos;
        }

        Row record() {
            readInt(); // version
            long id = readLong();
            long sourceTimestamp = readLong();
            readString(); // sourcePosition
            readString(); // safeSourcePosition
            readString(); // sourceTxid
            String sourceType = SOURCE_TYPES[readIndex(SOURCE_TYPES.length, "SourceType")];
            readString(); // source.version
            String operation = OPERATIONS[readIndex(OPERATIONS.length, "Operation")];
            String objectName = readIndex(2, "objectName") == 1 ? readString() : null;
            if (readIndex(2, "processTimestamps") == 1) {
                readBlocks(this::readLong);
            }
            String[] primaryAndUnique = {null};
            readBlocks(() -> { // tags: map<string>; pk_uk_info names the table's keys
                String tag = readString();
                String value = readString();
                if (tag.equals("pk_uk_info")) {
                    primaryAndUnique[0] = value;
                }
                return value;
            });
            Object fields = null;
            int fieldsBranch = readIndex(3, "fields");
            if (fieldsBranch == 1) {
                readString();
            } else if (fieldsBranch == 2) {
                fields = readBlocks(() -> RowFactory.create(readString(), readInt()));
            }
            Object before = image("beforeImages");
            Object after = image("afterImages");
            Object ddl = after instanceof String ? after : before instanceof String ? before : null;
            return RowFactory.create(
                Long.toString(id), Long.toString(sourceTimestamp), sourceType, operation, objectName, fields, ddl,
                before instanceof List ? before : null, after instanceof List ? after : null, primaryAndUnique[0]);
        }

        /** An image: null, a string (a DDL record's statement) or the list of its values. */
        private Object image(String name) {
            switch (readIndex(3, name)) {
                case 1:
                    return readString();
                case 2:
                    return readBlocks(this::value);
                default:
                    return null;
            }
        }

        /** One image value as struct(branch, value, bytes, text, charset, object_type, timezone, precision, scale,
         * year, month, day, hour, minute, second, millis); NULL for the null branch. */
        private Row value() {
            int index = readIndex(VALUE_BRANCHES.length, "image value");
            if (index == 0) {
                return null;
            }
            Object[] v = new Object[16];
            v[0] = VALUE_BRANCHES[index];
            switch (index) {
                case 1: // Integer {precision, value}
                    v[7] = readInt();
                    v[1] = readString();
                    break;
                case 2: { // Character {charset, value}
                    String charset = readString();
                    byte[] bytes = readBytes();
                    v[2] = Base64.getEncoder().encodeToString(bytes);
                    v[3] = decoded(bytes, charset);
                    v[4] = charset;
                    break;
                }
                case 3: // Decimal {value, precision, scale}
                    v[1] = readString();
                    v[7] = readInt();
                    v[8] = readInt();
                    break;
                case 4: // Float {value, precision, scale}
                    v[1] = pythonRepr(readDouble());
                    v[7] = readInt();
                    v[8] = readInt();
                    break;
                case 5: // Timestamp {timestamp, millis}
                    v[1] = Long.toString(readLong());
                    v[15] = readInt();
                    break;
                case 6: // DateTime
                    readDateTime(v);
                    break;
                case 7: // TimestampWithTimeZone {value: DateTime, timezone}
                    readDateTime(v);
                    v[6] = readString();
                    break;
                case 8: // BinaryGeometry {type, value}
                case 10: // BinaryObject
                    v[5] = readString();
                    v[2] = Base64.getEncoder().encodeToString(readBytes());
                    break;
                case 9: // TextGeometry {type, value}
                case 11: // TextObject
                    v[5] = readString();
                    v[1] = readString();
                    break;
                default: // EmptyObject
                    v[1] = EMPTY_OBJECT[readIndex(EMPTY_OBJECT.length, "EmptyObject")];
            }
            return RowFactory.create(v);
        }

        /** DateTime's parts, each union(null, int): year, month, day, hour, minute, second, millis. */
        private void readDateTime(Object[] v) {
            for (int i = 9; i <= 15; i++) {
                v[i] = readIndex(2, "DateTime part") == 1 ? Integer.valueOf(readInt()) : null;
            }
        }

        private <T> List<T> readBlocks(java.util.function.Supplier<T> item) {
            List<T> items = new ArrayList<>();
            while (true) {
                long count = readLong();
                if (count == 0) {
                    return items;
                }
                if (count < 0) { // a block with its size in bytes
                    count = -count;
                    readLong();
                }
                if (count > remaining()) { // every item takes a byte at least
                    throw new NotARecord("truncated");
                }
                for (long i = 0; i < count; i++) {
                    items.add(item.get());
                }
            }
        }

        private int readIndex(int size, String of) {
            int index = readInt();
            if (index < 0 || index >= size) {
                throw new NotARecord("index " + index + " out of range for " + of);
            }
            return index;
        }

        private long readVarint(int maxBytes, String type) {
            long raw = 0;
            for (int i = 0; i < maxBytes; i++) {
                if (pos >= data.length) {
                    throw new NotARecord("truncated");
                }
                int b = data[pos++] & 0xff;
                raw |= (long) (b & 0x7f) << (7 * i);
                if ((b & 0x80) == 0) {
                    return (raw >>> 1) ^ -(raw & 1);
                }
            }
            throw new NotARecord("invalid " + type + " encoding");
        }

        private int readInt() {
            long value = readVarint(5, "int");
            if (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE) {
                throw new NotARecord("invalid int encoding");
            }
            return (int) value;
        }

        private long readLong() {
            return readVarint(10, "long");
        }

        private double readDouble() {
            if (remaining() < 8) {
                throw new NotARecord("truncated");
            }
            long bits = 0;
            for (int i = 0; i < 8; i++) {
                bits |= (long) (data[pos + i] & 0xff) << (8 * i);
            }
            pos += 8;
            return Double.longBitsToDouble(bits);
        }

        private byte[] readBytes() {
            int length = length();
            byte[] bytes = new byte[length];
            System.arraycopy(data, pos, bytes, 0, length);
            pos += length;
            return bytes;
        }

        private String readString() {
            int length = length();
            try {
                String text = utf8.decode(ByteBuffer.wrap(data, pos, length)).toString();
                pos += length;
                return text;
            } catch (CharacterCodingException e) {
                throw new NotARecord("a string is not UTF-8");
            }
        }

        private int length() {
            long length = readLong();
            if (length < 0) {
                throw new NotARecord("negative length " + length);
            }
            if (length > remaining()) {
                throw new NotARecord("truncated");
            }
            return (int) length;
        }
    }

    private static CharsetDecoder strict(Charset charset) {
        return charset.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);
    }

    /** The text of Character bytes; NULL for the binary charset, an unknown charset or bytes it cannot read. */
    private static String decoded(byte[] bytes, String charset) {
        Charset known = CHARSETS.get(charset.toLowerCase(Locale.ROOT));
        if (known == null) {
            return null;
        }
        try {
            return strict(known).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    /**
     * A double as Python's repr writes it: the shortest digits that read back as the same double (the nearest
     * such when there are several), fixed notation for decimal exponents -4 to 16, else scientific ('1e-05',
     * '1.5e+16'); 'nan', 'inf', '-inf', '-0.0'.
     */
    static String pythonRepr(double d) {
        if (Double.isNaN(d)) {
            return "nan";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        if (d == 0) {
            return 1 / d < 0 ? "-0.0" : "0.0";
        }
        double magnitude = Math.abs(d);
        BigDecimal shortest = shortestDigits(magnitude);
        String digits = shortest.unscaledValue().toString();
        int n = digits.length();
        int point = n - shortest.scale(); // the value is 0.<digits> times 10^point
        StringBuilder out = new StringBuilder(d < 0 ? "-" : "");
        if (point <= -4 || point > 16) {
            out.append(digits.charAt(0));
            if (n > 1) {
                out.append('.').append(digits, 1, n);
            }
            int exponent = point - 1;
            out.append('e').append(exponent < 0 ? '-' : '+');
            String e = Integer.toString(Math.abs(exponent));
            if (e.length() < 2) {
                out.append('0');
            }
            out.append(e);
        } else if (point <= 0) {
            out.append("0.").append("0".repeat(-point)).append(digits);
        } else if (point < n) {
            out.append(digits, 0, point).append('.').append(digits, point, n);
        } else {
            out.append(digits).append("0".repeat(point - n)).append(".0");
        }
        return out.toString();
    }

    /** The fewest significant digits that read back as `magnitude` (positive, finite), without trailing zeros. */
    private static BigDecimal shortestDigits(double magnitude) {
        BigDecimal exact = new BigDecimal(magnitude);
        for (int precision = 1; ; precision++) {
            BigDecimal nearest = exact.round(new MathContext(precision, RoundingMode.HALF_EVEN));
            if (nearest.doubleValue() == magnitude) {
                return nearest.stripTrailingZeros();
            }
            // near a power of two the doubles' spacing changes: a farther neighbour may read back when the nearest
            // does not
            for (RoundingMode mode : new RoundingMode[] {RoundingMode.FLOOR, RoundingMode.CEILING}) {
                BigDecimal other = exact.round(new MathContext(precision, mode));
                if (other.doubleValue() == magnitude) {
                    return other.stripTrailingZeros();
                }
            }
        }
    }
}
