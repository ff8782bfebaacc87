// Kafka 4.4.0's Java clients against a cluster whose partition leader is killed, for
// tests/cluster_failover_test.cc (the twin of tests/python/failover_clients.py):
//   java -cp "$(scripts/kafka-ref libs)/*" tests/java/FailoverClients.java MODE ...
//
//   produce BOOTSTRAP TOPIC PARTITIONS SECONDS ACKED_FILE
//     a KafkaProducer (enable.idempotence=true, acks=all) sends "v<n>" to partition n % PARTITIONS
//     every 4 ms for SECONDS, then flushes. Prints "started" once 50 records are acknowledged
//     (the test then kills the leader), writes each acknowledged record as "partition offset
//     value" to ACKED_FILE and prints "acked N failed F longest-gap G ms" (G: the longest time
//     between two acknowledgements). Exits 0 when every record was acknowledged.
//   consume BOOTSTRAP TOPIC GROUP ACKED_FILE SECONDS
//     a KafkaConsumer in GROUP (earliest) reads until every record of ACKED_FILE was read or
//     SECONDS passed. Exits 0 when each acknowledged record was read exactly once at its
//     acknowledged offset, every partition's offsets came in rising order and nothing unknown
//     was read; else prints what went wrong and exits 1.
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class FailoverClients {
  public static void main(String[] args) throws Exception {
    System.exit(args[0].equals("produce") ? produce(args) : consume(args));
  }

  static int produce(String[] args) throws Exception {
    String bootstrap = args[1], topic = args[2], ackedFile = args[5];
    int partitions = Integer.parseInt(args[3]);
    long millis = (long) (Double.parseDouble(args[4]) * 1000);
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("enable.idempotence", "true");
    p.put("acks", "all");
    p.put("linger.ms", "5");
    p.put("delivery.timeout.ms", "40000");
    p.put("request.timeout.ms", "5000");
    p.put("retry.backoff.ms", "50");
    p.put("reconnect.backoff.ms", "50");
    p.put("reconnect.backoff.max.ms", "500");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    List<String> acked = Collections.synchronizedList(new ArrayList<>());
    List<String> failed = Collections.synchronizedList(new ArrayList<>());
    AtomicLong lastAck = new AtomicLong(0), longestGap = new AtomicLong(0);
    long n = 0;
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      long start = System.nanoTime();
      boolean announced = false;
      while (System.nanoTime() - start < millis * 1_000_000L) {
        String value = "v" + n;
        producer.send(
            new ProducerRecord<>(topic, (int) (n % partitions), null, value),
            (m, e) -> {
              if (e != null) {
                failed.add(value + ": " + e);
                return;
              }
              long now = System.nanoTime(), last = lastAck.getAndSet(now);
              if (last != 0) longestGap.accumulateAndGet(now - last, Math::max);
              acked.add(m.partition() + " " + m.offset() + " " + value);
            });
        ++n;
        if (!announced && acked.size() >= 50) {
          System.out.println("started");
          System.out.flush();
          announced = true;
        }
        Thread.sleep(4);
      }
      producer.flush();
    }
    Files.write(Path.of(ackedFile), acked);
    System.out.println("acked " + acked.size() + " failed " + failed.size() + " longest-gap "
        + longestGap.get() / 1_000_000 + " ms");
    for (int i = 0; i < Math.min(10, failed.size()); ++i) {
      System.out.println("failed: " + failed.get(i));
    }
    return failed.isEmpty() && acked.size() == n ? 0 : 1;
  }

  static int consume(String[] args) throws Exception {
    String bootstrap = args[1], topic = args[2], group = args[3], ackedFile = args[4];
    long deadline = System.nanoTime() + (long) (Double.parseDouble(args[5]) * 1e9);
    Map<String, String> acked = new HashMap<>();  // value -> "partition/offset"
    for (String line : Files.readAllLines(Path.of(ackedFile))) {
      String[] f = line.split(" ");
      acked.put(f[2], f[0] + "/" + f[1]);
    }
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("group.id", group);
    p.put("auto.offset.reset", "earliest");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    Map<String, Integer> seen = new HashMap<>();
    Map<Integer, Long> last = new HashMap<>();
    List<String> problems = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      consumer.subscribe(List.of(topic));
      while (System.nanoTime() < deadline && !seen.keySet().containsAll(acked.keySet())) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
          String at = r.partition() + "/" + r.offset();
          if (seen.merge(r.value(), 1, Integer::sum) > 1) {
            problems.add("duplicate: " + r.value() + " read again at " + at);
          }
          Long before = last.put(r.partition(), r.offset());
          if (before != null && r.offset() <= before) {
            problems.add("out of order: " + at + " read after " + r.partition() + "/" + before);
          }
          String ackedAt = acked.get(r.value());
          if (ackedAt == null) {
            problems.add("unknown: " + r.value() + " at " + at);
          } else if (!ackedAt.equals(at)) {
            problems.add("moved: " + r.value() + " acknowledged at " + ackedAt + ", read at " + at);
          }
        }
      }
    }
    int read = 0;
    for (Map.Entry<String, String> e : acked.entrySet()) {
      if (seen.containsKey(e.getKey())) {
        ++read;
      } else {
        problems.add("missing: " + e.getKey() + " acknowledged at " + e.getValue());
      }
    }
    System.out.println("read " + read + " of " + acked.size() + " acknowledged, " + problems.size()
        + " problems");
    for (int i = 0; i < Math.min(20, problems.size()); ++i) System.out.println(problems.get(i));
    return problems.isEmpty() ? 0 : 1;
  }
}
