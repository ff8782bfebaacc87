// Writes golden protocol messages with Kafka's own generated message classes (kafka-clients), the
// independent implementation tarn's codecs are checked against (src/protocol/golden_test.cc).
//
// Run: java -cp '<dir with kafka-clients-4.4.0.jar>/*' GoldenMessages.java <outdir>
// or ... GoldenMessages.java --errors to print Kafka's error table (see printErrors).
// The committed files in tests/fixtures/protocol/ were made with <outdir> = tests/fixtures/protocol.
//
// For every message class below and every version Kafka supports for it, two files:
//   <message>_v<N>.bin          every field populated with deterministic non-default values
//   <message>_v<N>_default.bin  the message exactly as Kafka's constructor builds it
// The body only: no size prefix, no header. Values are assigned by walking the message's fields in
// declaration order with a counter (int fields get the counter, strings "s<counter>", arrays two
// elements, records a real record batch). A field that does not exist in version N is reset to
// its default when Kafka's writer refuses it, so each file is what Kafka itself sends at that
// version.
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.internal.BaseRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.internals.ImplicitLinkedHashMultiCollection;

public class GoldenMessages {
  static final Class<?>[] MESSAGES = {
    ProduceRequestData.class, ProduceResponseData.class,
    FetchRequestData.class, FetchResponseData.class,
    ListOffsetsRequestData.class, ListOffsetsResponseData.class,
    MetadataRequestData.class, MetadataResponseData.class,
    ApiVersionsRequestData.class, ApiVersionsResponseData.class,
    CreateTopicsRequestData.class, CreateTopicsResponseData.class,
    DeleteTopicsRequestData.class, DeleteTopicsResponseData.class,
    InitProducerIdRequestData.class, InitProducerIdResponseData.class,
    AddPartitionsToTxnRequestData.class, AddPartitionsToTxnResponseData.class,
    AddOffsetsToTxnRequestData.class, AddOffsetsToTxnResponseData.class,
    EndTxnRequestData.class, EndTxnResponseData.class,
    TxnOffsetCommitRequestData.class, TxnOffsetCommitResponseData.class,
    FindCoordinatorRequestData.class, FindCoordinatorResponseData.class,
    DescribeConfigsRequestData.class, DescribeConfigsResponseData.class,
    IncrementalAlterConfigsRequestData.class, IncrementalAlterConfigsResponseData.class,
    OffsetCommitRequestData.class, OffsetCommitResponseData.class,
    OffsetFetchRequestData.class, OffsetFetchResponseData.class,
    JoinGroupRequestData.class, JoinGroupResponseData.class,
    HeartbeatRequestData.class, HeartbeatResponseData.class,
    LeaveGroupRequestData.class, LeaveGroupResponseData.class,
    SyncGroupRequestData.class, SyncGroupResponseData.class,
    DescribeGroupsRequestData.class, DescribeGroupsResponseData.class,
    ListGroupsRequestData.class, ListGroupsResponseData.class,
    DeleteGroupsRequestData.class, DeleteGroupsResponseData.class,
    OffsetDeleteRequestData.class, OffsetDeleteResponseData.class,
    ConsumerGroupHeartbeatRequestData.class, ConsumerGroupHeartbeatResponseData.class,
    ConsumerGroupDescribeRequestData.class, ConsumerGroupDescribeResponseData.class,
    DeleteRecordsRequestData.class, DeleteRecordsResponseData.class,
    OffsetForLeaderEpochRequestData.class, OffsetForLeaderEpochResponseData.class,
    DescribeLogDirsRequestData.class, DescribeLogDirsResponseData.class,
    ElectLeadersRequestData.class, ElectLeadersResponseData.class,
    AlterPartitionReassignmentsRequestData.class, AlterPartitionReassignmentsResponseData.class,
    ListPartitionReassignmentsRequestData.class, ListPartitionReassignmentsResponseData.class,
    DescribeClusterRequestData.class, DescribeClusterResponseData.class,
    DescribeQuorumRequestData.class, DescribeQuorumResponseData.class,
    DescribeTopicPartitionsRequestData.class, DescribeTopicPartitionsResponseData.class,
    CreatePartitionsRequestData.class, CreatePartitionsResponseData.class,
    AlterConfigsRequestData.class, AlterConfigsResponseData.class,
    DescribeClientQuotasRequestData.class, DescribeClientQuotasResponseData.class,
    AlterClientQuotasRequestData.class, AlterClientQuotasResponseData.class,
    DescribeAclsRequestData.class, DescribeAclsResponseData.class,
    CreateAclsRequestData.class, CreateAclsResponseData.class,
    DeleteAclsRequestData.class, DeleteAclsResponseData.class,
    DescribeUserScramCredentialsRequestData.class, DescribeUserScramCredentialsResponseData.class,
    AlterUserScramCredentialsRequestData.class, AlterUserScramCredentialsResponseData.class,
    SaslHandshakeRequestData.class, SaslHandshakeResponseData.class,
    SaslAuthenticateRequestData.class, SaslAuthenticateResponseData.class,
    UpdateFeaturesRequestData.class, UpdateFeaturesResponseData.class,
    WriteTxnMarkersRequestData.class, WriteTxnMarkersResponseData.class,
    DescribeProducersRequestData.class, DescribeProducersResponseData.class,
    DescribeTransactionsRequestData.class, DescribeTransactionsResponseData.class,
    ListTransactionsRequestData.class, ListTransactionsResponseData.class,
    ShareGroupHeartbeatRequestData.class, ShareGroupHeartbeatResponseData.class,
    ShareGroupDescribeRequestData.class, ShareGroupDescribeResponseData.class,
    ShareFetchRequestData.class, ShareFetchResponseData.class,
    ShareAcknowledgeRequestData.class, ShareAcknowledgeResponseData.class,
    DescribeShareGroupOffsetsRequestData.class, DescribeShareGroupOffsetsResponseData.class,
    AlterShareGroupOffsetsRequestData.class, AlterShareGroupOffsetsResponseData.class,
    DeleteShareGroupOffsetsRequestData.class, DeleteShareGroupOffsetsResponseData.class,
    InitializeShareGroupStateRequestData.class, InitializeShareGroupStateResponseData.class,
    ReadShareGroupStateRequestData.class, ReadShareGroupStateResponseData.class,
    WriteShareGroupStateRequestData.class, WriteShareGroupStateResponseData.class,
    DeleteShareGroupStateRequestData.class, DeleteShareGroupStateResponseData.class,
    ReadShareGroupStateSummaryRequestData.class, ReadShareGroupStateSummaryResponseData.class,
    RequestHeaderData.class, ResponseHeaderData.class,
  };

