// Share groups in __consumer_offsets without sockets: the records are Kafka 4.4's bytes (the
// golden files tests/java/OffsetsRecordsGolden.java made with Kafka's own record helpers), a
// heartbeat writes what changed in Kafka's order, a new coordinator replaying the log gets the
// same groups back, members found in the log keep their epoch and are removed after the session
// timeout if they do not heartbeat, DeleteGroups writes the tombstones, and a failed append
// leaves the group as it was.
#include "coordinator/share_group_records.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <memory>

#include "coordinator/group_coordinator.h"
#include "coordinator/group_records.h"
#include "coordinator/share_coordinator.h"
#include "coordinator/test_support.h"
#include "coordinator/wire_ids.h"
#include "protocol/reader.h"

namespace tarn::coordinator {
namespace {

using protocol::error_code;

std::vector<uint8_t> golden(const std::string& name) {
  const std::string path = std::string(TARN_SOURCE_DIR) + "/tests/fixtures/offsets-records/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// OffsetsRecordsGolden.java's TOPIC_A and TOPIC_B.
constexpr topic_uuid topic_a = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
constexpr topic_uuid topic_b = {0x7e, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
                                0x0f, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08};

int16_t type_of(const coordinator_record& r) {
  protocol::reader k(r.key);
  return k.read_int16();
}

const coordinator_record* find_type(const std::vector<coordinator_record>& rs, int16_t type) {
  for (const auto& r : rs) {
    if (type_of(r) == type) return &r;
  }
  return nullptr;
}

share_group_member golden_member() {
  share_group_member m;
  m.member_id = "m-1";
  m.member_epoch = 12;
  m.previous_member_epoch = 11;
  m.client_id = "client-1";
  m.client_host = "/10.0.0.1";
  m.subscribed_topic_names = {"orders", "payments"};
  m.assignment = {{topic_a, {0, 2}}, {topic_b, {1}}};
  m.current_assignment = m.assignment;
  return m;
}

TEST(share_group_records, a_new_group_is_written_with_kafkas_bytes) {
  share_group_state g;
  g.group_id = "sg";
  g.group_epoch = 12;
  g.metadata_hash = 0x123456789abcdef0;
  g.assignment_epoch = 12;
  g.assignment_timestamp_ms = 1700000000123;
  g.members["m-1"] = golden_member();
  g.initialized[topic_a] = {"orders", {0, 1, 2}};
  g.initialized[topic_b] = {"payments", {0}};
  auto records = share_group_change_records(std::nullopt, g);
  // Kafka's order: subscription, epoch, target member, target epoch, current assignment, then
  // the initialized share-partitions.
  ASSERT_EQ(records.size(), 6u);
  const std::vector<std::pair<int16_t, std::string>> expected = {
      {10, "share_group_member_metadata"},           {11, "share_group_metadata"},
      {13, "share_group_target_assignment_member"},  {12, "share_group_target_assignment_metadata"},
      {14, "share_group_current_member_assignment"}, {15, "share_group_state_partition_metadata"}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(type_of(records[i]), expected[i].first) << i;
    EXPECT_EQ(records[i].key, golden(expected[i].second + ".key.bin")) << expected[i].second;
    ASSERT_TRUE(records[i].value) << expected[i].second;
    EXPECT_EQ(*records[i].value, golden(expected[i].second + ".value.bin")) << expected[i].second;
  }

  // A member with a rack and no subscription or assignment (Kafka's m-2).
  share_group_state two = g;
  share_group_member m2;
  m2.member_id = "m-2";
  m2.rack_id = "rack-a";
  m2.member_epoch = 12;
  m2.previous_member_epoch = 11;
  m2.client_id = "client-1";
  m2.client_host = "/10.0.0.1";
  two.members["m-2"] = m2;
  auto added = share_group_change_records(g, two);
  const auto* sub = find_type(added, 10);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(*sub->value, golden("share_group_member_metadata_rack.value.bin"));

  // Nothing changed: nothing written.
  EXPECT_TRUE(share_group_change_records(g, g).empty());

  // The member leaves: its three tombstones first, in Kafka's removeMember order.
  share_group_state gone = g;
  gone.members.clear();
  gone.group_epoch = 13;
  gone.assignment_epoch = 13;
  auto left = share_group_change_records(g, gone);
  ASSERT_GE(left.size(), 4u);
  EXPECT_EQ(left[0].key, golden("share_group_current_member_assignment_tombstone.key.bin"));
  EXPECT_FALSE(left[0].value);
  EXPECT_EQ(left[1].key, golden("share_group_target_assignment_member_tombstone.key.bin"));
  EXPECT_EQ(left[2].key, golden("share_group_member_metadata_tombstone.key.bin"));
  EXPECT_EQ(type_of(left[3]), 11);

  // DeleteGroups: Kafka's createGroupTombstoneRecords.
  auto tombstones = share_group_tombstones(gone);
  ASSERT_EQ(tombstones.size(), 3u);
  EXPECT_EQ(tombstones[0].key, golden("share_group_target_assignment_metadata_tombstone.key.bin"));
  EXPECT_EQ(tombstones[1].key, golden("share_group_state_partition_metadata_tombstone.key.bin"));
  EXPECT_EQ(tombstones[2].key, golden("share_group_metadata_tombstone.key.bin"));
  for (const auto& t : tombstones) EXPECT_FALSE(t.value);
}

TEST(share_group_records, kafkas_records_replay_into_the_group) {
  share_group_replay replay;
  for (const char* name :
       {"share_group_member_metadata", "share_group_metadata",
        "share_group_target_assignment_member", "share_group_target_assignment_metadata",
        "share_group_current_member_assignment", "share_group_state_partition_metadata_all"}) {
    auto value = golden(std::string(name) + ".value.bin");
    replay.apply(golden(std::string(name) + ".key.bin"), std::span<const uint8_t>(value));
  }
  EXPECT_EQ(replay.skipped(), 0);
  ASSERT_EQ(replay.groups().size(), 1u);
  const share_group_state& g = replay.groups().at("sg");
  EXPECT_EQ(g.group_epoch, 12);
  EXPECT_EQ(g.metadata_hash, 0x123456789abcdef0);
  EXPECT_EQ(g.assignment_epoch, 12);
  EXPECT_EQ(g.assignment_timestamp_ms, 1700000000123);
  ASSERT_EQ(g.members.size(), 1u);
  const share_group_member& m = g.members.at("m-1");
  EXPECT_EQ(m.member_epoch, 12);
  EXPECT_EQ(m.previous_member_epoch, 11);
  EXPECT_EQ(m.client_host, "/10.0.0.1");
  EXPECT_EQ(m.subscribed_topic_names, (std::vector<std::string>{"orders", "payments"}));
  EXPECT_EQ(m.assignment, (share_assignment{{topic_a, {0, 2}}, {topic_b, {1}}}));
  EXPECT_EQ(m.current_assignment, m.assignment);
  // Initializing share-partitions come back initialized; deleting topics are gone.
  ASSERT_EQ(g.initialized.size(), 1u);
  EXPECT_EQ(g.initialized.at(topic_b), (share_initialized_topic{"payments", {1}}));

  // Tombstones: the member's, then the group's.
  for (const char* name : {"share_group_current_member_assignment_tombstone",
                           "share_group_target_assignment_member_tombstone",
                           "share_group_member_metadata_tombstone"}) {
    replay.apply(golden(std::string(name) + ".key.bin"), std::nullopt);
  }
  EXPECT_TRUE(replay.groups().at("sg").members.empty());
  replay.apply(golden("share_group_metadata_tombstone.key.bin"), std::nullopt);
  EXPECT_TRUE(replay.groups().empty());

  // Other types are not the share groups' business; a torn share record is skipped.
  replay.apply(golden("offset_commit.key.bin"), std::nullopt);
  auto value = golden("share_group_metadata.value.bin");
  value.resize(5);
  replay.apply(golden("share_group_metadata.key.bin"), std::span<const uint8_t>(value));
  auto member = golden("share_group_member_metadata.value.bin");
  member.resize(member.size() - 3);
  replay.apply(golden("share_group_member_metadata.key.bin"), std::span<const uint8_t>(member));
  EXPECT_EQ(replay.skipped(), 2);
  EXPECT_TRUE(replay.groups().empty());  // no group, no member made of the torn records
}

TEST(share_group_records, the_group_coordinator_leaves_share_records_alone) {
  auto value = golden("share_group_metadata.value.bin");
  auto decoded =
      decode_record(golden("share_group_metadata.key.bin"), std::span<const uint8_t>(value));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_NE(std::get_if<loaded_share_group_record>(&*decoded), nullptr);
}

struct persisted_fixture {
  testing::memory_metadata metadata;
  testing::memory_offsets_log groups_log{4};
  std::unique_ptr<share_coordinator> shares = fresh();
  std::vector<std::string_view> names = {"t"};

  // Every change gets its target at once (group.share.assignment.interval.ms 0): these tests
  // are about the records, share_coordinator_test about the interval.
  std::unique_ptr<share_coordinator> fresh() {
    share_config config;
    config.group_share_assignment_interval_ms = 0;
    return std::make_unique<share_coordinator>(config, metadata, nullptr, &groups_log);
  }
  // Only the answer's numbers are read: its strings are views into an arena freed on return.
  protocol::share_group_heartbeat_response beat(share_coordinator& c, std::string_view member,
                                                int32_t epoch, int64_t now_ms = 0) {
    protocol::share_group_heartbeat_request r;
    r.group_id = "g";
    r.member_id = member;
    r.member_epoch = epoch;
    if (epoch == 0) r.subscribed_topic_names = names;
    return c.heartbeat(r, {"client", "/127.0.0.1"}, now_ms).message;
  }
  std::vector<std::string> member_ids(share_coordinator& c) {
    protocol::share_group_describe_request r;
    r.group_ids = {"g"};
    // Held whole: the member ids are views into the answer's arena.
    auto d = c.describe(r);
    std::vector<std::string> out;
    for (const auto& m : d.message.groups.at(0).members) out.emplace_back(m.member_id);
    return out;
  }
  // The whole answer: its strings are views into its arena.
  owned_message<protocol::share_group_describe_response> describe(share_coordinator& c) {
    protocol::share_group_describe_request r;
    r.group_ids = {"g"};
    return c.describe(r);
  }
};

TEST(share_group_records, a_restarted_coordinator_keeps_epochs_members_and_assignments) {
  persisted_fixture f;
  f.metadata.add("t", 4);
  auto a = f.beat(*f.shares, "a", 0);
  auto b = f.beat(*f.shares, "b", 0);
  ASSERT_EQ(b.error_code, 0);
  a = f.beat(*f.shares, "a", a.member_epoch);
  ASSERT_EQ(a.error_code, 0);
  ASSERT_EQ(a.member_epoch, b.member_epoch);
  // Every record went to the group's partition of __consumer_offsets.
  const int32_t partition = partition_for("g", 4);
  for (const auto& [key, value] : f.groups_log.records()) {
    protocol::reader k(key);
    EXPECT_TRUE(is_share_group_record_type(k.read_int16()));
  }
  int on_partition = 0;
  (void)f.groups_log.replay(partition, [&](const offsets_record&) { ++on_partition; });
  EXPECT_EQ(static_cast<size_t>(on_partition), f.groups_log.records().size());
  const auto described_before = f.describe(*f.shares);
  const auto& before = described_before.message.groups.at(0);

  // A new coordinator on the same log: the same group, members, epochs and assignments.
  auto restarted = f.fresh();
  ASSERT_TRUE(restarted->load(1000));
  EXPECT_EQ(restarted->group_count(), 1u);
  EXPECT_EQ(restarted->skipped_group_records(), 0);
  const auto described_after = f.describe(*restarted);
  const auto& after = described_after.message.groups.at(0);
  EXPECT_EQ(after.group_epoch, before.group_epoch);
  EXPECT_EQ(after.assignment_epoch, before.assignment_epoch);
  ASSERT_EQ(after.members.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(after.members[i].member_id, before.members[i].member_id);
    EXPECT_EQ(after.members[i].member_epoch, before.members[i].member_epoch);
    ASSERT_EQ(after.members[i].assignment.topic_partitions.size(), 1u);
    EXPECT_EQ(after.members[i].assignment.topic_partitions[0].partitions,
              before.members[i].assignment.topic_partitions[0].partitions);
  }
  // a heartbeats with the epoch it had: it goes on, nothing moves.
  auto again = f.beat(*restarted, "a", a.member_epoch, 2000);
  EXPECT_EQ(again.error_code, 0);
  EXPECT_EQ(again.member_epoch, a.member_epoch);
  // b never comes back: its session timeout runs from the load (45 s), as Kafka's onLoaded.
  restarted->poll(1000 + 44000);
  EXPECT_EQ(f.member_ids(*restarted), (std::vector<std::string>{"a", "b"}));
  (void)f.beat(*restarted, "a", a.member_epoch, 40000);  // a keeps its session
  restarted->poll(1000 + 45000);
  EXPECT_EQ(f.member_ids(*restarted), std::vector<std::string>{"a"});
  auto moved = f.beat(*restarted, "a", a.member_epoch, 46000);
  EXPECT_GT(moved.member_epoch, a.member_epoch);
  ASSERT_TRUE(moved.assignment);
  EXPECT_EQ(moved.assignment->topic_partitions.at(0).partitions,
            (std::vector<int32_t>{0, 1, 2, 3}));

  // b's removal was written too: a third coordinator has only a, at the new epoch.
  auto third = f.fresh();
  ASSERT_TRUE(third->load(50000));
  const auto described_last = f.describe(*third);
  const auto& last = described_last.message.groups.at(0);
  EXPECT_EQ(last.group_epoch, moved.member_epoch);
  ASSERT_EQ(last.members.size(), 1u);
  EXPECT_EQ(last.members[0].member_epoch, moved.member_epoch);
}

TEST(share_group_records, delete_groups_writes_tombstones_and_a_failed_append_changes_nothing) {
  persisted_fixture f;
  f.metadata.add("t", 1);
  auto a = f.beat(*f.shares, "a", 0);
  ASSERT_EQ(a.error_code, 0);
  // The log refuses: the heartbeat fails with Kafka's mapped error and the group is unchanged.
  f.groups_log.fail_with = error_code::not_enough_replicas;
  auto b = f.beat(*f.shares, "b", 0);
  EXPECT_EQ(b.error_code, protocol::code(error_code::coordinator_not_available));
  auto leave = f.beat(*f.shares, "a", -1);
  EXPECT_EQ(leave.error_code, protocol::code(error_code::coordinator_not_available));
  EXPECT_EQ(f.member_ids(*f.shares), std::vector<std::string>{"a"});
  EXPECT_EQ(f.describe(*f.shares).message.groups.at(0).group_epoch, a.member_epoch);
  f.groups_log.fail_with = error_code::none;

  EXPECT_EQ(f.beat(*f.shares, "a", -1).error_code, 0);
  EXPECT_EQ(f.shares->delete_group("g"), error_code::none);
  auto restarted = f.fresh();
  ASSERT_TRUE(restarted->load(0));
  EXPECT_EQ(restarted->group_count(), 0u);
  EXPECT_FALSE(restarted->has_group("g"));
}

// In a cluster a share group is served by the leader of its partition of __consumer_offsets and
// moves with it, as consumer groups do: NOT_COORDINATOR where the partition is not led,
// COORDINATOR_LOAD_IN_PROGRESS while it loads, and the group (epochs, members, assignments)
// replayed from the partition when this broker becomes its leader.
TEST(share_group_records, share_groups_load_and_unload_with_their_partition) {
  persisted_fixture f;
  f.metadata.add("t", 2);
  auto a = f.beat(*f.shares, "a", 0);
  ASSERT_EQ(a.error_code, 0);
  const int32_t p = partition_for("g", 4);

  // Another broker's coordinator over the same log, leading nothing yet.
  auto other = f.fresh();
  other->start_unowned();
  ASSERT_TRUE(other->load(0));
  EXPECT_EQ(other->group_count(), 0u);
  EXPECT_EQ(f.beat(*other, "a", a.member_epoch).error_code,
            protocol::code(error_code::not_coordinator));
  EXPECT_EQ(f.describe(*other).message.groups.at(0).error_code,
            protocol::code(error_code::not_coordinator));
  EXPECT_FALSE(other->has_group("g"));
  // While the partition's replay runs, its share groups are loading.
  int16_t during = -1;
  f.groups_log.on_replay = [&] { during = f.beat(*other, "a", a.member_epoch).error_code; };
  ASSERT_TRUE(other->load_group_partition(p, 0));
  f.groups_log.on_replay = nullptr;
  EXPECT_EQ(during, protocol::code(error_code::coordinator_load_in_progress));
  // Loaded: the member goes on with its epoch and assignment.
  auto again = f.beat(*other, "a", a.member_epoch);
  EXPECT_EQ(again.error_code, 0);
  EXPECT_EQ(again.member_epoch, a.member_epoch);
  EXPECT_EQ(f.member_ids(*other), std::vector<std::string>{"a"});
  EXPECT_EQ(other->list_groups().size(), 1u);
  // Another partition led here does not bring the group back after it moved away.
  other->unload_group_partition(p);
  ASSERT_TRUE(other->load_group_partition((p + 1) % 4, 0));
  EXPECT_EQ(f.beat(*other, "a", a.member_epoch).error_code,
            protocol::code(error_code::not_coordinator));
  EXPECT_TRUE(other->list_groups().empty());
  EXPECT_FALSE(other->has_group("g"));
  // A load overtaken by an unload installs nothing.
  f.groups_log.on_replay = [&] { other->unload_group_partition(p); };
  EXPECT_FALSE(other->load_group_partition(p, 0));
  f.groups_log.on_replay = nullptr;
  EXPECT_EQ(f.beat(*other, "a", a.member_epoch).error_code,
            protocol::code(error_code::not_coordinator));
}

}  // namespace
}  // namespace tarn::coordinator
