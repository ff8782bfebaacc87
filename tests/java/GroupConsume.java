// Consumer groups with the Java clients of Kafka 4.4.0, for tests/groups_clients_test.cc. Each mode
// prints one event per line (flushed) for the test to read while the process runs:
//   java -cp "$(scripts/kafka-ref libs)/*" tests/java/GroupConsume.java MODE BOOTSTRAP TOPIC ...
//
//   setup BOOTSTRAP TOPIC COUNTS     creates TOPIC with one partition per entry of COUNTS
//                                    (e.g. 400,500,600,500) and produces that many records to
//                                    each (acks=all); prints "produced P N" per partition.
//   produce BOOTSTRAP TOPIC COUNTS   the same records into an existing topic, no creation.
//   consume BOOTSTRAP TOPIC GROUP [key=value...]
//                                    a KafkaConsumer subscribed to TOPIC in GROUP; prints
//                                    "record P O", "assigned P,P owned P,P", "revoked P,P owned
//                                    ...", "lost P,P", "gen G MEMBER" when the group generation
//                                    (member epoch) changes, "position P O" once for each newly
//                                    assigned partition, "commit P O" for every offset a commitSync
//                                    stored, "commit-failed ..." and finally "closed".
//     options: protocol=classic|consumer (group.protocol), instance=ID (group.instance.id),
//              session=MS and heartbeat=MS (classic only), stop=records:N (close once N records
//              were seen) | stop=caught-up (close once every partition of TOPIC is assigned and
//              its position is its end offset) | stop=signal (the default: run until SIGTERM),
//              report=true (after closing, print the group's offsets as the offsets mode does).
//     Offsets are committed (commitSync) after every poll that returned records, for the
//     partitions those records came from, and in onPartitionsRevoked before giving them up, so
//     a record once committed is not delivered again in the group.
//   offsets BOOTSTRAP TOPIC GROUP    what kafka-consumer-groups.sh --describe shows, from the
//                                    Admin client: "committed P O" (or "committed P none") from
//                                    listConsumerGroupOffsets and "end P O" from listOffsets.
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class GroupConsume {
  static final java.util.Comparator<TopicPartition> BY_PARTITION =
      java.util.Comparator.comparingInt(TopicPartition::partition);

  static synchronized void say(String line) {
    System.out.println(line);
    System.out.flush();
  }

  static String list(java.util.Collection<TopicPartition> parts) {
    return parts.stream().map(TopicPartition::partition).sorted().map(String::valueOf)
        .collect(Collectors.joining(","));
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    String bootstrap = args[1];
    String topic = args[2];
    switch (mode) {
      case "setup":
        create(bootstrap, topic, counts(args[3]).length);
        produce(bootstrap, topic, counts(args[3]));
        break;
      case "produce":
        produce(bootstrap, topic, counts(args[3]));
        break;
      case "consume":
        Map<String, String> opt = new HashMap<>();
        for (int i = 4; i < args.length; i++) {
          String[] kv = args[i].split("=", 2);
          opt.put(kv[0], kv[1]);
        }
        consume(bootstrap, topic, args[3], opt);
        break;
      case "offsets":
        offsets(bootstrap, topic, args[3]);
        break;
      default:
        throw new IllegalArgumentException("unknown mode " + mode);
    }
  }

  static int[] counts(String text) {
    String[] parts = text.split(",");
    int[] out = new int[parts.length];
    for (int i = 0; i < parts.length; i++) out[i] = Integer.parseInt(parts[i]);
    return out;
  }

  static Admin admin(String bootstrap) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    return Admin.create(p);
  }

  static void create(String bootstrap, String topic, int partitions) throws Exception {
    try (Admin a = admin(bootstrap)) {
      a.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all()
          .get(60, TimeUnit.SECONDS);
    }
    say("created " + topic + " " + partitions);
  }

  // Record i of partition p has key "p-i" and value "v-p-i".
  static void produce(String bootstrap, String topic, int[] counts) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("acks", "all");
    p.put("linger.ms", "5");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      for (int part = 0; part < counts.length; part++) {
        for (int i = 0; i < counts[part]; i++) {
          String key = part + "-" + i;
          sent.add(producer.send(new ProducerRecord<>(topic, part, key, "v-" + key)));
        }
      }
      producer.flush();
    }
    long[] last = new long[counts.length];
    java.util.Arrays.fill(last, -1);
    for (Future<RecordMetadata> f : sent) {
      RecordMetadata m = f.get(60, TimeUnit.SECONDS);
      last[m.partition()] = Math.max(last[m.partition()], m.offset());
    }
    for (int part = 0; part < counts.length; part++) {
      say("produced " + part + " " + (last[part] + 1));
    }
  }

  static volatile boolean stopping = false;

  static void consume(String bootstrap, String topic, String group, Map<String, String> opt)
      throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("group.id", group);
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    String protocol = opt.getOrDefault("protocol", "classic");
    p.put("group.protocol", protocol);
    if (opt.containsKey("instance")) p.put("group.instance.id", opt.get("instance"));
    if (protocol.equals("classic")) {
      p.put("session.timeout.ms", opt.getOrDefault("session", "10000"));
      p.put("heartbeat.interval.ms", opt.getOrDefault("heartbeat", "500"));
    }
    String stop = opt.getOrDefault("stop", "signal");
    long stopAfter = stop.startsWith("records:") ? Long.parseLong(stop.substring(8)) : -1;

    KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p);
    Thread main = Thread.currentThread();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      stopping = true;
      consumer.wakeup();
      try {
        main.join(30000);
      } catch (InterruptedException e) {
        // exiting anyway
      }
    }));

    // The next offset to commit for each partition this member consumed from and still owns.
    Map<TopicPartition, Long> next = new HashMap<>();
    Map<TopicPartition, Long> committed = new HashMap<>();
    Set<TopicPartition> owned = new TreeSet<>(BY_PARTITION);
    Set<TopicPartition> unreported = new TreeSet<>(BY_PARTITION);
    consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(java.util.Collection<TopicPartition> parts) {
        commit(consumer, next, committed, parts);
        owned.removeAll(parts);
        unreported.removeAll(parts);
        for (TopicPartition tp : parts) next.remove(tp);
        say("revoked " + list(parts) + " owned " + list(owned));
      }

      @Override
      public void onPartitionsAssigned(java.util.Collection<TopicPartition> parts) {
        owned.addAll(parts);
        unreported.addAll(parts);
        say("assigned " + list(parts) + " owned " + list(owned));
      }

      @Override
      public void onPartitionsLost(java.util.Collection<TopicPartition> parts) {
        owned.removeAll(parts);
        unreported.removeAll(parts);
        for (TopicPartition tp : parts) next.remove(tp);
        say("lost " + list(parts) + " owned " + list(owned));
      }
    });

    int lastGen = Integer.MIN_VALUE;
    long seen = 0;
    int partitionCount = -1;
    try {
      while (!stopping) {
        ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
        Set<TopicPartition> from = new TreeSet<>(BY_PARTITION);
        for (ConsumerRecord<String, String> r : records) {
          say("record " + r.partition() + " " + r.offset());
          TopicPartition tp = new TopicPartition(r.topic(), r.partition());
          next.put(tp, r.offset() + 1);
          from.add(tp);
          seen++;
        }
        ConsumerGroupMetadata meta = consumer.groupMetadata();
        if (meta.generationId() != lastGen) {
          lastGen = meta.generationId();
          say("gen " + lastGen + " " + meta.memberId());
        }
        for (TopicPartition tp : new ArrayList<>(unreported)) {
          say("position " + tp.partition() + " " + consumer.position(tp, Duration.ofSeconds(30)));
          unreported.remove(tp);
        }
        commit(consumer, next, committed, from);
        if (stopAfter >= 0 && seen >= stopAfter) break;
        if (stop.equals("caught-up") && records.isEmpty() && !owned.isEmpty()) {
          if (partitionCount < 0) partitionCount = consumer.partitionsFor(topic).size();
          if (owned.size() == partitionCount) {
            Map<TopicPartition, Long> ends = consumer.endOffsets(owned, Duration.ofSeconds(30));
            boolean atEnd = true;
            for (TopicPartition tp : owned) {
              atEnd &= consumer.position(tp, Duration.ofSeconds(30)) >= ends.get(tp);
            }
            if (atEnd) break;
          }
        }
      }
    } catch (WakeupException e) {
      // SIGTERM: close below
    }
    try {
      commit(consumer, next, committed, next.keySet());
    } catch (WakeupException e) {
      commit(consumer, next, committed, next.keySet());
    }
    consumer.close();
    say("closed");
    if (opt.getOrDefault("report", "false").equals("true")) offsets(bootstrap, topic, group);
  }

  // Commits the consumed positions of `parts` (those this member owns) that moved since the
  // last commit; prints each stored offset.
  static void commit(KafkaConsumer<String, String> consumer, Map<TopicPartition, Long> next,
      Map<TopicPartition, Long> committed, java.util.Collection<TopicPartition> parts) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new TreeMap<>(BY_PARTITION);
    for (TopicPartition tp : parts) {
      Long n = next.get(tp);
      if (n != null && !n.equals(committed.get(tp))) offsets.put(tp, new OffsetAndMetadata(n));
    }
    if (offsets.isEmpty()) return;
    try {
      consumer.commitSync(offsets, Duration.ofSeconds(30));
      for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
        committed.put(e.getKey(), e.getValue().offset());
        say("commit " + e.getKey().partition() + " " + e.getValue().offset());
      }
    } catch (CommitFailedException | RebalanceInProgressException e) {
      say("commit-failed " + e.getClass().getSimpleName() + ": " + e.getMessage());
    } catch (WakeupException e) {
      throw e;
    } catch (KafkaException e) {
      say("commit-failed " + e.getClass().getSimpleName() + ": " + e.getMessage());
    }
  }

  static void offsets(String bootstrap, String topic, String group) throws Exception {
    try (Admin a = admin(bootstrap)) {
      Map<TopicPartition, OffsetAndMetadata> committed = a.listConsumerGroupOffsets(group)
          .partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
      TopicDescription d = a.describeTopics(List.of(topic)).allTopicNames()
          .get(60, TimeUnit.SECONDS).get(topic);
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      for (var info : d.partitions()) {
        latest.put(new TopicPartition(topic, info.partition()), OffsetSpec.latest());
      }
      var ends = a.listOffsets(latest).all().get(60, TimeUnit.SECONDS);
      for (int part = 0; part < d.partitions().size(); part++) {
        TopicPartition tp = new TopicPartition(topic, part);
        OffsetAndMetadata c = committed.get(tp);
        say("committed " + part + " " + (c == null ? "none" : String.valueOf(c.offset())));
        say("end " + part + " " + ends.get(tp).offset());
      }
    }
  }
}
