// Transactions of Kafka 4.4.0's Java clients against a tarn cluster, for
// tests/cluster_txn_test.cc:
//   java -cp "$(scripts/kafka-ref libs)/*" tests/java/ClusterTxnCheck.java BOOTSTRAP TXN_ID T1..
//
// The topics (one partition each, led by different brokers) exist. A KafkaProducer
// (transactional.id TXN_ID, the default transaction.version: transactions v2 where the cluster
// finalizes it, so each leader adds its partition to the transaction through the coordinator)
// runs three transactions of one record per topic: "c-<topic>" committed, "a-<topic>" aborted,
// "d-<topic>" committed. Then a read_committed KafkaConsumer assigned every partition reads from
// the start and prints "got <topic> <value>" for each record until six came and 2 s more (at most
// 60 s), then "done".
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ClusterTxnCheck {
  static void say(String s) {
    System.out.println(s);
    System.out.flush();
  }

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], txnId = args[1];
    List<String> topics = new ArrayList<>();
    for (int i = 2; i < args.length; i++) topics.add(args[i]);
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
    pp.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "20");
    try (KafkaProducer<String, String> p =
             new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
      p.initTransactions();
      for (String prefix : List.of("c", "a", "d")) {
        p.beginTransaction();
        for (String t : topics) p.send(new ProducerRecord<>(t, 0, null, prefix + "-" + t));
        if (prefix.equals("a")) {
          p.flush();  // written, then aborted
          p.abortTransaction();
        } else {
          p.commitTransaction();
        }
        say("ended " + prefix);
      }
    }
    Properties cp = new Properties();
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    try (KafkaConsumer<String, String> c =
             new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
      List<TopicPartition> tps = new ArrayList<>();
      for (String t : topics) tps.add(new TopicPartition(t, 0));
      c.assign(tps);
      c.seekToBeginning(tps);
      int want = 2 * topics.size(), seen = 0;
      long deadline = System.currentTimeMillis() + 60000;
      long grace = Long.MAX_VALUE;
      while (System.currentTimeMillis() < Math.min(deadline, grace)) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
          say("got " + r.topic() + " " + r.value());
          if (++seen == want) grace = System.currentTimeMillis() + 2000;
        }
      }
    }
    say("done");
  }
}
