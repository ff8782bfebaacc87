// Drives the describe/inspect admin APIs through Kafka 4.4.0's own Admin client and prints one
// canonical line per observation (ids, paths, sizes and timings left out or reduced to what must
// agree), so the same run against tarn and against the reference broker can be compared line by
// line (tests/admin_describe_test.cc). It creates <prefix>-a (3 partitions; 5 records in
// partition 0 with timestamps 1000, 5000, 3000, 5000, 2000) and <prefix>-empty (1 partition).
// Run: java -cp '<kafka libs>/*' AdminDescribeCheck.java host:port prefix
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;

public class AdminDescribeCheck {
  static String errorOf(KafkaFuture<?> f) throws InterruptedException {
    try {
      f.get();
      return "none";
    } catch (ExecutionException e) {
      return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
    }
  }

  static String partitionLine(TopicPartitionInfo p) {
    return "partition " + p.partition() + " leader " + p.leader().id() + " replicas "
        + p.replicas().stream().map(n -> n.id()).toList() + " isr "
        + p.isr().stream().map(n -> n.id()).toList() + " elr " + p.elr() + " lastKnownElr "
        + p.lastKnownElr();
  }

  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put("bootstrap.servers", args[0]);
    props.put("request.timeout.ms", "10000");
    props.put("default.api.timeout.ms", "20000");
    String a = args[1] + "-a";
    String empty = args[1] + "-empty";
    String missing = args[1] + "-missing";
    try (Admin admin = Admin.create(props)) {
      admin.createTopics(List.of(new NewTopic(a, 3, (short) 1), new NewTopic(empty, 1, (short) 1)))
          .all().get();
      Properties pp = new Properties();
      pp.put("bootstrap.servers", args[0]);
      pp.put("acks", "all");
      try (KafkaProducer<String, String> producer =
               new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
        long[] timestamps = {1000, 5000, 3000, 5000, 2000};
        for (int i = 0; i < timestamps.length; i++) {
          producer.send(new ProducerRecord<>(a, 0, timestamps[i], "k" + i, "v" + i)).get();
        }
      }
      // describeCluster (DescribeCluster v2).
      DescribeClusterResult c =
          admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true));
      Collection<org.apache.kafka.common.Node> nodes = c.nodes().get();
      org.apache.kafka.common.Node node = nodes.iterator().next();
      System.out.println("cluster nodes " + nodes.size() + " id " + node.id() + " rack "
          + node.rack() + " host-is-set " + !node.host().isEmpty());
      System.out.println("cluster controller is the node " + (c.controller().get().id() == node.id()));
      System.out.println("cluster id length " + c.clusterId().get().length());
      System.out.println("cluster operations " + new TreeSet<>(c.authorizedOperations().get()));
      System.out.println("cluster without operations "
          + admin.describeCluster().authorizedOperations().get());

      // describeTopics (DescribeTopicPartitions v0), a page size smaller than the topic.
      for (int pageSize : new int[] {2000, 1}) {
        Map<String, TopicDescription> d = admin.describeTopics(List.of(a, empty),
            new DescribeTopicsOptions().partitionSizeLimitPerResponse(pageSize)
                .includeAuthorizedOperations(true)).allTopicNames().get();
        for (String t : List.of(a, empty)) {
          TopicDescription td = d.get(t);
          System.out.println("describe (page " + pageSize + ") " + t + " internal "
              + td.isInternal() + " id set " + !td.topicId().equals(Uuid.ZERO_UUID)
              + " partitions " + td.partitions().size() + " operations "
              + new TreeSet<>(td.authorizedOperations()));
          for (TopicPartitionInfo p : td.partitions()) System.out.println("  " + partitionLine(p));
        }
      }
      System.out.println("describe missing: "
          + errorOf(admin.describeTopics(List.of(missing)).allTopicNames()));
      System.out.println("describe bad name: "
          + errorOf(admin.describeTopics(List.of("bad/name")).allTopicNames()));
      // An internal topic: a committed offset makes __consumer_offsets exist.
      admin.alterConsumerGroupOffsets(args[1] + "-group",
          Map.of(new TopicPartition(a, 0), new org.apache.kafka.clients.consumer.OffsetAndMetadata(1)))
          .all().get();
      TopicDescription offsets =
          admin.describeTopics(List.of("__consumer_offsets")).allTopicNames().get()
              .get("__consumer_offsets");
      System.out.println("describe __consumer_offsets internal " + offsets.isInternal()
          + " partitions>0 " + !offsets.partitions().isEmpty());

      // describeLogDirs (DescribeLogDirs v4+).
      Map<Integer, Map<String, LogDirDescription>> dirs =
          admin.describeLogDirs(List.of(node.id())).allDescriptions().get();
      Map<String, LogDirDescription> byDir = dirs.get(node.id());
      System.out.println("log dirs " + byDir.size());
      for (LogDirDescription dd : byDir.values()) {
        System.out.println("log dir error " + dd.error() + " total>0 "
            + (dd.totalBytes().orElse(-1) > 0) + " usable>0 " + (dd.usableBytes().orElse(-1) > 0)
            + " usable<=total " + (dd.usableBytes().orElse(0) <= dd.totalBytes().orElse(0)));
        TreeMap<TopicPartition, ReplicaInfo> mine = new TreeMap<>(
            Comparator.comparing(TopicPartition::topic).thenComparing(TopicPartition::partition));
        dd.replicaInfos().forEach((tp, ri) -> {
          if (tp.topic().startsWith(args[1])) mine.put(tp, ri);
        });
        mine.forEach((tp, ri) -> System.out.println("  replica " + tp + " size>0 "
            + (ri.size() > 0) + " lag " + ri.offsetLag() + " future " + ri.isFuture()));
      }
      Map<TopicPartitionReplica, DescribeReplicaLogDirsResult.ReplicaLogDirInfo> replicas = admin
          .describeReplicaLogDirs(List.of(new TopicPartitionReplica(a, 0, node.id()),
              new TopicPartitionReplica(missing, 0, node.id())))
          .all().get();
      for (var e : new TreeMap<>(Map.of("a", replicas.get(new TopicPartitionReplica(a, 0, node.id())),
               "missing", replicas.get(new TopicPartitionReplica(missing, 0, node.id()))))
                   .entrySet()) {
        System.out.println("replica log dir " + e.getKey() + " set "
            + (e.getValue().getCurrentReplicaLogDir() != null) + " lag "
            + e.getValue().getCurrentReplicaOffsetLag() + " future "
            + e.getValue().getFutureReplicaLogDir());
      }

      // electLeaders (ElectLeaders v2).
      for (ElectionType type : ElectionType.values()) {
        Map<TopicPartition, Optional<Throwable>> r = admin.electLeaders(type,
            Set.of(new TopicPartition(a, 0), new TopicPartition(a, 7),
                new TopicPartition(missing, 0))).partitions().get();
        for (var e : new TreeMap<>(Map.of("a-0", r.get(new TopicPartition(a, 0)),
                 "a-7", r.get(new TopicPartition(a, 7)),
                 "missing-0", r.get(new TopicPartition(missing, 0)))).entrySet()) {
          System.out.println("elect " + type + " " + e.getKey() + ": "
              + e.getValue().map(t -> t.getClass().getSimpleName() + ": " + t.getMessage())
                    .orElse("none"));
        }
      }
      Map<TopicPartition, Optional<Throwable>> all =
          admin.electLeaders(ElectionType.PREFERRED, null).partitions().get();
      System.out.println("elect all partitions: " + all.size() + " results");

      // Reassignments (AlterPartitionReassignments v1, ListPartitionReassignments v0).
      System.out.println("list reassignments " + admin.listPartitionReassignments().reassignments().get());
      System.out.println("list reassignments of a "
          + admin.listPartitionReassignments(Set.of(new TopicPartition(a, 0))).reassignments().get());
      List<Object[]> moves = List.of(
          new Object[] {"to self", new TopicPartition(a, 0), Optional.of(new NewPartitionReassignment(List.of(node.id())))},
          new Object[] {"to broker 2", new TopicPartition(a, 0), Optional.of(new NewPartitionReassignment(List.of(2)))},
          new Object[] {"to self and 2", new TopicPartition(a, 1), Optional.of(new NewPartitionReassignment(List.of(node.id(), 2)))},
          new Object[] {"cancel", new TopicPartition(a, 0), Optional.empty()},
          new Object[] {"unknown partition", new TopicPartition(a, 9), Optional.of(new NewPartitionReassignment(List.of(node.id())))},
          new Object[] {"unknown topic", new TopicPartition(missing, 0), Optional.of(new NewPartitionReassignment(List.of(node.id())))});
      for (Object[] m : moves) {
        @SuppressWarnings("unchecked")
        Optional<NewPartitionReassignment> target = (Optional<NewPartitionReassignment>) m[2];
        Map<TopicPartition, Optional<NewPartitionReassignment>> one = new HashMap<>();
        one.put((TopicPartition) m[1], target);
        System.out.println("reassign " + m[0] + ": "
            + errorOf(admin.alterPartitionReassignments(one).all()));
      }

      // listOffsets with every OffsetSpec (ListOffsets v7-v9+).
      Map<String, OffsetSpec> specs = new LinkedHashMap<>();
      specs.put("earliest", OffsetSpec.earliest());
      specs.put("latest", OffsetSpec.latest());
      specs.put("maxTimestamp", OffsetSpec.maxTimestamp());
      specs.put("earliestLocal", OffsetSpec.earliestLocal());
      specs.put("latestTiered", OffsetSpec.latestTiered());
      for (String t : List.of(a, empty)) {
        for (var s : specs.entrySet()) {
          TopicPartition tp = new TopicPartition(t, 0);
          ListOffsetsResult.ListOffsetsResultInfo info =
              admin.listOffsets(Map.of(tp, s.getValue())).partitionResult(tp).get();
          System.out.println("offsets " + t + " " + s.getKey() + " offset " + info.offset()
              + " epoch " + info.leaderEpoch() + " timestamp " + info.timestamp());
        }
      }
      System.out.println("offsets missing: " + errorOf(admin.listOffsets(
          Map.of(new TopicPartition(missing, 0), OffsetSpec.maxTimestamp())).all()));
    }
    System.out.println("DONE");
  }
}
