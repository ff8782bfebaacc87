// Share-group scenarios with Kafka 4.4.0's KafkaShareConsumer, in one JVM
// (tests/share_groups_test.cc). Each scenario uses its own topic and group and prints one line
// the test checks:
//   all:     three consumers in implicit mode on one single-partition topic: every record once
//   release: explicit RELEASE brings the record back with delivery count 2
//   reject:  explicit REJECT archives the record: never delivered again
//   lock:    records acquired by a consumer that stops polling go to another after the lock
//   close:   records acquired by a consumer that closes go to another at once
//   poison:  a record released at every delivery is archived at the delivery-count limit
//   throttle: records near the delivery-count limit come in halving numbers, then alone
// Usage: java -cp '<kafka libs>/*' ShareConsume.java BOOTSTRAP LOCK_MS DELIVERY_LIMIT PREFIX
//        [SCENARIO,...]   (default: all seven, in the order above)
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class ShareConsume {
  static String bootstrap;
  static String prefix;
  static Admin admin;
  // How long "nothing comes back" is watched: past the acquisition lock, so a record whose lock
  // expired would have been redelivered by then.
  static long quiet;

  static void topic(String name, int records) throws Exception {
    topic(name, records, 10, 0);  // many small batches
  }

  // A topic of `records` records, flushed every `flushEvery` (with a long linger.ms, one batch
  // per flush).
  static void topic(String name, int records, int flushEvery, int lingerMs) throws Exception {
    admin.createTopics(List.of(new NewTopic(name, 1, (short) 1))).all().get();
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.LINGER_MS_CONFIG, lingerMs);
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < records; ++i) {
        producer.send(new ProducerRecord<>(name, "k" + i, "v" + i));
        if (i % flushEvery == flushEvery - 1) producer.flush();
      }
      producer.flush();
    }
  }

  static void earliest(String group) throws Exception {
    ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group);
    admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(
        new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
        .all().get();
  }

  // The group's own acquisition lock (group config share.record.lock.duration.ms): the broker's
  // is short for the lock scenario, and a loaded machine may take longer than it between polls.
  static void lockMs(String group, int ms) throws Exception {
    ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group);
    admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(
        new ConfigEntry("share.record.lock.duration.ms", Integer.toString(ms)),
        AlterConfigOp.OpType.SET))))
        .all().get();
  }

  static KafkaShareConsumer<String, String> consumer(String group, boolean explicit, int max) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, max);
    if (explicit) p.put("share.acknowledgement.mode", "explicit");
    return new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer());
  }

  static List<ConsumerRecord<String, String>> pollFor(
      KafkaShareConsumer<String, String> c, int want, long ms) {
    List<ConsumerRecord<String, String>> out = new ArrayList<>();
    long end = System.currentTimeMillis() + ms;
    while (out.size() < want && System.currentTimeMillis() < end) {
      for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) out.add(r);
    }
    return out;
  }

  static void all() throws Exception {
    String t = prefix + "-all", g = prefix + "-g-all";
    final int n = 300;
    topic(t, n);
    earliest(g);
    // Each record once among three consumers: no lock may expire between two polls.
    lockMs(g, 15000);
    Map<Long, Integer> seen = new ConcurrentHashMap<>();
    AtomicInteger duplicates = new AtomicInteger();
    AtomicInteger total = new AtomicInteger();
    int[] per = new int[3];
    ExecutorService pool = Executors.newFixedThreadPool(3);
    List<Future<?>> done = new ArrayList<>();
    for (int i = 0; i < 3; ++i) {
      final int me = i;
      done.add(pool.submit(() -> {
        try (KafkaShareConsumer<String, String> c = consumer(g, false, 10)) {
          c.subscribe(List.of(t));
          long end = System.currentTimeMillis() + 20000;
          while (total.get() < n && System.currentTimeMillis() < end) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
              if (seen.put(r.offset(), me) != null) duplicates.incrementAndGet();
              total.incrementAndGet();
              per[me]++;
            }
          }
        }
        return null;
      }));
    }
    for (Future<?> f : done) f.get();
    pool.shutdown();
    System.out.println("all: received=" + total.get() + " distinct=" + seen.size() + " duplicates="
        + duplicates.get() + " per-consumer=" + per[0] + "," + per[1] + "," + per[2]);
  }

  static void release() throws Exception {
    String t = prefix + "-release", g = prefix + "-g-release";
    topic(t, 1);
    earliest(g);
    try (KafkaShareConsumer<String, String> c = consumer(g, true, 500)) {
      c.subscribe(List.of(t));
      var first = pollFor(c, 1, 15000);
      int d1 = first.isEmpty() ? -1 : first.get(0).deliveryCount().orElse((short) -1);
      for (var r : first) c.acknowledge(r, AcknowledgeType.RELEASE);
      c.commitSync();
      var second = pollFor(c, 1, 15000);
      int d2 = second.isEmpty() ? -1 : second.get(0).deliveryCount().orElse((short) -1);
      long offset = second.isEmpty() ? -1 : second.get(0).offset();
      for (var r : second) c.acknowledge(r, AcknowledgeType.ACCEPT);
      c.commitSync();
      var third = pollFor(c, 1, quiet);
      System.out.println("release: first=" + d1 + " second=" + d2 + " offset=" + offset
          + " after-accept=" + third.size());
    }
  }

  static void reject() throws Exception {
    String t = prefix + "-reject", g = prefix + "-g-reject";
    topic(t, 2);
    earliest(g);
    try (KafkaShareConsumer<String, String> c = consumer(g, true, 500)) {
      c.subscribe(List.of(t));
      var got = pollFor(c, 2, 15000);
      for (var r : got) {
        c.acknowledge(r, r.offset() == 0 ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT);
      }
      c.commitSync();
      var again = pollFor(c, 1, quiet);
      System.out.println("reject: first=" + got.size() + " redelivered=" + again.size());
    }
  }

  static void lock(long lockMs) throws Exception {
    String t = prefix + "-lock", g = prefix + "-g-lock";
    topic(t, 5);
    earliest(g);
    try (KafkaShareConsumer<String, String> a = consumer(g, true, 500);
         KafkaShareConsumer<String, String> b = consumer(g, true, 500)) {
      a.subscribe(List.of(t));
      var held = pollFor(a, 5, 15000);
      long acquired = System.currentTimeMillis();
      // a stops polling with its records acquired; b gets them once the locks expire.
      b.subscribe(List.of(t));
      var got = pollFor(b, 5, 15000);
      long waited = System.currentTimeMillis() - acquired;
      int delivery = got.isEmpty() ? -1 : got.get(0).deliveryCount().orElse((short) -1);
      for (var r : got) b.acknowledge(r, AcknowledgeType.ACCEPT);
      b.commitSync();
      System.out.println("lock: held=" + held.size() + " redelivered=" + got.size()
          + " delivery=" + delivery + " waited-at-least-lock=" + (waited >= lockMs - 200));
    }
  }

  static void close() throws Exception {
    String t = prefix + "-close", g = prefix + "-g-close";
    topic(t, 4);
    earliest(g);
    int held;
    try (KafkaShareConsumer<String, String> a = consumer(g, true, 500)) {
      a.subscribe(List.of(t));
      held = pollFor(a, 4, 15000).size();
    }  // closed with the records acquired, none acknowledged
    try (KafkaShareConsumer<String, String> b = consumer(g, true, 500)) {
      b.subscribe(List.of(t));
      var got = pollFor(b, 4, 15000);
      int delivery = got.isEmpty() ? -1 : got.get(0).deliveryCount().orElse((short) -1);
      for (var r : got) b.acknowledge(r, AcknowledgeType.ACCEPT);
      b.commitSync();
      System.out.println("close: held=" + held + " redelivered=" + got.size() + " delivery="
          + delivery);
    }
  }

  static void poison(int limit) throws Exception {
    String t = prefix + "-poison", g = prefix + "-g-poison";
    topic(t, 1);
    earliest(g);
    try (KafkaShareConsumer<String, String> c = consumer(g, true, 500)) {
      c.subscribe(List.of(t));
      List<Integer> deliveries = new ArrayList<>();
      for (int i = 0; i < limit + 1; ++i) {
        var got = pollFor(c, 1, i < limit ? 15000 : quiet);
        if (got.isEmpty()) break;
        deliveries.add((int) got.get(0).deliveryCount().orElse((short) -1));
        c.acknowledge(got.get(0), AcknowledgeType.RELEASE);
        c.commitSync();
      }
      System.out.println("poison: deliveries=" + deliveries);
    }
  }

  // A log batch of 8 records released at every delivery under a delivery-count limit of 6:
  // Kafka 4.4 hands out records delivered 3 times or more in halving numbers, alone, and a
  // record on its last delivery by itself. Prints the records each poll got.
  static void throttle() throws Exception {
    String t = prefix + "-throttle", g = prefix + "-g-throttle";
    topic(t, 8, 8, 60000);  // one batch
    earliest(g);
    lockMs(g, 15000);  // no lock may expire between a poll and its release
    ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, g);
    admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(
        new ConfigEntry("share.delivery.count.limit", "6"), AlterConfigOp.OpType.SET))))
        .all().get();
    try (KafkaShareConsumer<String, String> c = consumer(g, true, 500)) {
      c.subscribe(List.of(t));
      List<Integer> polls = new ArrayList<>();
      for (int delivered = 0; delivered < 8 * 6; ) {
        var got = pollFor(c, 1, 15000);
        if (got.isEmpty()) break;
        polls.add(got.size());
        delivered += got.size();
        for (var rec : got) c.acknowledge(rec, AcknowledgeType.RELEASE);
        c.commitSync();
      }
      System.out.println("throttle: polls=" + polls + " after=" + pollFor(c, 1, quiet).size());
    }
  }

  public static void main(String[] args) throws Exception {
    bootstrap = args[0];
    long lockMs = Long.parseLong(args[1]);
    quiet = lockMs + 300;
    int limit = Integer.parseInt(args[2]);
    prefix = args[3];
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    admin = Admin.create(p);
    List<String> run = args.length > 4 ? List.of(args[4].split(","))
                                       : List.of("all", "release", "reject", "lock", "close", "poison",
                                                 "throttle");
    try {
      for (String s : run) {
        long start = System.currentTimeMillis();
        switch (s) {
          case "all" -> all();
          case "release" -> release();
          case "reject" -> reject();
          case "lock" -> lock(lockMs);
          case "close" -> close();
          case "poison" -> poison(limit);
          case "throttle" -> throttle();
          default -> throw new IllegalArgumentException("unknown scenario " + s);
        }
        System.out.println("time: " + s + " " + (System.currentTimeMillis() - start) + " ms");
      }
    } finally {
      admin.close();
    }
  }
}
