// Writes golden __consumer_offsets records with Kafka's own group coordinator: the generated
// record classes of kafka-group-coordinator and its GroupCoordinatorRecordSerde (the serializer
// the coordinator's runtime writes them to the log with). tarn's generated codecs are checked
// against them in src/protocol/records_test.cc; the framing is described in docs/groups.md.
//
// Run: java -cp "$(scripts/kafka-ref libs)/*" tests/java/OffsetsRecordsGolden.java <outdir>
// The committed files in tests/fixtures/offsets-records/ were made with
// <outdir> = tests/fixtures/offsets-records.
//
// For every record <name> below: <name>.key.bin (the record's key bytes) and, unless it is a
// tombstone, <name>.value.bin (the value bytes); and index.txt, one line per record: name,
// record type, value version (or "tombstone") and Kafka's own rendering of key and value. Where
// Kafka's GroupCoordinatorRecordHelpers builds a record, it builds it here too, so those files
// are what Kafka 4.4.0's coordinator writes (including the value version it picks); the other
// records are built from the generated classes at the version the helpers use, plus older
// versions Kafka still reads. Every record is read back with the same serde and must serialize to
// the same bytes again.
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordHelpers;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.OffsetAndMetadata;
import org.apache.kafka.coordinator.group.generated.*;
import org.apache.kafka.coordinator.group.modern.MemberState;
import org.apache.kafka.coordinator.group.modern.share.ShareGroup;
import org.apache.kafka.coordinator.group.modern.share.ShareGroupMember;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public class OffsetsRecordsGolden {
  static final Uuid TOPIC_A = new Uuid(0x0123456789abcdefL, 0x1122334455667788L);
  static final Uuid TOPIC_B = new Uuid(0x7edcba9876543210L, 0x0f0e0d0c0b0a0908L);
  static final long NOW = 1_700_000_000_123L;

  static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
  static final StringBuilder INDEX = new StringBuilder();
  static Path out;
  static int files;

  public static void main(String[] args) throws Exception {
    out = Path.of(args[0]);
    Files.createDirectories(out);
    offsetCommits();
    groupMetadata();
    consumerGroups();
    shareGroups();
    Files.writeString(out.resolve("index.txt"), INDEX.toString());
    System.out.println("wrote " + files + " golden record files to " + out);
  }

  static void offsetCommits() {
    // What the coordinator writes for an OffsetCommit: version 4 without an expire timestamp,
    // version 1 with one (OffsetCommit v2-v4's RetentionTimeMs), the topic id tagged in v4.
    write("offset_commit", GroupCoordinatorRecordHelpers.newOffsetCommitRecord("group-a", "orders",
        3, new OffsetAndMetadata(1234L, OptionalInt.of(7), "meta", NOW, OptionalLong.empty(),
            TOPIC_A)));
    write("offset_commit_no_topic_id", GroupCoordinatorRecordHelpers.newOffsetCommitRecord(
        "group-a", "orders", 0, new OffsetAndMetadata(42L, OptionalInt.empty(), "", NOW,
            OptionalLong.empty(), Uuid.ZERO_UUID)));
    write("offset_commit_expire", GroupCoordinatorRecordHelpers.newOffsetCommitRecord("group-a",
        "orders", 1, new OffsetAndMetadata(99L, OptionalInt.empty(), "m", NOW,
            OptionalLong.of(NOW + 86_400_000L), TOPIC_A)));
    write("offset_commit_tombstone",
        GroupCoordinatorRecordHelpers.newOffsetCommitTombstoneRecord("group-a", "orders", 3));
    // Older versions Kafka still reads.
    for (short v = 0; v <= 3; v++) {
      OffsetCommitValue value = new OffsetCommitValue().setOffset(500L + v).setMetadata("old")
          .setCommitTimestamp(NOW - v);
      if (v == 1) value.setExpireTimestamp(NOW + 1000L);
      if (v == 3) value.setLeaderEpoch(11);
      write("offset_commit_value_v" + v, CoordinatorRecord.record(
          new OffsetCommitKey().setGroup("g").setTopic("t").setPartition(v),
          new ApiMessageAndVersion(value, v)));
    }
    // Record type 0: the key of offsets written before Kafka 0.10.1.
    write("legacy_offset_commit", CoordinatorRecord.record(
        new LegacyOffsetCommitKey().setGroup("old-group").setTopic("t").setPartition(2),
        new ApiMessageAndVersion(new LegacyOffsetCommitValue().setOffset(77L).setMetadata("")
            .setCommitTimestamp(NOW), (short) 0)));
  }

  static GroupMetadataValue.MemberMetadata member(String id, String instance, int n) {
    return new GroupMetadataValue.MemberMetadata().setMemberId(id).setGroupInstanceId(instance)
        .setClientId("client-" + n).setClientHost("/127.0.0." + n).setRebalanceTimeout(300_000)
        .setSessionTimeout(45_000).setSubscription(bytes("subscription-" + n))
        .setAssignment(bytes("assignment-" + n));
  }

  static void groupMetadata() {
    // A classic group as the coordinator writes it (version 3, GROUP_METADATA_VALUE_VERSION).
    GroupMetadataValue stable = new GroupMetadataValue().setProtocolType("consumer")
        .setGeneration(4).setProtocol("range").setLeader("member-1").setCurrentStateTimestamp(NOW)
        .setMembers(List.of(member("member-1", null, 1), member("member-2", "instance-2", 2)));
    for (short v = 0; v <= 4; v++) {
      write("group_metadata_v" + v, CoordinatorRecord.record(
          new GroupMetadataKey().setGroup("group-a"), new ApiMessageAndVersion(stable, v)));
    }
    // An empty group as newEmptyGroupMetadataRecord writes it: protocol type "", generation 0,
    // no protocol, no leader, no members.
    write("group_metadata_empty", CoordinatorRecord.record(new GroupMetadataKey().setGroup("g2"),
        new ApiMessageAndVersion(new GroupMetadataValue().setProtocolType("")
            .setGeneration(0).setProtocol(null).setLeader(null).setCurrentStateTimestamp(NOW)
            .setMembers(List.of()), (short) 3)));
    write("group_metadata_tombstone",
        GroupCoordinatorRecordHelpers.newGroupMetadataTombstoneRecord("group-a"));
  }

  static void consumerGroups() {
    String g = "cg";
    write("consumer_group_metadata",
        GroupCoordinatorRecordHelpers.newConsumerGroupEpochRecord(g, 12, 0x1234_5678_9abc_def0L));
    write("consumer_group_metadata_no_hash",
        GroupCoordinatorRecordHelpers.newConsumerGroupEpochRecord(g, 1, 0L));
    write("consumer_group_metadata_tombstone",
        GroupCoordinatorRecordHelpers.newConsumerGroupEpochTombstoneRecord(g));

    // Written before Kafka 4.1; 4.4 reads it and writes only its tombstone.
    write("consumer_group_partition_metadata", CoordinatorRecord.record(
        new ConsumerGroupPartitionMetadataKey().setGroupId(g),
        new ApiMessageAndVersion(new ConsumerGroupPartitionMetadataValue().setTopics(List.of(
            new ConsumerGroupPartitionMetadataValue.TopicMetadata().setTopicId(TOPIC_A)
                .setTopicName("orders").setNumPartitions(3).setPartitionMetadata(List.of(
                    new ConsumerGroupPartitionMetadataValue.PartitionMetadata().setPartition(0)
                        .setRacks(List.of("rack-a", "rack-b")))),
            new ConsumerGroupPartitionMetadataValue.TopicMetadata().setTopicId(TOPIC_B)
                .setTopicName("payments").setNumPartitions(1))), (short) 0)));
    write("consumer_group_partition_metadata_tombstone",
        GroupCoordinatorRecordHelpers.newConsumerGroupSubscriptionMetadataTombstoneRecord(g));

    ConsumerGroupMemberMetadataKey memberKey =
        new ConsumerGroupMemberMetadataKey().setGroupId(g).setMemberId("m-1");
    // A member of the consumer protocol: ClassicMemberMetadata null (the helper's orElse(null)).
    write("consumer_group_member_metadata", CoordinatorRecord.record(memberKey,
        new ApiMessageAndVersion(new ConsumerGroupMemberMetadataValue().setInstanceId(null)
            .setRackId(null).setClientId("client-1").setClientHost("/10.0.0.1")
            .setSubscribedTopicNames(List.of("orders", "payments")).setSubscribedTopicRegex(null)
            .setRebalanceTimeoutMs(60_000).setServerAssignor("uniform")
            .setClassicMemberMetadata(null), (short) 0)));
    // A member that joined with the classic protocol, with its supported protocols.
    write("consumer_group_member_metadata_classic", CoordinatorRecord.record(
        new ConsumerGroupMemberMetadataKey().setGroupId(g).setMemberId("m-2"),
        new ApiMessageAndVersion(new ConsumerGroupMemberMetadataValue()
            .setInstanceId("instance-2").setRackId("rack-a").setClientId("client-2")
            .setClientHost("/10.0.0.2").setSubscribedTopicNames(List.of())
            .setSubscribedTopicRegex("orders-.*").setRebalanceTimeoutMs(30_000)
            .setServerAssignor(null)
            .setClassicMemberMetadata(new ConsumerGroupMemberMetadataValue.ClassicMemberMetadata()
                .setSessionTimeoutMs(45_000).setSupportedProtocols(List.of(
                    new ConsumerGroupMemberMetadataValue.ClassicProtocol().setName("range")
                        .setMetadata(bytes("range-metadata")),
                    new ConsumerGroupMemberMetadataValue.ClassicProtocol()
                        .setName("cooperative-sticky").setMetadata(new byte[0])))),
            (short) 0)));
    write("consumer_group_member_metadata_tombstone",
        GroupCoordinatorRecordHelpers.newConsumerGroupMemberSubscriptionTombstoneRecord(g, "m-1"));

    write("consumer_group_target_assignment_metadata",
        GroupCoordinatorRecordHelpers.newConsumerGroupTargetAssignmentMetadataRecord(g, 12, NOW));
    write("consumer_group_target_assignment_metadata_tombstone",
        GroupCoordinatorRecordHelpers.newConsumerGroupTargetAssignmentMetadataTombstoneRecord(g));

    Map<Uuid, Set<Integer>> target = new LinkedHashMap<>();
    target.put(TOPIC_A, new LinkedHashSet<>(List.of(0, 2)));
    target.put(TOPIC_B, new LinkedHashSet<>(List.of(1)));
    write("consumer_group_target_assignment_member",
        GroupCoordinatorRecordHelpers.newConsumerGroupTargetAssignmentRecord(g, "m-1", target));
    write("consumer_group_target_assignment_member_tombstone",
        GroupCoordinatorRecordHelpers.newConsumerGroupTargetAssignmentTombstoneRecord(g, "m-1"));

    // AssignmentEpochs: set (as the 4.4 helper does), left at its default (the empty list: not
    // written) and null (written as a null tagged field).
    write("consumer_group_current_member_assignment", CoordinatorRecord.record(
        new ConsumerGroupCurrentMemberAssignmentKey().setGroupId(g).setMemberId("m-1"),
        new ApiMessageAndVersion(new ConsumerGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(12).setPreviousMemberEpoch(11).setState((byte) 0)
            .setAssignedPartitions(List.of(
                new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(TOPIC_A)
                    .setPartitions(List.of(0, 2)).setAssignmentEpochs(List.of(10, 12)),
                new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(TOPIC_B)
                    .setPartitions(List.of(1))))
            .setPartitionsPendingRevocation(List.of(
                new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(TOPIC_B)
                    .setPartitions(List.of(0)).setAssignmentEpochs(null))), (short) 0)));
    write("consumer_group_current_member_assignment_tombstone",
        GroupCoordinatorRecordHelpers.newConsumerGroupCurrentAssignmentTombstoneRecord(g, "m-1"));

    write("consumer_group_regular_expression", CoordinatorRecord.record(
        new ConsumerGroupRegularExpressionKey().setGroupId(g).setRegularExpression("orders-.*"),
        new ApiMessageAndVersion(new ConsumerGroupRegularExpressionValue()
            .setTopics(List.of("orders-eu", "orders-us")).setVersion(345L).setTimestamp(NOW),
            (short) 0)));
    write("consumer_group_regular_expression_tombstone",
        GroupCoordinatorRecordHelpers.newConsumerGroupRegularExpressionTombstone(g, "orders-.*"));
  }

  // Share groups (record types 10-15), every one through GroupCoordinatorRecordHelpers.
  static void shareGroups() {
    String g = "sg";
    Map<Uuid, Set<Integer>> assigned = new LinkedHashMap<>();
    assigned.put(TOPIC_A, new LinkedHashSet<>(List.of(0, 2)));
    assigned.put(TOPIC_B, new LinkedHashSet<>(List.of(1)));
    ShareGroupMember member = new ShareGroupMember.Builder("m-1")
        .setMemberEpoch(12)
        .setPreviousMemberEpoch(11)
        .setState(MemberState.STABLE)
        .setRackId(null)
        .setClientId("client-1")
        .setClientHost("/10.0.0.1")
        .setSubscribedTopicNames(List.of("payments", "orders"))
        .setAssignedPartitions(assigned)
        .build();
    ShareGroupMember racked = new ShareGroupMember.Builder(member, "m-2")
        .setRackId("rack-a")
        .setSubscribedTopicNames(List.of())
        .setAssignedPartitions(Map.of())
        .build();
    write("share_group_member_metadata",
        GroupCoordinatorRecordHelpers.newShareGroupMemberSubscriptionRecord(g, member));
    write("share_group_member_metadata_rack",
        GroupCoordinatorRecordHelpers.newShareGroupMemberSubscriptionRecord(g, racked));
    write("share_group_member_metadata_tombstone",
        GroupCoordinatorRecordHelpers.newShareGroupMemberSubscriptionTombstoneRecord(g, "m-1"));
    write("share_group_metadata",
        GroupCoordinatorRecordHelpers.newShareGroupEpochRecord(g, 12, 0x1234_5678_9abc_def0L));
    write("share_group_metadata_tombstone",
        GroupCoordinatorRecordHelpers.newShareGroupEpochTombstoneRecord(g));
    write("share_group_target_assignment_metadata",
        GroupCoordinatorRecordHelpers.newShareGroupTargetAssignmentMetadataRecord(g, 12, NOW));
    write("share_group_target_assignment_metadata_tombstone",
        GroupCoordinatorRecordHelpers.newShareGroupTargetAssignmentMetadataTombstoneRecord(g));
    write("share_group_target_assignment_member",
        GroupCoordinatorRecordHelpers.newShareGroupTargetAssignmentRecord(g, "m-1", assigned));
    write("share_group_target_assignment_member_tombstone",
        GroupCoordinatorRecordHelpers.newShareGroupTargetAssignmentTombstoneRecord(g, "m-1"));
    write("share_group_current_member_assignment",
        GroupCoordinatorRecordHelpers.newShareGroupCurrentAssignmentRecord(g, member));
    write("share_group_current_member_assignment_tombstone",
        GroupCoordinatorRecordHelpers.newShareGroupCurrentAssignmentTombstoneRecord(g, "m-1"));
    Map<Uuid, ShareGroup.InitMapValue> initialized = new LinkedHashMap<>();
    initialized.put(TOPIC_A, new ShareGroup.InitMapValue("orders",
        new LinkedHashSet<>(List.of(0, 1, 2)), NOW));
    initialized.put(TOPIC_B, new ShareGroup.InitMapValue("payments",
        new LinkedHashSet<>(List.of(0)), NOW));
    write("share_group_state_partition_metadata",
        GroupCoordinatorRecordHelpers.newShareGroupStatePartitionMetadataRecord(g, Map.of(),
            initialized, Map.of()));
    Map<Uuid, ShareGroup.InitMapValue> initializing = new LinkedHashMap<>();
    initializing.put(TOPIC_B, new ShareGroup.InitMapValue("payments",
        new LinkedHashSet<>(List.of(1)), NOW));
    Map<Uuid, String> deleting = new LinkedHashMap<>();
    deleting.put(TOPIC_A, "orders");
    write("share_group_state_partition_metadata_all",
        GroupCoordinatorRecordHelpers.newShareGroupStatePartitionMetadataRecord(g, initializing,
            Map.of(), deleting));
    write("share_group_state_partition_metadata_tombstone",
        GroupCoordinatorRecordHelpers.newShareGroupStatePartitionMetadataTombstoneRecord(g));
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static void write(String name, CoordinatorRecord record) {
    try {
      byte[] key = SERDE.serializeKey(record);
      byte[] value = SERDE.serializeValue(record);
      CoordinatorRecord back = SERDE.deserialize(ByteBuffer.wrap(key),
          value == null ? null : ByteBuffer.wrap(value));
      byte[] value2 = SERDE.serializeValue(back);
      if (!java.util.Arrays.equals(SERDE.serializeKey(back), key)
          || (value == null ? value2 != null : !java.util.Arrays.equals(value2, value))) {
        throw new IllegalStateException(name + ": read back as " + back + ", wrote " + record);
      }
      Files.write(out.resolve(name + ".key.bin"), key);
      files++;
      if (value != null) {
        Files.write(out.resolve(name + ".value.bin"), value);
        files++;
      }
      ApiMessage k = record.key();
      ApiMessageAndVersion v = record.value();
      INDEX.append(name).append('\t').append(k.apiKey()).append('\t')
          .append(v == null ? "tombstone" : "v" + v.version()).append('\t').append(k)
          .append('\t').append(v == null ? "null" : v.message()).append('\n');
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