  static int counter;

  public static void main(String[] args) throws Exception {
    if (args[0].equals("--errors")) {
      printErrors();
      return;
    }
    Path out = Path.of(args[0]);
    Files.createDirectories(out);
    int files = 0;
    for (Class<?> c : MESSAGES) {
      Message probe = (Message) c.getDeclaredConstructor().newInstance();
      String name = snake(c.getSimpleName().replaceAll("Data$", ""));
      for (short v = probe.lowestSupportedVersion(); v <= probe.highestSupportedVersion(); v++) {
        counter = 0;
        Message full = (Message) c.getDeclaredConstructor().newInstance();
        populate(full);
        Files.write(out.resolve(name + "_v" + v + ".bin"), serialize(full, v));
        Message empty = (Message) c.getDeclaredConstructor().newInstance();
        Files.write(out.resolve(name + "_v" + v + "_default.bin"), serialize(empty, v));
        files += 2;
      }
    }
    System.out.println("wrote " + files + " golden files to " + out);
  }

  // Serializes at version v; fields Kafka refuses at v are reset to their defaults, one by one.
  static byte[] serialize(Message m, short v) throws Exception {
    for (int attempt = 0; attempt < 200; attempt++) {
      try {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = m.size(cache, v);
        ByteBuffer buf = ByteBuffer.allocate(size);
        m.write(new ByteBufferAccessor(buf), cache, v);
        if (buf.hasRemaining()) throw new IllegalStateException("size mismatch");
        return buf.array();
      } catch (UnsupportedVersionException e) {
        String msg = String.valueOf(e.getMessage());
        String prefix = "Attempted to write a non-default ";
        int i = msg.indexOf(prefix);
        if (i < 0) throw e;
        String field = msg.substring(i + prefix.length()).split(" ")[0];
        if (!resetField(m, field)) throw e;
      }
    }
    throw new IllegalStateException("too many unsupported fields in " + m.getClass());
  }

