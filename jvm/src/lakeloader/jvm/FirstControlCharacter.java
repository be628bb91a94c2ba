package lakeloader.jvm;

import org.apache.spark.sql.api.java.UDF1;

/**
 * The first control character JSON does not allow unescaped in a message's bytes (0x00-0x1F but tab, line feed
 * and carriage return, JSON's whitespace), as two upper-case hex digits; null when there is none.
 *
 * <p>A byte scan: in UTF-8 these characters are single bytes below 0x20 and no byte of a longer character is
 * below 0x80, so the bytes need no decoding. Registered by lakeloader.spark as the SQL function
 * {@code lakeloader_first_control_character} (lakeloader.parse.framing's byte checks); it replaced a regular
 * expression over the text, which tests/spark/test_jvm_functions.py holds it to.
 */
public final class FirstControlCharacter implements UDF1<byte[], String> {
    private static final long serialVersionUID = 1L;
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    @Override
    public String call(byte[] bytes) {
        if (bytes == null) {
            return null;
        }
        for (byte b : bytes) {
            if (b >= 0 && b < 0x20 && b != '\t' && b != '\n' && b != '\r') {
                return new String(new char[] {HEX[b >> 4], HEX[b & 0xF]});
            }
        }
        return null;
    }
}
