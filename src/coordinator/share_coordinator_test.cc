// Share groups without sockets: ShareGroupHeartbeat's membership, epochs and simple-assignor
// assignment, its error codes, share-session epochs and the release of a leaving member's
// records.
#include "coordinator/share_coordinator.h"

#include <gtest/gtest.h>

#include "coordinator/test_support.h"
#include "coordinator/wire_ids.h"

namespace tarn::coordinator {
namespace {

using protocol::error_code;

// The tests here but the assignment interval's compute a target at every change, all at time 0
// (group.share.assignment.interval.ms 0).
share_config assign_at_once() {
  share_config c;
  c.group_share_assignment_interval_ms = 0;
  return c;
}

struct fixture {
  explicit fixture(share_config config = assign_at_once()) : shares(config, metadata) {}
  testing::memory_metadata metadata;
  share_coordinator shares;
  std::vector<std::string_view> names;

  protocol::share_group_heartbeat_response beat(std::string_view member, int32_t epoch,
                                                bool subscribe = false,
                                                std::string_view group = "g", int64_t now = 0) {
    protocol::share_group_heartbeat_request r;
    r.group_id = group;
    r.member_id = member;
    r.member_epoch = epoch;
    names = {"t"};
    if (subscribe) r.subscribed_topic_names = names;
    return shares.heartbeat(r, {"client", "/127.0.0.1"}, now).message;
  }
};

std::vector<int32_t> partitions_of(const protocol::share_group_heartbeat_response& r) {
  std::vector<int32_t> out;
  if (!r.assignment) return out;
  for (const auto& tp : r.assignment->topic_partitions) {
    out.insert(out.end(), tp.partitions.begin(), tp.partitions.end());
  }
  return out;
}

TEST(share_coordinator, members_of_a_one_partition_topic_all_share_it) {
  fixture f;
  f.metadata.add("t", 1);
  auto a = f.beat("a", 0, true);
  EXPECT_EQ(a.error_code, 0);
  EXPECT_EQ(a.heartbeat_interval_ms, 5000);
  EXPECT_EQ(partitions_of(a), std::vector<int32_t>{0});
  auto b = f.beat("b", 0, true);
  EXPECT_EQ(partitions_of(b), std::vector<int32_t>{0});
  EXPECT_GT(b.member_epoch, a.member_epoch);
  // a heartbeats with its epoch: accepted, moved to the group's epoch.
  auto a2 = f.beat("a", a.member_epoch);
  EXPECT_EQ(a2.error_code, 0);
  EXPECT_EQ(a2.member_epoch, b.member_epoch);
}

// group.share.assignment.interval.ms (KIP-1263, 1000 ms by default): the first target at once,
// then at most one a second; a member that joins meanwhile has no partitions and the last
// target's epoch until a heartbeat after the interval computes the next one, which each member
// gets at its own next heartbeat. A group's share.assignment.interval.ms replaces it.
TEST(share_coordinator, assignment_changes_wait_for_the_assignment_interval) {
  fixture f{share_config{}};
  f.metadata.add("t", 2);
  auto a = f.beat("a", 0, true, "g", 0);
  EXPECT_EQ(partitions_of(a), (std::vector<int32_t>{0, 1}));
  auto b = f.beat("b", 0, true, "g", 100);
  ASSERT_EQ(b.error_code, 0);
  ASSERT_TRUE(b.assignment);
  EXPECT_TRUE(partitions_of(b).empty());
  EXPECT_EQ(b.member_epoch, a.member_epoch);  // the target's epoch: nothing computed for b yet
  auto a2 = f.beat("a", a.member_epoch, false, "g", 999);
  EXPECT_EQ(a2.member_epoch, a.member_epoch);
  EXPECT_FALSE(a2.assignment);  // unchanged
  auto b2 = f.beat("b", b.member_epoch, false, "g", 1000);
  EXPECT_GT(b2.member_epoch, a.member_epoch);
  EXPECT_EQ(partitions_of(b2), std::vector<int32_t>{1});
  auto a3 = f.beat("a", a.member_epoch, false, "g", 1100);
  EXPECT_EQ(a3.member_epoch, b2.member_epoch);
  EXPECT_EQ(partitions_of(a3), std::vector<int32_t>{0});
  // The group's own interval: 0 assigns at every change.
  f.shares.set_group_configs("g", {{"share.assignment.interval.ms", "0"}});
  auto c = f.beat("c", 0, true, "g", 1200);
  EXPECT_GT(c.member_epoch, b2.member_epoch);
  EXPECT_EQ(partitions_of(c), std::vector<int32_t>{0});
}

// group.share.assignment.interval.ms changed at runtime (a dynamic broker config): groups
// without their own share.assignment.interval.ms follow it at once; one with it keeps its own.
TEST(share_coordinator, dynamic_assignment_interval_reaches_every_group_without_its_own) {
  fixture f{share_config{}};
  f.metadata.add("t", 2);
  f.shares.set_group_configs("own", {{"share.assignment.interval.ms", "1000"}});
  f.shares.set_assignment_interval_ms(0);
  EXPECT_EQ(f.shares.group_settings("g").assignment_interval_ms, 0);
  EXPECT_EQ(f.shares.group_settings("own").assignment_interval_ms, 1000);
  auto a = f.beat("a", 0, true, "g", 0);
  auto b = f.beat("b", 0, true, "g", 100);
  EXPECT_GT(b.member_epoch, a.member_epoch);  // computed at once: no interval
  EXPECT_EQ(partitions_of(b), std::vector<int32_t>{1});
  auto oa = f.beat("a", 0, true, "own", 0);
  auto ob = f.beat("b", 0, true, "own", 100);
  EXPECT_EQ(ob.member_epoch, oa.member_epoch);  // its own 1000 ms still holds
  EXPECT_TRUE(partitions_of(ob).empty());
  f.shares.set_assignment_interval_ms(5000);
  EXPECT_EQ(f.shares.group_settings("g").assignment_interval_ms, 5000);
  EXPECT_EQ(f.shares.group_settings("own").assignment_interval_ms, 1000);
}

TEST(share_coordinator, more_partitions_than_members_are_split) {
  auto out =
      simple_share_assignment({{"a", {{"t", topic_uuid{1}, 4}}}, {"b", {{"t", topic_uuid{1}, 4}}}});
  EXPECT_EQ(out["a"][topic_uuid{1}], (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(out["b"][topic_uuid{1}], (std::vector<int32_t>{1, 3}));
  out = simple_share_assignment({{"a", {{"t", topic_uuid{1}, 2}}},
                                 {"b", {{"t", topic_uuid{1}, 2}}},
                                 {"c", {{"t", topic_uuid{1}, 2}}}});
  EXPECT_EQ(out["c"][topic_uuid{1}], (std::vector<int32_t>{0}));
}

TEST(share_coordinator, heartbeat_errors) {
  fixture f;
  f.metadata.add("t", 1);
  EXPECT_EQ(f.beat("", 0, true).error_code, protocol::code(error_code::invalid_request));
  EXPECT_EQ(f.beat("a", 0, false).error_code, protocol::code(error_code::invalid_request));
  EXPECT_EQ(f.beat("a", -2, true).error_code, protocol::code(error_code::invalid_request));
  EXPECT_EQ(f.beat("a", 1, false, "nope").error_code,
            protocol::code(error_code::group_id_not_found));
  auto a = f.beat("a", 0, true);
  EXPECT_EQ(f.beat("x", 1).error_code, protocol::code(error_code::unknown_member_id));
  EXPECT_EQ(f.beat("a", a.member_epoch + 5).error_code,
            protocol::code(error_code::fenced_member_epoch));
  auto left = f.beat("a", -1);
  EXPECT_EQ(left.error_code, 0);
  EXPECT_EQ(left.member_epoch, -1);
  EXPECT_EQ(f.beat("a", a.member_epoch).error_code, protocol::code(error_code::unknown_member_id));
}

TEST(share_coordinator, session_epochs) {
  fixture f;
  share_topic_partition tp{topic_uuid{1}, 0};
  EXPECT_EQ(f.shares.step_session("g", "a", 1, {}, {}).error, error_code::share_session_not_found);
  auto s = f.shares.step_session("g", "a", 0, {tp}, {});
  EXPECT_EQ(s.error, error_code::none);
  EXPECT_EQ(s.partitions.size(), 1u);
  EXPECT_EQ(f.shares.step_session("g", "a", 2, {}, {}).error,
            error_code::invalid_share_session_epoch);
  EXPECT_EQ(f.shares.step_session("g", "a", 1, {}, {}).error, error_code::none);
  s = f.shares.step_session("g", "a", 2, {}, {tp});
  EXPECT_EQ(s.error, error_code::none);
  EXPECT_TRUE(s.partitions.empty());
  EXPECT_EQ(f.shares.step_session("g", "a", 2, {}, {}).error,
            error_code::invalid_share_session_epoch);
  f.shares.close_session("g", "a", 0);
  EXPECT_EQ(f.shares.step_session("g", "a", 3, {}, {}).error, error_code::share_session_not_found);
}

TEST(share_coordinator, a_leaving_member_releases_what_it_holds) {
  fixture f;
  f.metadata.add("t", 1);
  const topic_uuid id = f.metadata.topic("t")->id;
  share_topic_partition tp{id, 0};
  f.beat("a", 0, true);
  f.shares.set_group_configs("g", {{"share.auto.offset.reset", "earliest"}});
  EXPECT_EQ(f.shares.next_fetch_offset("g", tp, 0, 10, 0), 0);
  std::vector<fetched_batch> read = {{0, 9, false}};
  auto got = f.shares.acquire("g", "a", tp, read, 500, 0);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{0, 9, 1}));
  EXPECT_EQ(f.shares.next_fetch_offset("g", tp, 0, 10, 1), 10);
  f.beat("a", -1);
  EXPECT_EQ(f.shares.next_fetch_offset("g", tp, 0, 10, 2), 0);
  got = f.shares.acquire("g", "b", tp, read, 500, 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{0, 9, 2}));
}

TEST(share_coordinator, offsets_are_altered_and_deleted_only_in_an_empty_group) {
  fixture f;
  f.metadata.add("t", 1);
  share_topic_partition tp{f.metadata.topic("t")->id, 0};
  EXPECT_EQ(f.shares.check_offsets_alterable("g", false), error_code::group_id_not_found);
  EXPECT_EQ(f.shares.check_offsets_alterable("g", true), error_code::none);  // made, empty
  f.shares.set_start_offset("g", tp, 4);
  EXPECT_EQ(f.shares.start_offset("g", tp), 4);
  EXPECT_EQ(f.shares.next_fetch_offset("g", tp, 0, 10, 0), 4);  // not reset again
  f.beat("a", 0, true);
  EXPECT_EQ(f.shares.check_offsets_alterable("g", true), error_code::non_empty_group);
  f.shares.delete_topic_offsets("g", tp.topic_id);
  EXPECT_FALSE(f.shares.start_offset("g", tp).has_value());
}

TEST(share_coordinator, latest_starts_at_the_high_watermark_and_sessions_time_out) {
  fixture f;
  f.metadata.add("t", 1);
  share_topic_partition tp{f.metadata.topic("t")->id, 0};
  EXPECT_EQ(f.shares.next_fetch_offset("g", tp, 0, 7, 0), 7);
  EXPECT_EQ(f.shares.start_offset("g", tp), 7);
  f.beat("a", 0, true);
  EXPECT_EQ(f.shares.list_groups().size(), 1u);
  EXPECT_EQ(f.shares.list_groups()[0].second, "Stable");
  EXPECT_EQ(f.shares.delete_group("g"), error_code::non_empty_group);
  f.shares.poll(45000);  // group.share.session.timeout.ms
  EXPECT_EQ(f.shares.list_groups()[0].second, "Empty");
  EXPECT_EQ(f.shares.delete_group("g"), error_code::none);
  EXPECT_FALSE(f.shares.start_offset("g", tp).has_value());
  EXPECT_EQ(f.shares.delete_group("g"), error_code::group_id_not_found);
}

}  // namespace
}  // namespace tarn::coordinator

