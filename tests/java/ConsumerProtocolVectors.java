// Writes the golden file tests/fixtures/client/consumer_protocol.txt that
// src/client/consumer_protocol_test.cc and range_assignor_test.cc check: Kafka 4.4.0's own
// ConsumerProtocol serializing subscriptions and assignments at every version, and its
// RangeAssignor's assignments for a set of groups.
// Run: java -cp "$(scripts/kafka-ref libs)/*" tests/java/ConsumerProtocolVectors.java \
//        > tests/fixtures/client/consumer_protocol.txt
// Lines:
//   subscription <case> <version> <hex>   ConsumerProtocol.serializeSubscription(case, version)
//   assignment <case> <version> <hex>     ConsumerProtocol.serializeAssignment(case, version)
//   range <case> <members> <topics> <assignment>
//     members:    id/instance/topic+topic,...   (instance "-" for a dynamic member)
//     topics:     topic:count,...               (the partition counts the leader knows)
//     assignment: id=topic:p.p;topic:p,...      (every member; "id=" when it got nothing)
// The cases' values are spelled out again in the C++ tests.
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;

public class ConsumerProtocolVectors {
  static StringBuilder out = new StringBuilder();

  static String hex(ByteBuffer b) {
    StringBuilder s = new StringBuilder();
    ByteBuffer d = b.duplicate();
    while (d.hasRemaining()) s.append(String.format("%02x", d.get() & 0xff));
    return s.length() == 0 ? "-" : s.toString();
  }

  static ByteBuffer bytes(String s) {
    return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
  }

  static void subscription(String name, Subscription s) {
    for (short v = 0; v <= 3; v++) {
      out.append("subscription ").append(name).append(' ').append(v).append(' ')
          .append(hex(ConsumerProtocol.serializeSubscription(s, v))).append('\n');
    }
  }

  static void assignment(String name, Assignment a) {
    for (short v = 0; v <= 3; v++) {
      out.append("assignment ").append(name).append(' ').append(v).append(' ')
          .append(hex(ConsumerProtocol.serializeAssignment(a, v))).append('\n');
    }
  }

  // members: "id/instance/t1+t2" entries; topics: "t:count" entries.
  static void range(String name, String members, String topics) {
    Map<String, Subscription> subs = new LinkedHashMap<>();
    for (String m : members.split(",")) {
      String[] f = m.split("/", -1);
      Subscription s = new Subscription(List.of(f[2].split("\\+")));
      if (!f[1].equals("-")) s.setGroupInstanceId(Optional.of(f[1]));
      subs.put(f[0], s);
    }
    Map<String, Integer> counts = new HashMap<>();
    for (String t : topics.split(",")) {
      String[] f = t.split(":");
      counts.put(f[0], Integer.parseInt(f[1]));
    }
    Map<String, List<TopicPartition>> assigned = new RangeAssignor().assign(counts, subs);
    List<String> parts = new ArrayList<>();
    for (String member : new TreeMap<>(assigned).keySet()) {
      List<TopicPartition> tps = new ArrayList<>(assigned.get(member));
      tps.sort(Comparator.comparing(TopicPartition::topic)
          .thenComparingInt(TopicPartition::partition));
      TreeMap<String, List<String>> byTopic = new TreeMap<>();
      for (TopicPartition tp : tps) {
        byTopic.computeIfAbsent(tp.topic(), k -> new ArrayList<>())
            .add(Integer.toString(tp.partition()));
      }
      List<String> each = new ArrayList<>();
      byTopic.forEach((t, ps) -> each.add(t + ":" + String.join(".", ps)));
      parts.add(member + "=" + String.join(";", each));
    }
    out.append("range ").append(name).append(' ').append(members).append(' ').append(topics)
        .append(' ').append(String.join(",", parts)).append('\n');
  }

  public static void main(String[] args) {
    subscription("empty", new Subscription(List.of()));
    subscription("one_topic", new Subscription(List.of("orders")));
    subscription("full", new Subscription(List.of("t1", "t2"), bytes("hello"),
        List.of(new TopicPartition("t1", 0), new TopicPartition("t1", 1),
            new TopicPartition("t2", 2)),
        5, Optional.of("rack-a")));
    subscription("empty_user_data", new Subscription(List.of("a"), ByteBuffer.allocate(0),
        List.of(), -1, Optional.empty()));

    assignment("empty", new Assignment(List.of()));
    assignment("two_topics", new Assignment(List.of(new TopicPartition("t1", 0),
        new TopicPartition("t1", 2), new TopicPartition("t2", 1))));
    assignment("user_data", new Assignment(List.of(new TopicPartition("orders", 3)),
        bytes("\u00e9t\u00e9")));

    range("one_member", "m1/-/t", "t:3");
    range("uneven", "m1/-/t,m2/-/t,m3/-/t", "t:8");
    range("co_partitioned", "m2/-/t1+t2,m1/-/t1+t2", "t1:3,t2:3");
    range("mixed_subscriptions", "m1/-/a,m2/-/a+b,m3/-/b", "a:5,b:2");
    range("more_members_than_partitions", "c/-/t,a/-/t,d/-/t,b/-/t", "t:2");
    range("static_first", "m-z/i1/t,m-a/-/t,m-b/i0/t", "t:7");
    range("missing_topic", "m1/-/t+gone,m2/-/gone", "t:2");
    range("console_ids",
        "console-consumer-f9d48eba-3783-4f0d-b0e1-9ad09d8692a8/-/t1,"
            + "console-consumer-0b5e6c1d-1111-4f0d-b0e1-9ad09d8692a8/-/t1",
        "t1:5");
    System.out.print(out);
  }
}
