// Sends the keys key-0 .. key-(N-1) with the Java 4.4 KafkaProducer (default partitioner) and
// prints where each landed, one "KEY PARTITION" line per key, for comparison with tarn's
// producer (tests/producer_test.cc):
//   java -cp "$(scripts/kafka-ref libs)/*" tests/java/KeyPartitions.java HOST:PORT TOPIC N
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

public class KeyPartitions {
  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("delivery.timeout.ms", "30000");
    p.put("request.timeout.ms", "10000");
    int n = Integer.parseInt(args[2]);
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      List<Future<RecordMetadata>> futures = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        futures.add(producer.send(new ProducerRecord<>(args[1], "key-" + i, "java-" + i)));
      }
      for (int i = 0; i < n; i++) {
        System.out.println("key-" + i + " " + futures.get(i).get().partition());
      }
    }
  }
}
