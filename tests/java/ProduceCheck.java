// Sends N records with the Java 4.4 KafkaProducer and prints what was acknowledged:
//   java -cp "$(scripts/kafka-ref libs)/*" tests/java/ProduceCheck.java HOST:PORT TOPIC N ACKS IDEMPOTENCE CODEC
// Prints "acked <count> offsets <min>-<max>" and exits 0 when every record was acknowledged.
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

public class ProduceCheck {
  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    p.put("acks", args[3]);
    p.put("enable.idempotence", args[4]);
    p.put("compression.type", args[5]);
    p.put("linger.ms", "5");
    p.put("delivery.timeout.ms", "30000");
    p.put("request.timeout.ms", "10000");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    int n = Integer.parseInt(args[2]);
    long min = Long.MAX_VALUE, max = -1;
    int acked = 0;
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      List<Future<RecordMetadata>> futures = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        futures.add(producer.send(new ProducerRecord<>(args[1], 0, "key-" + i, "value-" + i + "-payload")));
      }
      producer.flush();
      for (Future<RecordMetadata> f : futures) {
        RecordMetadata m = f.get();
        acked++;
        if (m.hasOffset()) {
          min = Math.min(min, m.offset());
          max = Math.max(max, m.offset());
        }
      }
    }
    System.out.println("acked " + acked + " offsets " + min + "-" + max);
  }
}
