// Produces a fixture's records with the real Java producer (kafka-clients 4.4.0), for
// scripts/gen-fixtures. Run as: java -cp '<libs>/*' ProduceFixture.java BOOTSTRAP TOPIC CODEC SPEC
//
// SPEC has one record a line, tab-separated: batch, timestamp_ms, key, value, headers, where key
// and value are base64 or "-" for null, and headers is "-" or comma-separated name:value pairs
// (name base64, value base64 or "-" for null). The producer flushes at every change of batch so
// each batch number becomes its own record batch on disk.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ProduceFixture {
  private static byte[] decode(String field) {
    return field.equals("-") ? null : Base64.getDecoder().decode(field);
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: ProduceFixture BOOTSTRAP TOPIC CODEC SPEC");
      System.exit(2);
    }
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, args[2]);
    // Batches are cut by flush(), never by time.
    props.put(ProducerConfig.LINGER_MS_CONFIG, "10000");
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      String batch = null;
      for (String line : Files.readAllLines(Path.of(args[3]), StandardCharsets.UTF_8)) {
        if (line.isEmpty()) continue;
        String[] f = line.split("\t", -1);
        if (batch != null && !batch.equals(f[0])) producer.flush();
        batch = f[0];
        List<Header> headers = new ArrayList<>();
        if (!f[4].equals("-")) {
          for (String pair : f[4].split(",")) {
            String[] kv = pair.split(":", 2);
            String name = new String(Base64.getDecoder().decode(kv[0]), StandardCharsets.UTF_8);
            headers.add(new RecordHeader(name, decode(kv[1])));
          }
        }
        sent.add(producer.send(new ProducerRecord<>(
            args[1], 0, Long.parseLong(f[1]), decode(f[2]), decode(f[3]), headers)));
      }
      producer.flush();
      for (Future<RecordMetadata> future : sent) {
        RecordMetadata md = future.get(); // throws if the broker rejected the record
        System.out.println(md.offset());
      }
    }
  }
}
