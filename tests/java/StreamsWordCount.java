// A Kafka Streams 4.4.0 word count with processing.guarantee=exactly_once_v2, for
// tests/streams_test.cc:
//   java -cp "$(scripts/kafka-ref streams-libs)/*" tests/java/StreamsWordCount.java \
//     BOOTSTRAP APP_ID IN OUT STATE_DIR FROM TO [HALT_AT]
//
// Creates IN and OUT (two partitions each) if they are missing, produces lines FROM..TO-1 to IN
// (line i holds the words "w<i%7> w<i%11> w<i%13>", key "k<i>"), then runs the application
// (flatMapValues, groupBy word, count into the state store "counts" with its changelog, to OUT)
// and reads OUT with a read_committed consumer, keeping each word's latest count. When the
// counts add up to 3 * TO words it prints "count WORD N" per word (sorted), "total N", closes
// the application and exits 0. With HALT_AT it instead halts the JVM (no close, no shutdown hook:
// a crash, with a transaction open) as soon as the committed counts add up to HALT_AT or more,
// so a second run of the same APP_ID and STATE_DIR must fence the dead instance, restore its
// store from the changelog and still count every line exactly once.
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public class StreamsWordCount {
  static void say(String s) {
    System.out.println(s);
    System.out.flush();
  }

  static void createTopics(String bootstrap, String in, String out) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    try (Admin admin = Admin.create(p)) {
      for (String t : List.of(in, out)) {
        try {
          admin.createTopics(List.of(new NewTopic(t, 2, (short) 1))).all().get();
        } catch (ExecutionException e) {
          if (!(e.getCause() instanceof TopicExistsException)) throw e;
        }
      }
    }
  }

  static void produce(String bootstrap, String in, int from, int to) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    try (KafkaProducer<String, String> producer =
             new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
      for (int i = from; i < to; ++i) {
        String line = "w" + (i % 7) + " w" + (i % 11) + " w" + (i % 13);
        producer.send(new ProducerRecord<>(in, "k" + i, line));
      }
      producer.flush();
    }
    say("produced " + (to - from));
  }

  static KafkaStreams streams(String bootstrap, String app, String in, String out, String state) {
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.STATE_DIR_CONFIG, state);
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    // The crashed instance leaves its group member behind until its session times out: 6 s (the
    // broker's group.min.session.timeout.ms) instead of 45 s keeps the restart short.
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1500);
    StreamsBuilder b = new StreamsBuilder();
    b.<String, String>stream(in)
        .flatMapValues(line -> List.of(line.split(" ")))
        .groupBy((key, word) -> word)
        .count(Materialized.as("counts"))
        .toStream()
        .to(out, Produced.with(Serdes.String(), Serdes.Long()));
    return new KafkaStreams(b.build(), p);
  }

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], app = args[1], in = args[2], out = args[3], state = args[4];
    int from = Integer.parseInt(args[5]), to = Integer.parseInt(args[6]);
    long haltAt = args.length > 7 ? Long.parseLong(args[7]) : -1;
    long want = 3L * to;
    createTopics(bootstrap, in, out);
    produce(bootstrap, in, from, to);

    KafkaStreams app_ = streams(bootstrap, app, in, out, state);
    app_.setUncaughtExceptionHandler(e -> {
      say("uncaught " + e);
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
          .StreamThreadExceptionResponse.SHUTDOWN_APPLICATION;
    });
    final long started = System.currentTimeMillis();
    // When each state came (for a reader of a slow run; the test asserts only the counts).
    app_.setStateListener((now, before) ->
        say("state " + now + " after " + (System.currentTimeMillis() - started) + " ms"));
    app_.start();

    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    Map<String, Long> counts = new TreeMap<>();
    long total = 0;
    long deadline = System.currentTimeMillis() + 120000;
    try (KafkaConsumer<String, Long> consumer =
             new KafkaConsumer<>(c, new StringDeserializer(), new LongDeserializer())) {
      List<TopicPartition> parts = List.of(new TopicPartition(out, 0), new TopicPartition(out, 1));
      consumer.assign(parts);
      consumer.seekToBeginning(parts);
      while (total < want && System.currentTimeMillis() < deadline) {
        if (app_.state() == KafkaStreams.State.ERROR
            || app_.state() == KafkaStreams.State.NOT_RUNNING) {
          say("streams state " + app_.state());
          System.exit(2);
        }
        for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
          Long before = counts.put(r.key(), r.value());
          if (before != null && r.value() <= before) say("not increasing " + r.key() + " " + before
                                                         + " -> " + r.value());
          total += r.value() - (before == null ? 0 : before);
        }
        if (haltAt >= 0 && total >= haltAt) {
          say("halting at " + total + " after " + (System.currentTimeMillis() - started) + " ms");
          Runtime.getRuntime().halt(3);
        }
      }
      // A little longer: a count beyond the expected one (a duplicate) would show up now.
      long settle = System.currentTimeMillis() + 1000;
      while (System.currentTimeMillis() < settle) {
        for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
          Long before = counts.put(r.key(), r.value());
          total += r.value() - (before == null ? 0 : before);
        }
      }
    }
    for (Map.Entry<String, Long> e : counts.entrySet()) say("count " + e.getKey() + " " + e.getValue());
    say("total " + total);
    say("counted after " + (System.currentTimeMillis() - started) + " ms");
    app_.close(Duration.ofSeconds(30));
    say("done");
  }
}
