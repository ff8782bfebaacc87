// Reads partition 0 of a topic from its start to its end offset with the Java KafkaConsumer
// (assign + seekToBeginning, no group) and prints one line per record: "OFFSET KEY VALUE", a null
// key or value printed as NULL (as kcat -Z does), then "end OFFSET". For the log cleaner's
// comparison with Kafka 4.4.0 (tests/log_cleaner_kafka_test.cc). Run with the Kafka 4.4.0 jars:
//   java -cp "$(scripts/kafka-ref libs)/*" tests/java/CompactedRead.java BOOTSTRAP TOPIC
// Exits 1 when the end offset is not reached within 40 s.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class CompactedRead {
  static String show(byte[] b) {
    return b == null ? "NULL" : new String(b, StandardCharsets.UTF_8);
  }

  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    p.put("enable.auto.commit", "false");
    StringBuilder out = new StringBuilder();
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
      TopicPartition tp = new TopicPartition(args[1], 0);
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      long end = c.endOffsets(List.of(tp)).get(tp);
      long deadline = System.currentTimeMillis() + 40000;
      // A compacted log has gaps, so the position (not a record count) says when it is all read.
      while (c.position(tp) < end) {
        if (System.currentTimeMillis() > deadline) {
          System.out.println("java: position " + c.position(tp) + " short of the end " + end);
          System.exit(1);
        }
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
          out.append(r.offset()).append(' ').append(show(r.key())).append(' ')
              .append(show(r.value())).append('\n');
        }
      }
      out.append("end ").append(end).append('\n');
    }
    System.out.print(out);
  }
}
