// Drives topic management through Kafka 4.4.0's own Admin client and prints one canonical line per
// observation (no ids, no timings), so the same run against tarn and against the reference broker
// can be compared line by line. Exits 1 on the first unexpected outcome ("FAIL ...").
// Run: java -cp '<kafka libs>/*' AdminCheck.java host:port topic-prefix
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;

public class AdminCheck {
  static void check(boolean ok, String what) {
    if (!ok) {
      System.out.println("FAIL " + what);
      System.exit(1);
    }
    System.out.println("ok " + what);
  }

  static String errorOf(KafkaFuture<?> f) throws InterruptedException {
    try {
      f.get();
      return "none";
    } catch (ExecutionException e) {
      return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
    }
  }

  static String synonyms(ConfigEntry e) {
    StringBuilder b = new StringBuilder("[");
    for (ConfigEntry.ConfigSynonym s : e.synonyms()) {
      b.append(s.name()).append('=').append(s.value()).append(':').append(s.source()).append(' ');
    }
    return b.append(']').toString();
  }

  static Config topicConfig(Admin admin, String topic) throws Exception {
    ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    return admin
        .describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true)
            .includeDocumentation(true))
        .all().get().get(r);
  }

  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    p.put("request.timeout.ms", "10000");
    p.put("default.api.timeout.ms", "20000");
    String t = args[1] + "-admin";
    try (Admin admin = Admin.create(p)) {
      String clusterId = admin.describeCluster().clusterId().get();
      check(clusterId != null && clusterId.length() == 22, "cluster id is a 22-character Uuid");
      Collection<org.apache.kafka.common.Node> nodes = admin.describeCluster().nodes().get();
      check(nodes.size() == 1, "one broker: " + nodes.iterator().next().id());
      int controller = admin.describeCluster().controller().get().id();
      System.out.println("controller " + controller);

      // Create with configs; v7 answers the topic id, partitions, replication factor, configs.
      NewTopic nt = new NewTopic(t, 3, (short) 1)
          .configs(Map.of("retention.ms", "1000", "cleanup.policy", "compact"));
      CreateTopicsResult created = admin.createTopics(List.of(nt));
      created.all().get();
      check(created.numPartitions(t).get() == 3, "create answers 3 partitions");
      check(created.replicationFactor(t).get() == 1, "create answers replication factor 1");
      Uuid id = created.topicId(t).get();
      check(!id.equals(Uuid.ZERO_UUID), "create answers a topic id");
      Config createdConfig = created.config(t).get();
      ConfigEntry rms = createdConfig.get("retention.ms");
      check(rms != null && rms.value().equals("1000")
              && rms.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
          "create answers retention.ms=1000 DYNAMIC_TOPIC_CONFIG");
      ConfigEntry sb = createdConfig.get("segment.bytes");
      System.out.println("create config segment.bytes " + sb.value() + " " + sb.source());

      System.out.println("create again: "
          + errorOf(admin.createTopics(List.of(new NewTopic(t, 1, (short) 1))).all()));
      System.out.println("create rf 2: "
          + errorOf(admin.createTopics(List.of(new NewTopic(t + "-rf", 1, (short) 2))).all()));
      System.out.println("create bad name: "
          + errorOf(admin.createTopics(List.of(new NewTopic("bad/name", 1, (short) 1))).all()));
      System.out.println("create bad config: "
          + errorOf(admin.createTopics(List.of(new NewTopic(t + "-bad", 1, (short) 1)
              .configs(Map.of("segment.bytes", "12")))).all()));
      System.out.println("create validate only: "
          + errorOf(admin.createTopics(List.of(new NewTopic(t + "-vo", 2, (short) 1)),
              new CreateTopicsOptions().validateOnly(true)).all()));
      check(!admin.listTopics().names().get().contains(t + "-vo"), "validate only creates nothing");
      System.out.println("create manual assignment: "
          + errorOf(admin.createTopics(List.of(new NewTopic(t + "-ma",
              Map.of(0, List.of(1), 1, List.of(1))))).all()));
      System.out.println("create manual assignment broker 2: "
          + errorOf(admin.createTopics(List.of(new NewTopic(t + "-mb",
              Map.of(0, List.of(2))))).all()));

      // Describe (Metadata or DescribeTopicPartitions, as the client chooses).
      TopicDescription d = admin.describeTopics(List.of(t)).allTopicNames().get().get(t);
      check(d.partitions().size() == 3, "describe: 3 partitions");
      check(d.topicId().equals(id), "describe: the same topic id");
      for (TopicPartitionInfo pi : d.partitions()) {
        System.out.println("partition " + pi.partition() + " leader " + pi.leader().id()
            + " replicas " + pi.replicas().size() + " isr " + pi.isr().size());
      }
      check(admin.listTopics().names().get().contains(t), "list contains the topic");

      // DescribeConfigs.
      Config c = topicConfig(admin, t);
      ConfigEntry r = c.get("retention.ms");
      System.out.println("retention.ms " + r.value() + " " + r.source() + " synonyms "
          + synonyms(r) + " type " + r.type() + " documented "
          + (r.documentation() != null && !r.documentation().isEmpty()));
      ConfigEntry seg = c.get("segment.bytes");
      System.out.println("segment.bytes " + seg.value() + " " + seg.source() + " read-only "
          + seg.isReadOnly() + " sensitive " + seg.isSensitive() + " type " + seg.type()
          + " synonyms " + synonyms(seg));
      System.out.println("cleanup.policy " + c.get("cleanup.policy").value() + " "
          + c.get("cleanup.policy").type());
      System.out.println("describe configs of a missing topic: "
          + errorOf(admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC,
              t + "-missing"))).all()));

      // IncrementalAlterConfigs.
      ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, t);
      admin.incrementalAlterConfigs(Map.of(res, List.of(
          new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.APPEND),
          new AlterConfigOp(new ConfigEntry("retention.ms", "2000"), AlterConfigOp.OpType.SET),
          new AlterConfigOp(new ConfigEntry("max.message.bytes", "5000"), AlterConfigOp.OpType.SET))))
          .all().get();
      c = topicConfig(admin, t);
      System.out.println("after alter: cleanup.policy " + c.get("cleanup.policy").value()
          + " retention.ms " + c.get("retention.ms").value() + " max.message.bytes "
          + c.get("max.message.bytes").value());
      admin.incrementalAlterConfigs(Map.of(res, List.of(
          new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.SUBTRACT),
          new AlterConfigOp(new ConfigEntry("max.message.bytes", ""), AlterConfigOp.OpType.DELETE))))
          .all().get();
      c = topicConfig(admin, t);
      System.out.println("after subtract/delete: cleanup.policy " + c.get("cleanup.policy").value()
          + " max.message.bytes " + c.get("max.message.bytes").value() + " "
          + c.get("max.message.bytes").source());
      System.out.println("alter bad value: " + errorOf(admin.incrementalAlterConfigs(Map.of(res,
          List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "soon"),
              AlterConfigOp.OpType.SET)))).all()));
      System.out.println("alter append to a non-list: " + errorOf(admin.incrementalAlterConfigs(
          Map.of(res, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "1"),
              AlterConfigOp.OpType.APPEND)))).all()));
      System.out.println("alter unknown key: " + errorOf(admin.incrementalAlterConfigs(Map.of(res,
          List.of(new AlterConfigOp(new ConfigEntry("no.such.key", "1"),
              AlterConfigOp.OpType.SET)))).all()));
      System.out.println("alter missing topic: " + errorOf(admin.incrementalAlterConfigs(Map.of(
          new ConfigResource(ConfigResource.Type.TOPIC, t + "-missing"),
          List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "1"),
              AlterConfigOp.OpType.SET)))).all()));
      admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
          new ConfigEntry("retention.ms", "3000"), AlterConfigOp.OpType.SET))),
          new AlterConfigsOptions().validateOnly(true)).all().get();
      check(topicConfig(admin, t).get("retention.ms").value().equals("2000"),
          "validate-only alter changes nothing");

      // The broker resource.
      ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER,
          String.valueOf(nodes.iterator().next().id()));
      Config bc = admin.describeConfigs(List.of(broker)).all().get().get(broker);
      ConfigEntry np = bc.get("num.partitions");
      System.out.println("broker num.partitions " + np.value() + " " + np.source());
      ConfigEntry lrh = bc.get("log.retention.hours");
      System.out.println("broker log.retention.hours " + lrh.value() + " " + lrh.source());

      // Delete.
      admin.deleteTopics(List.of(t, t + "-ma")).all().get();
      check(!admin.listTopics().names().get().contains(t), "deleted topic is not listed");
      System.out.println("delete again: " + errorOf(admin.deleteTopics(List.of(t)).all()));
      System.out.println("delete unknown id: " + errorOf(admin.deleteTopics(
          TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).all()));
    }
    System.out.println("ALL OK");
  }
}
