// Prints Kafka's keyed partitioning for a fixed set of keys, computed by the real Java client,
// as the golden file tests/fixtures/client/murmur2.txt that tarn's partitioner test checks.
// Run: java -cp '<dir holding kafka-clients-4.4.0.jar>/*' tests/java/Murmur2Golden.java
// Output, one key a line: <key as hex, "-" when empty> <murmur2 as signed int32>
//                         <partitionForKey for each of PARTITION_COUNTS>
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.utils.Utils;

public class Murmur2Golden {
  static final int[] PARTITION_COUNTS = {1, 2, 3, 7, 12, 100, 1000, 2147483647};

  public static void main(String[] args) {
    List<byte[]> keys = new ArrayList<>();
    keys.add(new byte[0]);
    // Lengths 1..100, so every remainder of length % 4 and many block counts are covered.
    for (int length = 1; length <= 100; length++) {
      byte[] key = new byte[length];
      for (int i = 0; i < length; i++) key[i] = (byte) ('a' + (i * 7 + length) % 26);
      keys.add(key);
    }
    // Binary: every byte value once, including those >= 0x80 (sign extension in Java).
    for (int b = 0; b < 256; b++) keys.add(new byte[] {(byte) b});
    byte[] all = new byte[256];
    for (int i = 0; i < 256; i++) all[i] = (byte) (255 - i);
    keys.add(all);
    keys.add(new byte[] {0, 0, 0, 0});
    keys.add(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff});
    keys.add(new byte[] {(byte) 0x80, 0x7f, (byte) 0x80, 0x7f, (byte) 0x80, 0x7f, (byte) 0x80});
    // UTF-8 text as a StringSerializer would produce it.
    String[] texts = {"key", "hello world", "user-1", "user-2", "user-42", "0", "1",
        "\u00e9t\u00e9", "\u65e5\u672c\u8a9e", "\uD83D\uDE80 rocket", "\u0000", "a\u0000b",
        "The quick brown fox jumps over the lazy dog"};
    for (String text : texts) keys.add(text.getBytes(StandardCharsets.UTF_8));

    StringBuilder out = new StringBuilder();
    for (byte[] key : keys) {
      out.append(key.length == 0 ? "-" : hex(key)).append(' ').append(Utils.murmur2(key));
      for (int n : PARTITION_COUNTS) out.append(' ').append(BuiltInPartitioner.partitionForKey(key, n));
      out.append('\n');
    }
    System.out.print(out);
  }

  static String hex(byte[] bytes) {
    StringBuilder sb = new StringBuilder();
    for (byte b : bytes) sb.append(String.format("%02x", b & 0xff));
    return sb.toString();
  }
}
