// Share-group consume throughput (KIP-932) for scripts/bench: CONSUMERS KafkaShareConsumers
// (kafka-clients 4.4.0) in one share group read a topic's EXPECTED records, each acknowledging
// implicitly (the default: a record is accepted by the next poll). The group's
// share.auto.offset.reset is set to earliest first, so the records already there are read. Run
// from source:
//   scripts/kafka-ref tool bench/ShareConsumePerf.java BOOTSTRAP TOPIC GROUP CONSUMERS EXPECTED
// It prints the summary line of bench/rdkafka_perf.cc's consume mode (records counted over all
// consumers, timed from the first record any consumer received to the one that made EXPECTED),
// then "duplicates=N" (records delivered more than once, which a healthy run never has).
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ShareConsumePerf {
  static final AtomicLong records = new AtomicLong();
  static final AtomicLong bytes = new AtomicLong();
  static final AtomicLong first = new AtomicLong();
  static final AtomicLong last = new AtomicLong();
  static final AtomicLong duplicates = new AtomicLong();
  // Offsets seen per partition, to count duplicates (one bit a record).
  static final Map<Integer, BitSet> seen = new java.util.concurrent.ConcurrentHashMap<>();

  public static void main(String[] args) throws Exception {
    if (args.length < 5) {
      System.err.println("usage: ShareConsumePerf BOOTSTRAP TOPIC GROUP CONSUMERS EXPECTED");
      System.exit(2);
    }
    final String bootstrap = args[0];
    final String topic = args[1];
    final String group = args[2];
    final int consumers = Integer.parseInt(args[3]);
    final long expected = Long.parseLong(args[4]);
    long start = System.nanoTime();

    Properties adminProps = new Properties();
    adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (Admin admin = Admin.create(adminProps)) {
      ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
      admin
          .incrementalAlterConfigs(
              Map.of(
                  resource,
                  List.of(
                      new AlterConfigOp(
                          new ConfigEntry("share.auto.offset.reset", "earliest"),
                          AlterConfigOp.OpType.SET))))
          .all()
          .get();
    }

    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < consumers; ++i) {
      Thread t =
          new Thread(
              () -> {
                Properties props = new Properties();
                props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                props.put(
                    ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                    ByteArrayDeserializer.class.getName());
                props.put(
                    ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                    ByteArrayDeserializer.class.getName());
                try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
                  consumer.subscribe(List.of(topic));
                  long idleSince = System.nanoTime();
                  while (records.get() < expected) {
                    ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(100));
                    // Once another consumer made EXPECTED the run is over: records polled now
                    // include ones the closing consumers gave back (their unread buffers, released
                    // by close), which would count as duplicates that the timed run never had.
                    if (records.get() >= expected) break;
                    long now = System.nanoTime();
                    if (polled.isEmpty()) {
                      if (now - idleSince > 60_000_000_000L) {
                        System.err.println(
                            "ShareConsumePerf: no record for 60 s after " + records.get());
                        System.exit(1);
                      }
                      continue;
                    }
                    idleSince = now;
                    first.compareAndSet(0, now);
                    long b = 0;
                    for (ConsumerRecord<byte[], byte[]> r : polled) {
                      b += Math.max(0, r.serializedValueSize()) + Math.max(0, r.serializedKeySize());
                      BitSet bits = seen.computeIfAbsent(r.partition(), p -> new BitSet());
                      synchronized (bits) {
                        if (bits.get((int) r.offset())) duplicates.incrementAndGet();
                        bits.set((int) r.offset());
                      }
                    }
                    bytes.addAndGet(b);
                    if (records.addAndGet(polled.count()) >= expected) last.compareAndSet(0, now);
                  }
                  // The last poll's records are acknowledged by close (implicit mode).
                }
              });
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) t.join();
    double secs = (last.get() - first.get()) / 1e9;
    if (records.get() < 2 || secs <= 0) {
      System.err.println("ShareConsumePerf: consumed too few records to time");
      System.exit(1);
    }
    System.out.printf(
        "%d records consumed, %d bytes, %.3f s, %f records/sec (%.2f MB/sec), "
            + "%.3f s including connect.%n",
        records.get(), bytes.get(), secs, records.get() / secs,
        bytes.get() / secs / (1024.0 * 1024.0), (System.nanoTime() - start) / 1e9);
    System.out.printf("duplicates=%d consumers=%d%n", duplicates.get(), consumers);
  }
}
