// Lets Kafka 4.4.0's own NetworkClient do the ApiVersions handshake with a broker: v5 to the
// bootstrap address with no cluster or node id, then, once Metadata has named the broker, v5 to
// that node carrying the cluster id and node id Metadata gave (KIP-1242; the producer sends them
// only with metadata.cluster.check.enable=true, off by default). The producer sends one record
// to topic api-versions-probe (auto-created) so that it connects to the partition leader. The
// test reads NetworkClient's DEBUG log.
// Run: java -Dlog4j2.configurationFile=F -cp '<kafka libs>/*' ApiVersionsProbe.java host:port
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class ApiVersionsProbe {
  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    p.put("request.timeout.ms", "10000");
    p.put("delivery.timeout.ms", "20000");
    p.put("max.block.ms", "20000");
    p.put("metadata.cluster.check.enable", "true");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      var md = producer.send(new ProducerRecord<>("api-versions-probe", "k", "v")).get();
      System.out.println("produced: offset " + md.offset());
    } catch (Exception e) {
      System.out.println("produce: " + e);
    }
  }
}
