// The Java 4.4 clients over a list of security configurations in one JVM run (a JVM start costs
// seconds of CPU; one per configuration would cost a minute). Run with the Kafka 4.4.0 jars:
//   java -cp "$(scripts/kafka-ref libs)/*" tests/java/SecurityClients.java CASES_FILE
// CASES_FILE holds blocks separated by blank lines; a block's first line is "NAME ACTION", then
// client properties (key=value, bootstrap.servers among them). ACTION is
//   round-trip   KafkaProducer sends 3 records to topic NAME, KafkaConsumer reads them back:
//                prints "NAME ok produced=3 consumed=3 [one, two, three]"
//   refused      the same; prints "NAME refused <simple name of the authentication exception>"
//                when the clients fail with one (an AuthenticationException or a cause that is)
// Any other outcome prints "NAME error <exception>": the C++ test asserts each line.
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SecurityClients {
  public static void main(String[] args) throws Exception {
    String text = Files.readString(Path.of(args[0]));
    for (String block : text.split("\n\\s*\n")) {
      String[] lines = block.strip().split("\n");
      if (lines.length == 0 || lines[0].isBlank()) continue;
      String[] head = lines[0].trim().split("\\s+");
      Properties p = new Properties();
      for (int i = 1; i < lines.length; i++) {
        int eq = lines[i].indexOf('=');
        if (eq > 0) p.put(lines[i].substring(0, eq).trim(), lines[i].substring(eq + 1).trim());
      }
      String result;
      try {
        result = roundTrip(p, head[0]);
      } catch (Throwable t) {
        AuthenticationException auth = authentication(t);
        result = auth != null && head[1].equals("refused")
            ? "refused " + auth.getClass().getSimpleName()
            : "error " + t + (auth != null ? " (authentication: " + auth + ")" : "");
      }
      System.out.println(head[0] + " " + result);
      System.out.flush();
    }
  }

  // The AuthenticationException in t's cause chain, or null.
  static AuthenticationException authentication(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof AuthenticationException a) return a;
    }
    return null;
  }

  static String roundTrip(Properties common, String topic) throws Exception {
    Properties pp = new Properties();
    pp.putAll(common);
    pp.put("key.serializer", StringSerializer.class.getName());
    pp.put("value.serializer", StringSerializer.class.getName());
    pp.put("max.block.ms", "15000");
    pp.put("delivery.timeout.ms", "15000");
    pp.put("request.timeout.ms", "10000");
    List<String> values = List.of("one", "two", "three");
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
      for (String v : values) producer.send(new ProducerRecord<>(topic, 0, null, v)).get();
    }
    Properties cp = new Properties();
    cp.putAll(common);
    cp.put("key.deserializer", StringDeserializer.class.getName());
    cp.put("value.deserializer", StringDeserializer.class.getName());
    cp.put("enable.auto.commit", "false");
    List<String> got = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
      TopicPartition tp = new TopicPartition(topic, 0);
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      long deadline = System.currentTimeMillis() + 15000;
      while (got.size() < values.size() && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          got.add(r.value());
        }
      }
    }
    return "ok produced=" + values.size() + " consumed=" + got.size() + " " + got;
  }
}
