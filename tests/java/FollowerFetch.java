// Kafka 4.4.0's KafkaConsumer with client.rack (KIP-392 follower fetching), for
// tests/cluster_replication_test.cc (the twin of tests/python/follower_fetch.py):
//   java -cp "$(scripts/kafka-ref libs)/*" tests/java/FollowerFetch.java BOOTSTRAP TOPIC RACK COUNT
// Reads partition 0 of TOPIC from offset 0 (assign, no group) until it has COUNT records, then
// prints "records N" and "preferred-read-replica R": the consumer's own gauge of the replica the
// leader named for the partition (-1: none, it reads the leader). Exits 0 with COUNT records read
// in order, 1 otherwise; bounded by 20 s.
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class FollowerFetch {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], topic = args[1], rack = args[2];
    int count = Integer.parseInt(args[3]);
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("client.rack", rack);
    p.put("enable.auto.commit", "false");
    p.put("fetch.max.wait.ms", "100");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    TopicPartition tp = new TopicPartition(topic, 0);
    List<Long> offsets = new ArrayList<>();
    Object preferred = "?";
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
      c.assign(List.of(tp));
      c.seek(tp, 0);
      long deadline = System.nanoTime() + 20_000_000_000L;
      while (offsets.size() < count && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
          offsets.add(r.offset());
        }
      }
      for (Map.Entry<MetricName, ? extends Metric> m : c.metrics().entrySet()) {
        MetricName n = m.getKey();
        if (n.name().equals("preferred-read-replica") && topic.equals(n.tags().get("topic"))
            && "0".equals(n.tags().get("partition"))) {
          preferred = m.getValue().metricValue();
        }
      }
    }
    System.out.println("records " + offsets.size());
    System.out.println("preferred-read-replica " + preferred);
    List<Long> expected = new ArrayList<>();
    for (long i = 0; i < count; ++i) expected.add(i);
    System.exit(offsets.equals(expected) ? 0 : 1);
  }
}
