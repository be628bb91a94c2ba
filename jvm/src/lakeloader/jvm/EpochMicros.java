package lakeloader.jvm;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.api.java.UDF2;

/**
 * Epoch text ('1606233662.012345', '-1.5') to microseconds, given how many digits of the fraction make a
 * microsecond (6 for seconds, 3 for milliseconds, 0 for microseconds): the digits beyond a microsecond are
 * truncated; null for text that is not a plain number or whose microseconds overflow a bigint.
 *
 * <p>Registered by lakeloader.spark as the SQL function {@code lakeloader_epoch_micros}
 * (lakeloader.parse.formats.common.epoch_micros). It replaced Spark SQL expressions that matched the same regular
 * expression once for the test and once per part, at each use of the result: an OMS message's event time alone
 * matched it a dozen times and made its parse's generated method too long for the JIT to compile.
 * tests/spark/test_jvm_functions.py holds it to those expressions. The pattern is the one they used, so a text
 * the two accept is the same text (Java's {@code $} also matches before a final line terminator).
 */
public final class EpochMicros implements UDF2<String, Integer, Long> {
    private static final long serialVersionUID = 1L;
    private static final Pattern EPOCH = Pattern.compile("^(-?)([0-9]+)(?:\\.([0-9]*))?$");
    private static final long[] POWERS = {1L, 10L, 100L, 1_000L, 10_000L, 100_000L, 1_000_000L};

    @Override
    public Long call(String text, Integer fractionDigits) {
        return text == null || fractionDigits == null ? null : micros(text, fractionDigits);
    }

    /** The microseconds of epoch text (`call`); a JVM reader that has the text calls it directly. */
    static Long micros(String text, int fractionDigits) {
        Matcher m = EPOCH.matcher(text);
        if (!m.find()) {
            return null;
        }
        long micros;
        try {
            micros = Math.multiplyExact(Long.parseLong(m.group(2)), POWERS[fractionDigits]);
            String fraction = m.group(3) == null ? "" : m.group(3);
            if (fractionDigits > 0) {
                long part = 0;
                for (int i = 0; i < fractionDigits; i++) {
                    part = part * 10 + (i < fraction.length() ? fraction.charAt(i) - '0' : 0);
                }
                micros = Math.addExact(micros, part);
            }
        } catch (ArithmeticException | NumberFormatException overflow) {
            return null;
        }
        return m.group(1).isEmpty() ? micros : -micros;
    }
}
