// The Java side of `make interop`: kafka-clients 4.4.0's KafkaProducer and KafkaConsumer, driven
// by scripts/interop with the same records against Apache Kafka and tarn.
//
//   java -cp <kafka libs>/*:<classes> InteropClient produce key=value...
//   java -cp ... InteropClient consume bootstrap=H:P topic=T count=N
//
// produce keys: bootstrap, topic, groups (records per flush, e.g. 3,2), compression, acks,
// idempotence (true/false), base_ts (fixed CreateTime of record 0; record i gets base_ts + i),
// value (hello | json), header_first (true: record 0 carries trace=abc), batch_size, linger_ms.
// It prints one `acked: partition P offset O` line per record, in send order; with count=N it
// then consumes as `consume` does.
// consume prints one `record: offset O key K value V ts T headers H` line per record.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class InteropClient {
  static String value(String kind, int i) {
    if (kind.equals("json")) {
      return "{\"id\":" + i + ",\"user\":\"user-" + (i % 50) + "\",\"event\":\"page_view\","
          + "\"path\":\"/products/" + (i % 200) + "\",\"ok\":true}";
    }
    return "hello-" + i;
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (int i = 1; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      a.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    if (args[0].equals("produce")) {
      produce(a);
      if (a.containsKey("count")) {
        consume(a); // one JVM start for both halves of a round trip
      }
    } else {
      consume(a);
    }
  }

  static void produce(Map<String, String> a) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", a.get("bootstrap"));
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("compression.type", a.getOrDefault("compression", "none"));
    p.put("acks", a.getOrDefault("acks", "all"));
    p.put("enable.idempotence", a.getOrDefault("idempotence", "true"));
    p.put("batch.size", a.getOrDefault("batch_size", "16384"));
    // flush() sends at once; a long linger keeps a flush group in one batch on both brokers.
    // (delivery.timeout.ms must be at least linger.ms + request.timeout.ms.)
    p.put("linger.ms", a.getOrDefault("linger_ms", "10000"));
    p.put("max.request.size", "4194304");
    p.put("delivery.timeout.ms", "30000");
    p.put("request.timeout.ms", "10000");
    long baseTs = Long.parseLong(a.get("base_ts"));
    String topic = a.get("topic");
    String kind = a.getOrDefault("value", "hello");
    boolean headerFirst = Boolean.parseBoolean(a.getOrDefault("header_first", "true"));
    List<Future<RecordMetadata>> fs = new ArrayList<>();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      int i = 0;
      for (String g : a.get("groups").split(",")) {
        int n = Integer.parseInt(g);
        for (int j = 0; j < n; j++, i++) {
          ProducerRecord<String, String> r =
              new ProducerRecord<>(topic, 0, baseTs + i, "k" + i, value(kind, i));
          if (i == 0 && headerFirst) {
            r.headers().add("trace", "abc".getBytes(StandardCharsets.UTF_8));
          }
          fs.add(producer.send(r));
        }
        producer.flush();
      }
      for (Future<RecordMetadata> f : fs) {
        RecordMetadata m = f.get();
        System.out.println("acked: partition " + m.partition() + " offset " + m.offset());
      }
    }
  }

  static void consume(Map<String, String> a) {
    Properties p = new Properties();
    p.put("bootstrap.servers", a.get("bootstrap"));
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    int count = Integer.parseInt(a.get("count"));
    TopicPartition tp = new TopicPartition(a.get("topic"), 0);
    int seen = 0;
    long deadline = System.currentTimeMillis() + 20000;
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      while (seen < count && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
          StringBuilder h = new StringBuilder();
          for (Header x : r.headers()) {
            h.append(x.key()).append('=').append(new String(x.value(), StandardCharsets.UTF_8))
                .append(';');
          }
          System.out.println("record: offset " + r.offset() + " key " + r.key() + " value "
              + r.value() + " ts " + r.timestamp() + " headers " + h);
          seen++;
        }
      }
      System.out.println("end: position " + consumer.position(tp));
    }
  }
}