  // Resets every field called `name` anywhere in the tree to the value a new instance holds.
  static boolean resetField(Object o, String name) throws Exception {
    boolean found = false;
    for (Field f : fields(o.getClass())) {
      Object value = f.get(o);
      if (f.getName().equals(name)) {
        Object fresh = o.getClass().getDeclaredConstructor().newInstance();
        f.set(o, f.get(fresh));
        found = true;
      } else if (value instanceof Message) {
        found |= resetField(value, name);
      } else if (value instanceof Collection<?> items) {
        for (Object item : items) {
          if (item instanceof Message) found |= resetField(item, name);
        }
      }
    }
    return found;
  }

  static List<Field> fields(Class<?> c) {
    List<Field> out = new ArrayList<>();
    boolean element = ImplicitLinkedHashMultiCollection.Element.class.isAssignableFrom(c);
    for (Field f : c.getDeclaredFields()) {
      if (Modifier.isStatic(f.getModifiers())) continue;
      if (f.getName().equals("_unknownTaggedFields")) continue;
      if (element && (f.getName().equals("next") || f.getName().equals("prev"))) continue;
      f.setAccessible(true);
      out.add(f);
    }
    return out;
  }

  static void populate(Object o) throws Exception {
    for (Field f : fields(o.getClass())) {
      f.set(o, value(f.getType(), f.getGenericType()));
    }
  }

  static Object value(Class<?> t, Type generic) throws Exception {
    int n = ++counter;
    if (t == byte.class || t == Byte.class) return (byte) (n % 100);
    if (t == short.class || t == Short.class) return (short) n;
    if (t == int.class || t == Integer.class) return 1000 + n;
    if (t == long.class || t == Long.class) return 1_000_000_000_000L + n;
    if (t == double.class || t == Double.class) return n + 0.5;
    if (t == boolean.class || t == Boolean.class) return true;
    if (t == String.class) return "s" + n;
    if (t == Uuid.class) return new Uuid(0x0102030405060708L + n, 0x1112131415161718L + n);
    if (t == byte[].class) return new byte[] {(byte) n, 1, 2, 3};
    if (BaseRecords.class.isAssignableFrom(t)) {
      return MemoryRecords.withRecords(Compression.NONE,
          new SimpleRecord(1_700_000_000_000L + n, ("key" + n).getBytes(), ("value" + n).getBytes()));
    }
    if (Message.class.isAssignableFrom(t)) {
      Object m = t.getDeclaredConstructor().newInstance();
      populate(m);
      return m;
    }
    if (ImplicitLinkedHashMultiCollection.class.isAssignableFrom(t)) {
      @SuppressWarnings("unchecked")
      Collection<Object> c = (Collection<Object>) t.getDeclaredConstructor().newInstance();
      Type elem = ((ParameterizedType) t.getGenericSuperclass()).getActualTypeArguments()[0];
      for (int i = 0; i < 2; i++) c.add(value((Class<?>) elem, elem));
      return c;
    }
    if (List.class.isAssignableFrom(t)) {
      Type elem = ((ParameterizedType) generic).getActualTypeArguments()[0];
      List<Object> l = new ArrayList<>();
      for (int i = 0; i < 2; i++) l.add(value((Class<?>) elem, elem));
      return l;
    }
    throw new IllegalArgumentException("no value for " + t);
  }

  // One line per Kafka error: code, name, retriable, default message (tab separated), the
  // reference schema/errors.schema is checked against (src/protocol/schema_vs_kafka_test.py).
  static void printErrors() {
    for (Errors e : Errors.values()) {
      boolean retriable = e.exception() instanceof RetriableException;
      String message = e.message() == null ? "" : e.message().replace('\n', ' ');
      System.out.println(e.code() + "\t" + e.name() + "\t" + retriable + "\t" + message);
    }
  }

  static String snake(String camel) {
    return camel.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toLowerCase();
  }

}
