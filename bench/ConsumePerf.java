// The Java consumer (kafka-clients 4.4.0) reading one partition from its start to its end, for
// scripts/bench. Kafka's ConsumerPerformance subscribes through a consumer group; this assigns the
// partition instead, so a broker without groups is measured the same way. Run from source:
//   scripts/kafka-ref tool bench/ConsumePerf.java BOOTSTRAP TOPIC [PARTITION]
// It prints the summary line of bench/rdkafka_perf.cc's consume mode.
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ConsumePerf {
  public static void main(String[] args) {
    if (args.length < 2) {
      System.err.println("usage: ConsumePerf BOOTSTRAP TOPIC [PARTITION]");
      System.exit(2);
    }
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    props.put(
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    int partition = args.length > 2 ? Integer.parseInt(args[2]) : 0;
    TopicPartition tp = new TopicPartition(args[1], partition);
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
      long start = System.nanoTime();
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      Map<TopicPartition, Long> ends = consumer.endOffsets(List.of(tp), Duration.ofSeconds(30));
      long end = ends.get(tp);
      long records = 0;
      long bytes = 0;
      long first = 0;
      long last = 0;
      long idleSince = System.nanoTime();
      while (consumer.position(tp) < end) {
        ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(100));
        long now = System.nanoTime();
        if (polled.isEmpty()) {
          if (now - idleSince > 30_000_000_000L) {
            System.err.println("ConsumePerf: no record for 30 s after " + records);
            System.exit(1);
          }
          continue;
        }
        idleSince = now;
        if (records == 0) first = now;
        last = now;
        for (ConsumerRecord<byte[], byte[]> r : polled) {
          ++records;
          bytes += r.serializedValueSize() > 0 ? r.serializedValueSize() : 0;
          bytes += r.serializedKeySize() > 0 ? r.serializedKeySize() : 0;
        }
      }
      double secs = (last - first) / 1e9;
      if (records < 2 || secs <= 0) {
        System.err.println("ConsumePerf: consumed too few records to time");
        System.exit(1);
      }
      System.out.printf(
          "%d records consumed, %d bytes, %.3f s, %f records/sec (%.2f MB/sec), "
              + "%.3f s including connect.%n",
          records, bytes, secs, records / secs, bytes / secs / (1024.0 * 1024.0),
          (System.nanoTime() - start) / 1e9);
    }
  }
}
