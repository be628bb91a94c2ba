package lakeloader.jvm;

import org.apache.spark.sql.api.java.UDF1;

/**
 * JSON text with every number token turned into a string token holding the same characters, so that Spark's
 * JSON reader keeps a number's text exactly as sent (it renders a number it reads into a string field through a
 * double: "1.10" becomes "1.1", a 50-digit number loses digits, "-0" its sign).
 *
 * <p>One left-to-right scan: string tokens are skipped whole (digits inside them are never touched), a number
 * token (JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?) is quoted, anything else is copied.
 * Text that is no valid JSON is quoted as far as it reads: an unterminated string, or a backslash at a line
 * terminator inside a string, stops the quoting there (the JSON reader rejects such text anyway). Registered
 * by lakeloader.spark as the SQL function {@code lakeloader_exact_numbers}; it replaced a regular expression
 * that did the same several times slower, and tests/spark/test_jvm_functions.py holds it to that expression.
 */
public final class ExactNumbers implements UDF1<String, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String call(String text) {
        if (text == null) {
            return null;
        }
        final int n = text.length();
        StringBuilder out = null;
        int copied = 0;
        int i = 0;
        while (i < n) {
            char c = text.charAt(i);
            if (c == '"') {
                i = stringEnd(text, i + 1, n);
                if (i < 0) {
                    break;
                }
            } else if (isDigit(c) || (c == '-' && i + 1 < n && isDigit(text.charAt(i + 1)))) {
                int end = numberEnd(text, i, n);
                if (out == null) {
                    out = new StringBuilder(n + 32);
                }
                out.append(text, copied, i).append('"').append(text, i, end).append('"');
                copied = end;
                i = end;
            } else {
                i++;
            }
        }
        return out == null ? text : out.append(text, copied, n).toString();
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    /** The index after the closing quote of a string token whose content starts at i; -1 when it has none. */
    private static int stringEnd(String s, int i, int n) {
        while (i < n) {
            char c = s.charAt(i);
            if (c == '"') {
                return i + 1;
            }
            if (c == '\\') {
                if (i + 1 >= n || isLineTerminator(s.charAt(i + 1))) {
                    return -1;
                }
                i += 2;
            } else {
                i++;
            }
        }
        return -1;
    }

    private static boolean isLineTerminator(char c) {
        return c == '\n' || c == '\r' || c == '\u0085' || c == '\u2028' || c == '\u2029';
    }

    /** The index after the number token starting at i (a digit, or '-' before one). */
    private static int numberEnd(String s, int i, int n) {
        if (s.charAt(i) == '-') {
            i++;
        }
        if (s.charAt(i) == '0') {
            i++;
        } else {
            while (i < n && isDigit(s.charAt(i))) {
                i++;
            }
        }
        if (i + 1 < n && s.charAt(i) == '.' && isDigit(s.charAt(i + 1))) {
            i += 2;
            while (i < n && isDigit(s.charAt(i))) {
                i++;
            }
        }
        if (i < n && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            int j = i + 1;
            if (j < n && (s.charAt(j) == '+' || s.charAt(j) == '-')) {
                j++;
            }
            if (j < n && isDigit(s.charAt(j))) {
                while (j < n && isDigit(s.charAt(j))) {
                    j++;
                }
                i = j;
            }
        }
        return i;
    }
}
