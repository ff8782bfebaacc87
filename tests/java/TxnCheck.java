// Consume-transform-produce with the Java clients of Kafka 4.4.0 (exactly once with a
// transactional producer and a read_committed consumer), for tests/transactions_test.cc:
//   java -cp "$(scripts/kafka-ref libs)/*" tests/java/TxnCheck.java BOOTSTRAP IN OUT GROUP TXN_ID
//
// Creates IN and OUT (one partition each), produces 10 plain records "v<i>" to IN, then runs two
// transactions of a KafkaProducer (transactional.id TXN_ID) fed by a KafkaConsumer of GROUP
// (read_committed, subscribed to IN): the first writes each record upper-cased to OUT and is
// aborted, the second (reading again from the group's committed offset, i.e. the start) does the
// same and commits, both with sendOffsetsToTransaction. Prints "aborted N", "committed N", then
// what a fresh read_committed consumer of OUT sees ("out O VALUE" per record, until ten came and
// 2 s more) and the group's committed offset ("offset O"), then "done".
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnCheck {
  static void say(String s) {
    System.out.println(s);
    System.out.flush();
  }

  static KafkaConsumer<String, String> consumer(String bootstrap, String group) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
  }

  // One transaction over what the consumer gets until it has `want` records.
  static int round(KafkaConsumer<String, String> c, KafkaProducer<String, String> p, String out,
                   int want, boolean commit) {
    p.beginTransaction();
    int n = 0;
    long deadline = System.currentTimeMillis() + 60000;
    while (n < want && System.currentTimeMillis() < deadline) {
      for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
        p.send(new ProducerRecord<>(out, 0, null, r.value().toUpperCase()));
        n++;
      }
    }
    Map<TopicPartition, OffsetAndMetadata> offsets = new java.util.HashMap<>();
    for (TopicPartition tp : c.assignment()) offsets.put(tp, new OffsetAndMetadata(c.position(tp)));
    p.sendOffsetsToTransaction(offsets, c.groupMetadata());
    if (commit) {
      p.commitTransaction();
    } else {
      p.flush();  // the aborted records are written (and then aborted), not dropped unsent
      p.abortTransaction();
    }
    return n;
  }

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], in = args[1], out = args[2], group = args[3], txnId = args[4];
    Properties a = new Properties();
    a.put("bootstrap.servers", bootstrap);
    try (Admin admin = Admin.create(a)) {
      admin.createTopics(List.of(new NewTopic(in, 1, (short) 1), new NewTopic(out, 1, (short) 1)))
          .all().get();
    }
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (KafkaProducer<String, String> plain =
             new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
      for (int i = 0; i < 10; i++) plain.send(new ProducerRecord<>(in, 0, null, "v" + i)).get();
    }
    pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
    try (KafkaProducer<String, String> p =
             new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
      p.initTransactions();
      try (KafkaConsumer<String, String> c = consumer(bootstrap, group)) {
        c.subscribe(List.of(in));
        say("aborted " + round(c, p, out, 10, false));
      }
      try (KafkaConsumer<String, String> c = consumer(bootstrap, group)) {
        c.subscribe(List.of(in));
        say("committed " + round(c, p, out, 10, true));
      }
    }
    try (KafkaConsumer<String, String> c = consumer(bootstrap, group + "-check")) {
      TopicPartition tp = new TopicPartition(out, 0);
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      // Until the ten committed records came (at most 60 s), then 2 s more for any extra one.
      int seen = 0;
      long deadline = System.currentTimeMillis() + 60000;
      long grace = Long.MAX_VALUE;
      while (System.currentTimeMillis() < Math.min(deadline, grace)) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
          say("out " + r.offset() + " " + r.value());
          if (++seen == 10) grace = System.currentTimeMillis() + 2000;
        }
      }
    }
    try (Admin admin = Admin.create(a)) {
      OffsetAndMetadata om = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                                 .get().get(new TopicPartition(in, 0));
      say("offset " + (om == null ? "none" : String.valueOf(om.offset())));
    }
    say("done");
  }
}
