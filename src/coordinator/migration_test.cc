// KIP-848's online migration through the facade, without sockets: a ConsumerGroupHeartbeat
// upgrading a classic group, classic members served inside a consumer group (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, their timeouts, static members), the downgrade
// when the last consumer-protocol member goes, and group.consumer.migration.policy refusing
// either way; with the records written and a reload.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "coordinator/consumer_group_internal.h"
#include "coordinator/consumer_group_records.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/test_support.h"
#include "protocol/reader.h"

namespace tarn::coordinator {
namespace {

using protocol::error_code;
using testing::memory_metadata;
using testing::memory_offsets_log;

void put_i16(std::vector<uint8_t>& out, int v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
void put_i32(std::vector<uint8_t>& out, int32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}
void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put_i16(out, static_cast<int>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

// A ConsumerProtocolSubscription v0 of topic "t", as a classic Java consumer sends it.
std::vector<uint8_t> subscription_t() {
  std::vector<uint8_t> out;
  put_i16(out, 0);
  put_i32(out, 1);
  put_string(out, "t");
  put_i32(out, -1);  // no user data
  return out;
}

// A ConsumerProtocolSubscription v1 of topic "t" owning `owned` of it (a cooperative consumer).
std::vector<uint8_t> subscription_t_owning(const std::vector<int32_t>& owned) {
  std::vector<uint8_t> out;
  put_i16(out, 1);
  put_i32(out, 1);
  put_string(out, "t");
  put_i32(out, -1);  // no user data
  put_i32(out, 1);
  put_string(out, "t");
  put_i32(out, static_cast<int32_t>(owned.size()));
  for (int32_t p : owned) put_i32(out, p);
  return out;
}

// A ConsumerProtocolAssignment v0 of partitions of "t", as a classic leader sends it.
std::vector<uint8_t> assignment_t(const std::vector<int32_t>& parts) {
  std::vector<uint8_t> out;
  put_i16(out, 0);
  put_i32(out, 1);
  put_string(out, "t");
  put_i32(out, static_cast<int32_t>(parts.size()));
  for (int32_t p : parts) put_i32(out, p);
  put_i32(out, -1);
  return out;
}

std::vector<int32_t> partitions_of(const std::vector<uint8_t>& assignment) {
  auto a = decode_consumer_assignment(assignment);
  EXPECT_TRUE(a.has_value());
  std::vector<int32_t> out;
  if (!a) return out;
  for (const auto& [topic, parts] : *a) {
    EXPECT_EQ(topic, "t");
    out.insert(out.end(), parts.begin(), parts.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

int16_t record_type(const std::vector<uint8_t>& key) {
  protocol::reader r(key);
  return r.read_int16();
}

struct migration : ::testing::Test {
  memory_offsets_log log{50};
  memory_metadata metadata;
  group_config config;
  std::unique_ptr<group_coordinator> c;
  int64_t now = 1'000'000;
  std::vector<uint8_t> sub = subscription_t();

  void SetUp() override {
    metadata.add("t", 4);
    config.group_initial_rebalance_delay_ms = 0;
    config.group_consumer_assignment_interval_ms = 0;
    start();
  }
  void start() {
    c = std::make_unique<group_coordinator>(config, log, metadata);
    c->load(now);
  }
  void advance(int64_t ms) {
    now += ms;
    c->poll(now);
  }

  struct joined {
    bool done = false;
    int16_t error = -1;
    std::string member_id;
    int32_t generation = -1;
    std::string leader;
    std::optional<std::string> protocol_name;
  };
  std::shared_ptr<joined> join(const std::string& group, const std::string& member_id,
                               std::optional<std::string> instance_id = std::nullopt) {
    protocol::join_group_request r;
    r.group_id = group;
    r.session_timeout_ms = 10000;
    r.rebalance_timeout_ms = 30000;
    r.member_id = member_id;
    if (instance_id) r.group_instance_id = *instance_id;
    r.protocol_type = "consumer";
    protocol::join_group_request::join_group_request_protocol p;
    p.name = "range";
    p.metadata = sub;
    r.protocols.push_back(p);
    auto out = std::make_shared<joined>();
    c->join_group(r, 9, {"client", "/127.0.0.1"}, now,
                  [out](owned_message<protocol::join_group_response> m) {
                    EXPECT_FALSE(out->done) << "a JoinGroup answered twice";
                    out->done = true;
                    out->error = m.message.error_code;
                    out->member_id = std::string(m.message.member_id);
                    out->generation = m.message.generation_id;
                    out->leader = std::string(m.message.leader);
                    if (m.message.protocol_name)
                      out->protocol_name = std::string(*m.message.protocol_name);
                  });
    return out;
  }
  // JoinGroup v9 without an id: MEMBER_ID_REQUIRED, then the join with that id.
  std::shared_ptr<joined> join_dynamic(const std::string& group) {
    auto first = join(group, "");
    EXPECT_TRUE(first->done);
    EXPECT_EQ(first->error, code(error_code::member_id_required));
    return join(group, first->member_id);
  }

  struct synced {
    bool done = false;
    int16_t error = -1;
    std::vector<uint8_t> assignment;
  };
  std::shared_ptr<synced> sync(const std::string& group, const std::string& member, int32_t gen,
                               std::vector<uint8_t> leader_assignment = {},
                               std::optional<std::string> instance_id = std::nullopt) {
    protocol::sync_group_request r;
    r.group_id = group;
    r.generation_id = gen;
    r.member_id = member;
    if (instance_id) r.group_instance_id = *instance_id;
    r.protocol_type = "consumer";
    r.protocol_name = "range";
    if (!leader_assignment.empty()) {
      protocol::sync_group_request::sync_group_request_assignment sa;
      sa.member_id = member;
      sa.assignment = leader_assignment;
      r.assignments.push_back(sa);
    }
    auto out = std::make_shared<synced>();
    c->sync_group(r, 5, now, [out](owned_message<protocol::sync_group_response> m) {
      out->done = true;
      out->error = m.message.error_code;
      out->assignment.assign(m.message.assignment.begin(), m.message.assignment.end());
    });
    return out;
  }
  int16_t heartbeat(const std::string& group, const std::string& member, int32_t gen,
                    std::optional<std::string> instance_id = std::nullopt) {
    protocol::heartbeat_request r;
    r.group_id = group;
    r.member_id = member;
    r.generation_id = gen;
    if (instance_id) r.group_instance_id = *instance_id;
    return c->heartbeat(r, 4, now).message.error_code;
  }
  // LeaveGroup v5 of one member; its member error.
  int16_t leave(const std::string& group, const std::string& member) {
    protocol::leave_group_request r;
    r.group_id = group;
    protocol::leave_group_request::member_identity m;
    m.member_id = member;
    r.members.push_back(m);
    auto out = c->leave_group(r, 5, now);
    EXPECT_EQ(out.message.error_code, 0);
    EXPECT_EQ(out.message.members.size(), 1u);
    return out.message.members.empty() ? -1 : out.message.members[0].error_code;
  }
  int16_t commit(const std::string& group, const std::string& member, int32_t gen) {
    protocol::offset_commit_request r;
    r.group_id = group;
    r.generation_id_or_member_epoch = gen;
    r.member_id = member;
    protocol::offset_commit_request::offset_commit_request_topic t;
    t.name = "t";
    protocol::offset_commit_request::offset_commit_request_partition p;
    p.partition_index = 0;
    p.committed_offset = 5;
    t.partitions.push_back(p);
    r.topics.push_back(t);
    return c->offset_commit(r, 9, now).message.topics[0].partitions[0].error_code;
  }

  struct beat {
    int16_t error = -1;
    std::string message;
    int32_t epoch = -1;
    size_t partitions = 0;
  };
  // A ConsumerGroupHeartbeat v1 (group.protocol=consumer) subscribing to "t", owning nothing.
  beat heartbeat848(const std::string& group, const std::string& member, int32_t epoch) {
    protocol::consumer_group_heartbeat_request r;
    r.group_id = group;
    r.member_id = member;
    r.member_epoch = epoch;
    r.rebalance_timeout_ms = 30000;
    std::vector<std::string_view> topics{"t"};
    std::vector<protocol::consumer_group_heartbeat_request::topic_partitions_data> owned;
    if (epoch >= 0) {
      r.subscribed_topic_names = topics;
      r.topic_partitions = owned;
    }
    auto resp = c->consumer_group_heartbeat(r, 1, {"client", "/127.0.0.1"}, now);
    beat b;
    b.error = resp.message.error_code;
    b.message = std::string(resp.message.error_message.value_or(""));
    b.epoch = resp.message.member_epoch;
    if (resp.message.assignment) {
      for (const auto& tp : resp.message.assignment->topic_partitions)
        b.partitions += tp.partitions.size();
    }
    return b;
  }

  std::string group_type(const std::string& group) {
    protocol::list_groups_request l;
    auto listed = c->list_groups(l, 5);
    for (const auto& g : listed.message.groups) {
      if (g.group_id == group) return std::string(g.group_type);
    }
    return "";
  }
  // The record types written since `from` (an index into log.records()).
  std::vector<int16_t> types_since(size_t from) {
    auto all = log.records();
    std::vector<int16_t> out;
    for (size_t i = from; i < all.size(); ++i) {
      out.push_back(static_cast<int16_t>(record_type(all[i].first) * (all[i].second ? 1 : -1)));
    }
    return out;
  }

  // A Stable classic group "g" of one member owning t-0..3 at generation 1.
  std::string stable_classic_group() {
    auto j = join_dynamic("g");
    EXPECT_TRUE(j->done);
    EXPECT_EQ(j->generation, 1);
    auto s = sync("g", j->member_id, 1, assignment_t({0, 1, 2, 3}));
    EXPECT_TRUE(s->done);
    EXPECT_EQ(s->error, 0);
    return j->member_id;
  }
};

TEST_F(migration, a_consumer_heartbeat_upgrades_a_busy_classic_group_and_its_member_rejoins) {
  const std::string a = stable_classic_group();
  const size_t before = log.records().size();
  const int appends = log.appends;
  auto b = heartbeat848("g", "c1", 0);
  ASSERT_EQ(b.error, 0) << b.message;
  EXPECT_EQ(b.epoch, 2) << "the group epoch is the classic generation, bumped by the join";
  EXPECT_EQ(b.partitions, 0u) << "its partitions are still the classic member's";
  EXPECT_EQ(group_type("g"), "consumer");
  // One batch: the classic group's tombstone, Kafka's createConsumerGroupRecords (member,
  // epoch, target member, target epoch, current assignment), then the heartbeat's records.
  const std::vector<int16_t> expected{-2, 5, 3, 7, 6, 8, 5, 3, 7, 7, 6, 8};
  EXPECT_EQ(types_since(before), expected);
  EXPECT_EQ(log.appends, appends + 1) << "the upgrade and the join in one append";

  // The classic member is told to rejoin, then reconciles: it revoked everything before
  // rejoining (the eager protocol), so it gets its half at once.
  EXPECT_EQ(heartbeat("g", a, 1), code(error_code::rebalance_in_progress));
  auto j = join("g", a);
  ASSERT_TRUE(j->done);
  EXPECT_EQ(j->error, 0);
  EXPECT_EQ(j->member_id, a);
  EXPECT_EQ(j->generation, 2);
  EXPECT_EQ(j->protocol_name, "range");
  EXPECT_EQ(sync("g", a, 1)->error, code(error_code::illegal_generation));
  auto s = sync("g", a, 2);
  ASSERT_TRUE(s->done);
  EXPECT_EQ(s->error, 0);
  const auto mine = partitions_of(s->assignment);
  EXPECT_EQ(mine.size(), 2u);
  EXPECT_EQ(heartbeat("g", a, 2), 0);
  auto c1 = heartbeat848("g", "c1", 2);
  EXPECT_EQ(c1.error, 0);
  EXPECT_EQ(c1.partitions, 2u) << "the partitions the classic member released";
  EXPECT_EQ(commit("g", a, 2), 0) << "a classic member commits with its generation";
  EXPECT_EQ(commit("g", a, 1), code(error_code::illegal_generation));

  // Everything comes back from the records, ClassicMemberMetadata included.
  start();
  EXPECT_EQ(group_type("g"), "consumer");
  EXPECT_EQ(heartbeat("g", a, 2), 0);
  EXPECT_EQ(partitions_of(sync("g", a, 2)->assignment), mine);
}

// A cooperative classic member keeps its partitions when it rejoins: it must first revoke what
// it gives up (UNREVOKED_PARTITIONS: SyncGroup gives it what it keeps, Heartbeat asks it to
// rejoin), then rejoin at the new epoch.
TEST_F(migration, a_classic_member_owning_partitions_revokes_before_it_reaches_the_new_epoch) {
  sub = subscription_t_owning({});
  const std::string a = stable_classic_group();
  ASSERT_EQ(heartbeat848("g", "c1", 0).error, 0);
  sub = subscription_t_owning({0, 1, 2, 3});
  auto j = join("g", a);
  ASSERT_EQ(j->error, 0);
  EXPECT_EQ(j->generation, 1) << "still revoking: its epoch stays";
  auto s = sync("g", a, 1);
  ASSERT_EQ(s->error, 0) << "no REBALANCE_IN_PROGRESS while it revokes";
  const auto kept = partitions_of(s->assignment);
  EXPECT_EQ(kept.size(), 2u);
  EXPECT_EQ(heartbeat("g", a, 1), code(error_code::rebalance_in_progress));
  EXPECT_EQ(heartbeat848("g", "c1", 2).partitions, 0u) << "nothing released yet";
  sub = subscription_t_owning(kept);
  j = join("g", a);
  ASSERT_EQ(j->error, 0);
  EXPECT_EQ(j->generation, 2);
  EXPECT_EQ(partitions_of(sync("g", a, 2)->assignment), kept);
  EXPECT_EQ(heartbeat("g", a, 2), 0);
  EXPECT_EQ(heartbeat848("g", "c1", 2).partitions, 2u);
}

TEST_F(migration, classic_members_join_sync_heartbeat_and_leave_a_consumer_group) {
  ASSERT_EQ(heartbeat848("cg", "c1", 0).partitions, 4u);
  auto j = join_dynamic("cg");
  ASSERT_TRUE(j->done);
  ASSERT_EQ(j->error, 0);
  EXPECT_EQ(j->generation, 3);
  EXPECT_EQ(j->leader, "") << "the coordinator assigns: no leader";
  const std::string a = j->member_id;
  // Its partitions are still c1's: nothing yet, and nothing to rejoin for while c1 holds them.
  auto s = sync("cg", a, 3);
  ASSERT_EQ(s->error, 0);
  EXPECT_TRUE(partitions_of(s->assignment).empty());
  EXPECT_EQ(heartbeat("cg", a, 3), 0);
  EXPECT_EQ(heartbeat("cg", a, 2), code(error_code::illegal_generation));
  EXPECT_EQ(heartbeat("cg", "nobody", 3), code(error_code::unknown_member_id));
  EXPECT_EQ(heartbeat("cg", "c1", 2), code(error_code::unknown_member_id))
      << "a consumer-protocol member does not use the classic APIs";
  // c1 gives up two partitions; the classic member is told to rejoin and gets them.
  EXPECT_EQ(heartbeat848("cg", "c1", 2).partitions, 2u);
  EXPECT_EQ(heartbeat("cg", a, 3), code(error_code::rebalance_in_progress));
  auto again = join("cg", a);
  ASSERT_EQ(again->error, 0);
  EXPECT_EQ(again->generation, 3);
  EXPECT_EQ(partitions_of(sync("cg", a, 3)->assignment).size(), 2u);
  EXPECT_EQ(heartbeat("cg", a, 3), 0);

  protocol::consumer_group_describe_request d;
  d.group_ids = {"cg"};
  auto described = c->consumer_group_describe(d, 1);
  ASSERT_EQ(described.message.groups[0].members.size(), 2u);
  for (const auto& m : described.message.groups[0].members) {
    EXPECT_EQ(m.member_type, m.member_id == a ? 0 : 1);
  }

  // It leaves: the group is c1's again (epoch bumped), and c1 gets everything.
  EXPECT_EQ(leave("cg", "c1"), code(error_code::unknown_member_id))
      << "LeaveGroup is for classic members";
  EXPECT_EQ(leave("cg", a), 0);
  EXPECT_EQ(heartbeat("cg", a, 3), code(error_code::unknown_member_id));
  auto c1 = heartbeat848("cg", "c1", 3);
  EXPECT_EQ(c1.epoch, 4);
  EXPECT_EQ(c1.partitions, 4u);
  EXPECT_EQ(group_type("cg"), "consumer");
}

TEST_F(migration, a_classic_member_is_fenced_when_its_session_or_sync_or_rejoin_times_out) {
  ASSERT_EQ(heartbeat848("cg", "c1", 0).error, 0);
  // Session: 10 s without a heartbeat.
  auto j = join_dynamic("cg");
  ASSERT_EQ(sync("cg", j->member_id, j->generation)->error, 0);
  advance(10001);
  EXPECT_EQ(heartbeat("cg", j->member_id, j->generation), code(error_code::unknown_member_id));
  // Sync: it heartbeats but never syncs within its rebalance timeout (30 s).
  auto k = join_dynamic("cg");
  ASSERT_EQ(k->error, 0);
  for (int i = 0; i < 5; ++i) {
    advance(5000);
    EXPECT_EQ(heartbeat("cg", k->member_id, k->generation), 0) << i;
  }
  advance(5000);
  EXPECT_EQ(heartbeat("cg", k->member_id, k->generation), code(error_code::unknown_member_id));
  // Rejoin: told REBALANCE_IN_PROGRESS, it does not rejoin within its rebalance timeout.
  auto r = join_dynamic("cg");
  ASSERT_EQ(sync("cg", r->member_id, r->generation)->error, 0);
  ASSERT_EQ(heartbeat848("cg", "c2", 0).error, 0);  // the group epoch moves on
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(heartbeat("cg", r->member_id, r->generation), code(error_code::rebalance_in_progress))
        << i;  // each renews its session
    advance(5000);
  }
  EXPECT_EQ(heartbeat("cg", r->member_id, r->generation), code(error_code::unknown_member_id));
}

TEST_F(migration, a_static_classic_member_replaces_itself_and_fences_its_old_id) {
  ASSERT_EQ(heartbeat848("cg", "c1", 0).error, 0);
  auto first = join("cg", "", "instance-1");
  ASSERT_TRUE(first->done);
  ASSERT_EQ(first->error, 0) << "a static member needs no MEMBER_ID_REQUIRED";
  ASSERT_EQ(sync("cg", first->member_id, first->generation, {}, "instance-1")->error, 0);
  auto second = join("cg", "", "instance-1");
  ASSERT_EQ(second->error, 0);
  EXPECT_NE(second->member_id, first->member_id);
  EXPECT_EQ(heartbeat("cg", first->member_id, first->generation, "instance-1"),
            code(error_code::fenced_instance_id));
  EXPECT_EQ(heartbeat("cg", second->member_id, second->generation, "instance-1"), 0);
}

TEST_F(migration, the_last_consumer_member_leaving_downgrades_the_group_to_classic) {
  const std::string a = stable_classic_group();
  ASSERT_EQ(heartbeat848("g", "c1", 0).error, 0);
  ASSERT_EQ(join("g", a)->error, 0);
  ASSERT_EQ(sync("g", a, 2)->error, 0);
  const size_t before = log.records().size();
  auto left = heartbeat848("g", "c1", -1);
  ASSERT_EQ(left.error, 0) << left.message;
  EXPECT_EQ(left.epoch, -1);
  EXPECT_EQ(group_type("g"), "classic");
  // The consumer group's tombstones (createGroupTombstoneRecords: current assignments, target
  // members, target epoch, members, partition metadata, group epoch), then the classic
  // group's GroupMetadata.
  const std::vector<int16_t> expected{-8, -8, -7, -7, -6, -5, -5, -4, -3, 2};
  EXPECT_EQ(types_since(before), expected);
  // The classic group rebalances: its member rejoins and leads generation 3.
  EXPECT_EQ(heartbeat("g", a, 2), code(error_code::rebalance_in_progress));
  auto j = join("g", a);
  ASSERT_TRUE(j->done);
  EXPECT_EQ(j->error, 0);
  EXPECT_EQ(j->generation, 3);
  EXPECT_EQ(j->leader, a);
  start();
  EXPECT_EQ(group_type("g"), "classic");
}

// Kafka's validateOnlineDowngradeWithReplacedMemberId: a classic static member taking the place of
// the last consumer-protocol member (away with epoch -2) makes the group a Stable classic group at
// once, the newcomer holding the replaced member's assignment; no rebalance.
TEST_F(migration, a_classic_static_member_replacing_the_last_consumer_member_downgrades) {
  const std::string a = stable_classic_group();
  auto static_beat = [&](int32_t epoch, const std::string& member) {
    protocol::consumer_group_heartbeat_request r;
    r.group_id = "g";
    r.member_id = member;
    r.member_epoch = epoch;
    r.instance_id = "i1";
    r.rebalance_timeout_ms = 30000;
    std::vector<std::string_view> topics{"t"};
    std::vector<protocol::consumer_group_heartbeat_request::topic_partitions_data> owned;
    if (epoch == 0) {
      r.subscribed_topic_names = topics;
      r.topic_partitions = owned;
    }
    return c->consumer_group_heartbeat(r, 1, {"client", "/127.0.0.1"}, now).message.error_code;
  };
  ASSERT_EQ(static_beat(0, "c1"), 0);
  ASSERT_EQ(join("g", a)->error, 0);
  const auto a_parts = partitions_of(sync("g", a, 2)->assignment);
  ASSERT_EQ(a_parts.size(), 2u);
  ASSERT_EQ(static_beat(-2, "c1"), 0) << "away, still a member";
  EXPECT_EQ(group_type("g"), "consumer");

  const size_t before = log.records().size();
  auto j = join("g", "", "i1");
  ASSERT_TRUE(j->done);
  ASSERT_EQ(j->error, 0);
  EXPECT_NE(j->member_id, "c1");
  EXPECT_EQ(group_type("g"), "classic");
  // The join's records (c1 replaced by the newcomer), then the tombstones of the group with the
  // newcomer for c1, then GroupMetadata.
  const auto types = types_since(before);
  ASSERT_FALSE(types.empty());
  EXPECT_EQ(types.back(), 2);
  EXPECT_EQ(std::count(types.begin(), types.end(), -3), 1);
  auto s = sync("g", j->member_id, j->generation, {}, "i1");
  ASSERT_TRUE(s->done);
  EXPECT_EQ(s->error, 0);
  auto mine = partitions_of(s->assignment);
  EXPECT_EQ(mine.size(), 2u) << "c1's target assignment";
  for (int32_t p : mine) EXPECT_FALSE(std::count(a_parts.begin(), a_parts.end(), p));
  EXPECT_EQ(heartbeat("g", j->member_id, j->generation, "i1"), 0) << "Stable: no rebalance";
  EXPECT_EQ(heartbeat("g", a, 2), 0);
  start();
  EXPECT_EQ(group_type("g"), "classic");
  EXPECT_EQ(heartbeat("g", a, 2), 0);
}

TEST_F(migration, a_consumer_member_timing_out_downgrades_the_group_too) {
  const std::string a = stable_classic_group();
  ASSERT_EQ(heartbeat848("g", "c1", 0).error, 0);
  ASSERT_EQ(join("g", a)->error, 0);
  ASSERT_EQ(sync("g", a, 2)->error, 0);
  for (int i = 0; i < 8; ++i) {
    advance(5000);
    EXPECT_EQ(heartbeat("g", a, 2), 0) << i;  // c1 stays silent
  }
  EXPECT_EQ(group_type("g"), "consumer");
  advance(5000);  // c1's 45 s session is over
  EXPECT_EQ(group_type("g"), "classic");
  EXPECT_EQ(heartbeat("g", a, 2), code(error_code::rebalance_in_progress));
}

TEST_F(migration, migration_policy_disabled_refuses_both_ways) {
  config.group_consumer_migration_policy = "disabled";
  start();
  stable_classic_group();
  auto b = heartbeat848("g", "c1", 0);
  EXPECT_EQ(b.error, code(error_code::group_id_not_found));
  EXPECT_EQ(b.message,
            "Cannot upgrade classic group g to consumer group because the online upgrade is "
            "disabled.");
  EXPECT_EQ(group_type("g"), "classic");

  // A mixed group stays a consumer group when its last consumer member leaves.
  ASSERT_EQ(heartbeat848("cg", "c1", 0).error, 0);
  ASSERT_EQ(join_dynamic("cg")->error, 0);
  ASSERT_EQ(heartbeat848("cg", "c1", -1).error, 0);
  EXPECT_EQ(group_type("cg"), "consumer");
}

TEST_F(migration, migration_policy_upgrade_refuses_downgrades_and_downgrade_refuses_upgrades) {
  config.group_consumer_migration_policy = "UPGRADE";  // read case-insensitively, as Kafka
  start();
  ASSERT_EQ(heartbeat848("cg", "c1", 0).error, 0);
  ASSERT_EQ(join_dynamic("cg")->error, 0);
  ASSERT_EQ(heartbeat848("cg", "c1", -1).error, 0);
  EXPECT_EQ(group_type("cg"), "consumer");

  config.group_consumer_migration_policy = "downgrade";
  start();
  stable_classic_group();
  EXPECT_EQ(heartbeat848("g", "c1", 0).error, code(error_code::group_id_not_found));
  EXPECT_EQ(group_type("g"), "classic");
}

TEST_F(migration, an_upgrade_whose_heartbeat_fails_leaves_the_classic_group_as_it_was) {
  const std::string a = stable_classic_group();
  log.fail_with = error_code::kafka_storage_error;
  EXPECT_EQ(heartbeat848("g", "c1", 0).error, code(error_code::not_coordinator));
  log.fail_with = error_code::none;
  EXPECT_EQ(group_type("g"), "classic");
  EXPECT_EQ(heartbeat("g", a, 1), 0);
  start();
  EXPECT_EQ(group_type("g"), "classic");
}

std::vector<uint8_t> golden(const std::string& name) {
  std::ifstream in(std::string(TARN_SOURCE_DIR) + "/tests/fixtures/offsets-records/" + name,
                   std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The member records tarn writes are Kafka's bytes (goldens written by Kafka 4.4's own classes,
// tests/java/OffsetsRecordsGolden.java): ClassicMemberMetadata present for a classic member,
// and written as a null tagged field (01 00 01 00) for a member of the consumer protocol.
TEST(migration_records, member_metadata_records_are_kafkas_bytes) {
  consumer_group_member classic;
  classic.member_id = "m-2";
  classic.instance_id = "instance-2";
  classic.rack_id = "rack-a";
  classic.client_id = "client-2";
  classic.client_host = "/10.0.0.2";
  classic.subscribed_topic_regex = "orders-.*";
  classic.rebalance_timeout_ms = 30000;
  const std::string md = "range-metadata";
  classic.classic_member = classic_member_metadata{
      45000, {{"range", std::vector<uint8_t>(md.begin(), md.end())}, {"cooperative-sticky", {}}}};
  coordinator_record r = member_metadata_record("cg", classic);
  EXPECT_EQ(r.key, golden("consumer_group_member_metadata_classic.key.bin"));
  ASSERT_TRUE(r.value);
  EXPECT_EQ(*r.value, golden("consumer_group_member_metadata_classic.value.bin"));

  consumer_group_member consumer;
  consumer.member_id = "m-1";
  consumer.client_id = "client-1";
  consumer.client_host = "/10.0.0.1";
  consumer.subscribed_topic_names = {"orders", "payments"};
  consumer.rebalance_timeout_ms = 60000;
  consumer.server_assignor = "uniform";
  r = member_metadata_record("cg", consumer);
  ASSERT_TRUE(r.value);
  // The golden has SubscribedTopicRegex null where Kafka's ConsumerGroupMember (and tarn) has
  // "" for no regex: one byte each (compact length 0 or 1), at the same place.
  std::vector<uint8_t> expected = golden("consumer_group_member_metadata.value.bin");
  // version 2, instance and rack ids 1 each, client id 9, host 10, names 1 + 7 + 9.
  const size_t regex_at = 2 + 1 + 1 + 9 + 10 + 1 + 7 + 9;
  ASSERT_GT(expected.size(), regex_at);
  ASSERT_EQ(expected[regex_at], 0) << "null";
  expected[regex_at] = 1;  // ""
  EXPECT_EQ(*r.value, expected);
  EXPECT_EQ(std::vector<uint8_t>(r.value->end() - 4, r.value->end()),
            (std::vector<uint8_t>{1, 0, 1, 0}))
      << "ClassicMemberMetadata null: tag 0, size 1, marker 0";
}

}  // namespace
}  // namespace tarn::coordinator
