// Consumes partition 0 of a topic with the Java KafkaConsumer (assign + seekToBeginning, no
// group) and compares every record with a records.json fixture: offset, timestamp, key, value,
// headers (base64 or null). Run with the Kafka 4.4.0 jars on the class path:
//   java -cp "$(scripts/kafka-ref libs)/*" tests/java/ConsumeCheck.java BOOTSTRAP TOPIC JSON [TOPIC JSON]...
// Prints "java: TOPIC: N records match" per topic and exits 0, or prints the first difference and
// exits 1.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ConsumeCheck {
  static byte[] b64(JsonNode n) {
    return n == null || n.isNull() ? null : Base64.getDecoder().decode(n.asText());
  }

  static String show(byte[] b) {
    return b == null ? "null" : Arrays.toString(b);
  }

  public static void main(String[] args) throws Exception {
    for (int i = 1; i + 1 < args.length; i += 2) check(args[0], args[i], args[i + 1]);
  }

  static void check(String bootstrap, String topic, String json) throws Exception {
    JsonNode doc = new ObjectMapper().readTree(new File(json));
    JsonNode want = doc.get("records");
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    p.put("enable.auto.commit", "false");
    List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
      TopicPartition tp = new TopicPartition(topic, 0);
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      long deadline = System.currentTimeMillis() + 30000;
      while (got.size() < want.size() && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) got.add(r);
      }
    }
    if (got.size() != want.size()) {
      System.out.println("java: " + topic + ": got " + got.size() + " records, want " + want.size());
      System.exit(1);
    }
    for (int i = 0; i < got.size(); i++) {
      ConsumerRecord<byte[], byte[]> g = got.get(i);
      JsonNode w = want.get(i);
      String where = "java: " + topic + ": offset " + w.get("offset").asLong() + ": ";
      if (g.offset() != w.get("offset").asLong()) fail(where + "offset " + g.offset());
      if (g.timestamp() != w.get("timestamp").asLong()) fail(where + "timestamp " + g.timestamp());
      if (!Arrays.equals(g.key(), b64(w.get("key")))) fail(where + "key " + show(g.key()));
      if (!Arrays.equals(g.value(), b64(w.get("value")))) fail(where + "value " + show(g.value()));
      Header[] hs = g.headers().toArray();
      JsonNode wh = w.get("headers");
      if (hs.length != wh.size()) fail(where + "header count " + hs.length);
      for (int h = 0; h < hs.length; h++) {
        if (!hs[h].key().equals(wh.get(h).get("key").asText())) fail(where + "header key " + hs[h].key());
        if (!Arrays.equals(hs[h].value(), b64(wh.get(h).get("value")))) {
          fail(where + "header value " + show(hs[h].value()));
        }
      }
    }
    System.out.println("java: " + topic + ": " + got.size() + " records match");
  }

  static void fail(String message) {
    System.out.println(message);
    System.exit(1);
  }
}
