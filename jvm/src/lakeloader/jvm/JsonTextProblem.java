package lakeloader.jvm;

import org.apache.spark.sql.api.java.UDF1;

/**
 * Why a JSON message's bytes cannot stand for the text they spell, or null: the first of a control character JSON
 * does not allow unescaped (0x00-0x1F but tab, line feed and carriage return, JSON's whitespace) and an escaped
 * UTF-16 surrogate that is not half of a pair ({@code \ud800} alone, or {@code \udc00} without a high half before
 * it). JSON readers turn such an escape into '?' (Spark's does), so a value or a name would change without a word,
 * and no UTF-8 text of a database holds one.
 *
 * <p>A byte scan: in UTF-8 these characters and escapes are single bytes below 0x80 and no byte of a longer
 * character is below 0x80, so the bytes need no decoding; a backslash escaping a backslash is skipped with it, so
 * {@code \\ud800} (a backslash, then "ud800") is no escape. Registered by lakeloader.spark as the SQL function
 * {@code lakeloader_json_text_problem} (lakeloader.parse.framing's byte checks); it replaced a regular expression
 * over the text for the control characters, which tests/spark/test_jvm_functions.py holds it to.
 */
public final class JsonTextProblem implements UDF1<byte[], String> {
    private static final long serialVersionUID = 1L;
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    /** The reason for a control character, followed by its two upper-case hex digits and ")". */
    public static final String CONTROL = "message holds a control character JSON does not allow unescaped (byte 0x";

    /** The reason for a lone surrogate escape, followed by the escape as sent. */
    public static final String LONE_SURROGATE = "message holds an escaped UTF-16 surrogate that is not half of a pair: ";

    @Override
    public String call(byte[] bytes) {
        if (bytes == null) {
            return null;
        }
        int n = bytes.length;
        for (int i = 0; i < n; i++) {
            byte b = bytes[i];
            if (b >= 0 && b < 0x20 && b != '\t' && b != '\n' && b != '\r') {
                return CONTROL + HEX[b >> 4] + HEX[b & 0xF] + ")";
            }
            if (b != '\\' || i + 1 == n) {
                continue;
            }
            if (bytes[i + 1] == '\\') {
                i++; // an escaped backslash: the next byte is no escape's start
            } else if (bytes[i + 1] == 'u') {
                int unit = codeUnit(bytes, i + 2);
                if (unit >= 0xD800 && unit <= 0xDBFF) {
                    boolean escapeFollows = i + 7 < n && bytes[i + 6] == '\\' && bytes[i + 7] == 'u';
                    int low = escapeFollows ? codeUnit(bytes, i + 8) : -1;
                    if (low < 0xDC00 || low > 0xDFFF) {
                        return LONE_SURROGATE + new String(bytes, i, 6, java.nio.charset.StandardCharsets.US_ASCII);
                    }
                    i += 11; // the pair's last byte
                } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
                    return LONE_SURROGATE + new String(bytes, i, 6, java.nio.charset.StandardCharsets.US_ASCII);
                }
            }
        }
        return null;
    }

    /** The UTF-16 code unit of the four hex digits at {@code at}, or -1 where there are not four. */
    private static int codeUnit(byte[] bytes, int at) {
        if (at + 4 > bytes.length) {
            return -1;
        }
        int unit = 0;
        for (int k = at; k < at + 4; k++) {
            int digit = Character.digit(bytes[k], 16);
            if (digit < 0) {
                return -1;
            }
            unit = unit * 16 + digit;
        }
        return unit;
    }
}