namespace tarn::coordinator {
namespace {

TEST(share_coordinator, a_groups_configs_replace_the_broker_defaults) {
  fixture f;
  f.metadata.add("t", 1);
  share_topic_partition tp{f.metadata.topic("t")->id, 0};
  f.shares.set_group_configs("g", {{"share.heartbeat.interval.ms", "7000"},
                                   {"share.record.lock.duration.ms", "20000"},
                                   {"share.auto.offset.reset", "earliest"}});
  EXPECT_EQ(f.beat("a", 0, true).heartbeat_interval_ms, 7000);
  EXPECT_EQ(f.beat("a", 0, true, "other").heartbeat_interval_ms, 5000);
  EXPECT_EQ(f.shares.next_fetch_offset("g", tp, 0, 10, 0), 0);
  std::vector<fetched_batch> read = {{0, 9, false}};
  ASSERT_EQ(f.shares.acquire("g", "a", tp, read, 500, 0).size(), 1u);
  // The lock is the group's 20 s, not the broker's 30 s.
  EXPECT_EQ(f.shares.next_lock_deadline("g", {tp}), 20000);
  // A change reaches the share-partitions already made: the delivery-count limit of 2 archives a
  // record whose lock expires at its second delivery.
  f.shares.set_group_configs("g", {{"share.delivery.count.limit", "2"}});
  EXPECT_EQ(f.shares.next_fetch_offset("g", tp, 0, 10, 20000), 0);
  ASSERT_EQ(f.shares.acquire("g", "a", tp, read, 500, 20000).size(), 1u);
  EXPECT_EQ(f.shares.next_lock_deadline("g", {tp}), 50000);  // back to the broker's 30 s
  f.shares.poll(50000);
  EXPECT_EQ(f.shares.start_offset("g", tp), 10);  // all ten archived
}

// A broker's config follower applies again the configs its own IncrementalAlterConfigs applied
// (broker::apply_group_configs): the same configs change nothing, for the group or its
// share-partitions.
TEST(share_coordinator, the_same_group_configs_again_change_nothing) {
  fixture f;
  f.metadata.add("t", 1);
  share_topic_partition tp{f.metadata.topic("t")->id, 0};
  const group_config_overrides configs = {{"share.heartbeat.interval.ms", "7000"},
                                          {"share.record.lock.duration.ms", "20000"},
                                          {"share.delivery.count.limit", "3"},
                                          {"share.auto.offset.reset", "earliest"}};
  f.shares.set_group_configs("g", configs);
  EXPECT_EQ(f.beat("a", 0, true).heartbeat_interval_ms, 7000);
  EXPECT_EQ(f.shares.next_fetch_offset("g", tp, 0, 10, 0), 0);
  std::vector<fetched_batch> read = {{0, 9, false}};
  ASSERT_EQ(f.shares.acquire("g", "a", tp, read, 500, 0).size(), 1u);
  f.shares.set_group_configs("g", configs);
  const share_group_settings s = f.shares.group_settings("g");
  EXPECT_EQ(s.heartbeat_interval_ms, 7000);
  EXPECT_EQ(s.record_lock_duration_ms, 20000);
  EXPECT_EQ(s.delivery_count_limit, 3);
  EXPECT_EQ(f.shares.next_lock_deadline("g", {tp}), 20000);
  EXPECT_EQ(f.shares.start_offset("g", tp), 0);  // nothing reset: the records stay acquired
}

}  // namespace
}  // namespace tarn::coordinator
