// The group coordinator without sockets: classic rebalances, static membership, session expiry,
// offset commits and fetches, persistence and reload, deletion, listing and offset expiry, on an
// in-memory __consumer_offsets (test_support.h).
#include "coordinator/group_coordinator.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <utility>

#include "coordinator/group_records.h"
#include "coordinator/test_support.h"

namespace tarn::coordinator {
namespace {

using protocol::error_code;
using testing::memory_metadata;
using testing::memory_offsets_log;

constexpr int16_t join_v = 9;
constexpr int16_t sync_v = 5;
constexpr int16_t commit_v = 9;
constexpr int16_t fetch_v = 9;

// A ConsumerProtocolSubscription v0: the topics, no user data.
std::vector<uint8_t> subscription(const std::vector<std::string>& topics) {
  std::vector<uint8_t> out{0, 0};
  auto i32 = [&](int32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  };
  i32(static_cast<int32_t>(topics.size()));
  for (const auto& t : topics) {
    out.push_back(static_cast<uint8_t>(t.size() >> 8));
    out.push_back(static_cast<uint8_t>(t.size()));
    out.insert(out.end(), t.begin(), t.end());
  }
  i32(-1);  // user data: null
  return out;
}

struct fixture : ::testing::Test {
  memory_offsets_log log{50};
  memory_metadata metadata;
  group_config config;
  std::unique_ptr<group_coordinator> c;
  int64_t now = 1'000'000;
  std::vector<uint8_t> sub = subscription({"t"});

  void SetUp() override {
    metadata.add("t", 4);
    // 1 ms: the members a test joins before its first tick() form the first generation together
    // (with 0 the first join completes at once, as in Kafka).
    config.group_initial_rebalance_delay_ms = 1;
    start();
  }
  // Time passes and the timers fire: twice the delay, since a member that joined during the
  // initial delay extends it once.
  void tick() {
    for (int i = 0; i < 2; ++i) {
      now += 1;
      c->poll(now);
    }
  }
  void start() {
    c = std::make_unique<group_coordinator>(config, log, metadata);
    c->load(now);
  }

  struct joined {
    bool done = false;
    int16_t error = -1;
    std::string member_id;
    int32_t generation = -1;
    std::string leader;
    size_t members = 0;
    std::optional<std::string> protocol_name;
    bool skip_assignment = false;
  };

  std::shared_ptr<joined> join(std::string group, std::string member_id,
                               std::optional<std::string> instance_id = std::nullopt,
                               int32_t session_timeout_ms = 10000) {
    protocol::join_group_request r;
    r.group_id = group;
    r.session_timeout_ms = session_timeout_ms;
    r.rebalance_timeout_ms = 30000;
    r.member_id = member_id;
    if (instance_id) r.group_instance_id = *instance_id;
    r.protocol_type = "consumer";
    protocol::join_group_request::join_group_request_protocol p;
    p.name = "range";
    p.metadata = sub;
    r.protocols.push_back(p);
    auto out = std::make_shared<joined>();
    c->join_group(r, join_v, {"client", "/127.0.0.1"}, now,
                  [out](owned_message<protocol::join_group_response> m) {
                    EXPECT_FALSE(out->done) << "a JoinGroup answered twice";
                    out->done = true;
                    out->error = m.message.error_code;
                    out->member_id = std::string(m.message.member_id);
                    out->generation = m.message.generation_id;
                    out->leader = std::string(m.message.leader);
                    out->members = m.message.members.size();
                    if (m.message.protocol_name)
                      out->protocol_name = std::string(*m.message.protocol_name);
                    out->skip_assignment = m.message.skip_assignment;
                  });
    return out;
  }

  // The KIP-394 dance: MEMBER_ID_REQUIRED, then join with the id handed out.
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
                               std::map<std::string, std::vector<uint8_t>> assignments = {},
                               std::optional<std::string> instance_id = std::nullopt) {
    protocol::sync_group_request r;
    r.group_id = group;
    r.generation_id = gen;
    r.member_id = member;
    if (instance_id) r.group_instance_id = *instance_id;
    r.protocol_type = "consumer";
    r.protocol_name = "range";
    for (auto& [m, a] : assignments) {
      protocol::sync_group_request::sync_group_request_assignment sa;
      sa.member_id = m;
      sa.assignment = a;
      r.assignments.push_back(sa);
    }
    auto out = std::make_shared<synced>();
    c->sync_group(r, sync_v, now, [out](owned_message<protocol::sync_group_response> m) {
      EXPECT_FALSE(out->done) << "a SyncGroup answered twice";
      out->done = true;
      out->error = m.message.error_code;
      out->assignment.assign(m.message.assignment.begin(), m.message.assignment.end());
    });
    return out;
  }

  int16_t heartbeat(const std::string& group, const std::string& member, int32_t gen) {
    protocol::heartbeat_request r;
    r.group_id = group;
    r.member_id = member;
    r.generation_id = gen;
    return c->heartbeat(r, 4, now).message.error_code;
  }

  // Commits `offset` for t-<partition>; returns the partition's error.
  int16_t commit(const std::string& group, int32_t partition, int64_t offset, int32_t gen = -1,
                 const std::string& member = "", std::string metadata = "m",
                 std::string topic = "t", int16_t version = commit_v) {
    protocol::offset_commit_request r;
    r.group_id = group;
    r.generation_id_or_member_epoch = gen;
    r.member_id = member;
    protocol::offset_commit_request::offset_commit_request_topic t;
    t.name = topic;
    protocol::offset_commit_request::offset_commit_request_partition p;
    p.partition_index = partition;
    p.committed_offset = offset;
    p.committed_leader_epoch = 0;
    p.committed_metadata = metadata;
    t.partitions.push_back(p);
    r.topics.push_back(t);
    auto resp = c->offset_commit(r, version, now);
    EXPECT_EQ(resp.message.topics.size(), 1u);
    EXPECT_EQ(resp.message.topics[0].partitions.size(), 1u);
    return resp.message.topics[0].partitions[0].error_code;
  }

  // The committed offset of t-<partition> (-1 if none), through OffsetFetch v9.
  int64_t fetch(const std::string& group, int32_t partition, int16_t* group_error = nullptr) {
    protocol::offset_fetch_request r;
    protocol::offset_fetch_request::offset_fetch_request_group g;
    g.group_id = group;
    protocol::offset_fetch_request::offset_fetch_request_topics t;
    t.name = "t";
    t.partition_indexes = {partition};
    g.topics.emplace();
    g.topics->push_back(t);
    r.groups.push_back(g);
    auto resp = c->offset_fetch(r, fetch_v, now);
    EXPECT_EQ(resp.message.groups.size(), 1u);
    if (group_error) *group_error = resp.message.groups[0].error_code;
    if (resp.message.groups[0].topics.empty()) return -2;
    return resp.message.groups[0].topics[0].partitions[0].committed_offset;
  }
};

TEST(partition_for, matches_java_string_hash_code) {
  // Values from Java's Math.abs("...".hashCode()) % 50 (computed over UTF-16 code units).
  EXPECT_EQ(partition_for("my-group", 50), 12);
  EXPECT_EQ(partition_for("console-consumer-12345", 50), 6);
  EXPECT_EQ(partition_for("groupé", 50), 6);
  EXPECT_EQ(partition_for("g\xF0\x9F\x98\x80", 50), 32);  // a surrogate pair
  EXPECT_EQ(partition_for("test-group-with-a-long-name-abcdefghijklmnop", 50), 27);
  EXPECT_EQ(partition_for("a", 50), 47);
}

TEST_F(fixture, a_dynamic_member_joins_syncs_and_heartbeats) {
  auto j = join_dynamic("g");
  EXPECT_FALSE(j->done) << "the join waits for the initial delay to pass";
  tick();
  ASSERT_TRUE(j->done);
  EXPECT_EQ(j->error, 0);
  EXPECT_EQ(j->generation, 1);
  EXPECT_EQ(j->leader, j->member_id);
  EXPECT_EQ(j->members, 1u);
  EXPECT_EQ(j->protocol_name, "range");

  auto s = sync("g", j->member_id, 1, {{j->member_id, {1, 2, 3}}});
  ASSERT_TRUE(s->done);
  EXPECT_EQ(s->error, 0);
  EXPECT_EQ(s->assignment, (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_EQ(heartbeat("g", j->member_id, 1), 0);
  EXPECT_EQ(heartbeat("g", j->member_id, 2), code(error_code::illegal_generation));
  EXPECT_EQ(heartbeat("g", "nobody", 1), code(error_code::unknown_member_id));
  EXPECT_EQ(heartbeat("nogroup", "nobody", 1), code(error_code::unknown_member_id));
}

TEST_F(fixture, with_no_initial_delay_a_first_join_completes_at_once) {
  config.group_initial_rebalance_delay_ms = 0;
  start();
  auto j = join_dynamic("g");
  ASSERT_TRUE(j->done) << "no poll needed";
  EXPECT_EQ(j->error, 0);
  EXPECT_EQ(j->generation, 1);
}

TEST_F(fixture, a_second_member_triggers_a_rebalance_the_first_learns_of_by_heartbeat) {
  auto a = join_dynamic("g");
  tick();
  ASSERT_TRUE(a->done);
  ASSERT_EQ(sync("g", a->member_id, 1, {{a->member_id, {1}}})->error, 0);

  auto b = join_dynamic("g");
  EXPECT_FALSE(b->done);
  EXPECT_EQ(heartbeat("g", a->member_id, 1), code(error_code::rebalance_in_progress));
  auto a2 = join("g", a->member_id);
  ASSERT_TRUE(a2->done) << "every member rejoined: the join phase completes at once";
  ASSERT_TRUE(b->done);
  EXPECT_EQ(a2->generation, 2);
  EXPECT_EQ(b->generation, 2);
  EXPECT_EQ(a2->leader, a->member_id) << "the leader stays";
  EXPECT_EQ(a2->members, 2u);
  EXPECT_EQ(b->members, 0u) << "only the leader gets the members";

  auto sb = sync("g", b->member_id, 2);
  EXPECT_FALSE(sb->done) << "a follower waits for the leader's assignment";
  EXPECT_EQ(commit("g", 0, 5, 2, a->member_id), code(error_code::rebalance_in_progress));
  auto sa = sync("g", a->member_id, 2, {{a->member_id, {1}}, {b->member_id, {2}}});
  ASSERT_TRUE(sa->done);
  ASSERT_TRUE(sb->done);
  EXPECT_EQ(sa->assignment, std::vector<uint8_t>{1});
  EXPECT_EQ(sb->assignment, std::vector<uint8_t>{2});
}

TEST_F(fixture, a_member_that_stops_heartbeating_is_removed_after_its_session_timeout) {
  auto a = join_dynamic("g");
  tick();
  ASSERT_EQ(sync("g", a->member_id, 1, {{a->member_id, {1}}})->error, 0);
  auto b = join_dynamic("g");
  auto a2 = join("g", a->member_id);
  ASSERT_TRUE(b->done && a2->done);
  ASSERT_EQ(sync("g", b->member_id, 2)->done, false);
  auto sa = sync("g", a->member_id, 2, {{a->member_id, {1}}, {b->member_id, {2}}});
  ASSERT_EQ(sa->error, 0);

  // a keeps heartbeating, b goes silent.
  for (int i = 0; i < 12; ++i) {
    now += 1000;
    ASSERT_EQ(heartbeat("g", a->member_id, 2), i < 10 ? 0 : code(error_code::rebalance_in_progress))
        << "after " << i + 1 << " s";
    tick();
  }
  // b was removed at 10 s: the group rebalances; a rejoins alone.
  auto a3 = join("g", a->member_id);
  ASSERT_TRUE(a3->done);
  EXPECT_EQ(a3->generation, 3);
  EXPECT_EQ(a3->members, 1u);
  EXPECT_EQ(heartbeat("g", b->member_id, 2), code(error_code::unknown_member_id));
}

TEST_F(fixture, a_static_member_restarting_keeps_its_assignment_without_a_rebalance) {
  auto first = join("g", "", std::string("instance-1"));
  auto other = join_dynamic("g");
  tick();
  ASSERT_TRUE(first->done && other->done);
  const std::string leader = first->leader;
  auto s1 = sync("g", first->member_id, 1, {{first->member_id, {7}}, {other->member_id, {8}}},
                 std::string("instance-1"));
  auto s2 = sync("g", other->member_id, 1);
  ASSERT_EQ(s1->error, 0);
  ASSERT_EQ(s2->error, 0);

  // The static member restarts: it joins with no member id and its instance id.
  auto again = join("g", "", std::string("instance-1"));
  ASSERT_TRUE(again->done);
  EXPECT_EQ(again->error, 0);
  EXPECT_NE(again->member_id, first->member_id);
  EXPECT_EQ(again->generation, 1) << "same generation: no rebalance";
  EXPECT_EQ(heartbeat("g", other->member_id, 1), 0) << "the other member sees no rebalance";
  auto s3 = sync("g", again->member_id, 1, {}, std::string("instance-1"));
  ASSERT_TRUE(s3->done);
  EXPECT_EQ(s3->assignment, std::vector<uint8_t>{7});
  // The old incarnation is fenced.
  protocol::heartbeat_request hb;
  hb.group_id = "g";
  hb.member_id = first->member_id;
  hb.generation_id = 1;
  hb.group_instance_id = "instance-1";
  EXPECT_EQ(c->heartbeat(hb, 4, now).message.error_code, code(error_code::fenced_instance_id));
}

// A static member's replacement whose GroupMetadata cannot be written is put back (Kafka's
// replaceStaticMember to the old id): the old incarnation goes on, the new one gets the mapped
// error.
TEST_F(fixture, a_static_replacement_that_cannot_be_written_is_reverted) {
  auto first = join("g", "", std::string("instance-1"));
  tick();
  ASSERT_TRUE(first->done);
  ASSERT_EQ(
      sync("g", first->member_id, 1, {{first->member_id, {7}}}, std::string("instance-1"))->error,
      0);
  log.fail_with = error_code::not_enough_replicas;
  auto again = join("g", "", std::string("instance-1"));
  ASSERT_TRUE(again->done);
  EXPECT_EQ(again->error, code(error_code::coordinator_not_available));
  log.fail_with = error_code::none;
  protocol::heartbeat_request hb;
  hb.group_id = "g";
  hb.member_id = first->member_id;
  hb.generation_id = 1;
  hb.group_instance_id = "instance-1";
  EXPECT_EQ(c->heartbeat(hb, 4, now).message.error_code, 0) << "still the member";
  auto s = sync("g", first->member_id, 1, {}, std::string("instance-1"));
  ASSERT_TRUE(s->done);
  EXPECT_EQ(s->assignment, std::vector<uint8_t>{7});
}

TEST_F(fixture, a_member_leaving_rebalances_the_rest) {
  auto a = join_dynamic("g");
  auto b = join_dynamic("g");
  tick();
  ASSERT_TRUE(a->done && b->done);
  auto sb = sync("g", b->member_id, 1);
  auto sa = sync("g", a->member_id, 1, {{a->member_id, {1}}, {b->member_id, {2}}});
  ASSERT_TRUE(sb->done && sa->done);

  protocol::leave_group_request l;
  l.group_id = "g";
  protocol::leave_group_request::member_identity mi;
  mi.member_id = b->member_id;
  l.members.push_back(mi);
  protocol::leave_group_request::member_identity unknown;
  unknown.member_id = "who";
  l.members.push_back(unknown);
  auto resp = c->leave_group(l, 5, now);
  EXPECT_EQ(resp.message.error_code, 0);
  ASSERT_EQ(resp.message.members.size(), 2u);
  EXPECT_EQ(resp.message.members[0].error_code, 0);
  EXPECT_EQ(resp.message.members[1].error_code, code(error_code::unknown_member_id));
  EXPECT_EQ(heartbeat("g", a->member_id, 1), code(error_code::rebalance_in_progress));
  auto a2 = join("g", a->member_id);
  ASSERT_TRUE(a2->done);
  EXPECT_EQ(a2->generation, 2);
}

TEST_F(fixture, shutdown_answers_waiting_joins_not_coordinator) {
  auto a = join_dynamic("g");
  tick();
  ASSERT_EQ(sync("g", a->member_id, 1, {{a->member_id, {1}}})->error, 0);
  auto b = join_dynamic("g");
  ASSERT_FALSE(b->done) << "waits for a to rejoin";
  c->shutdown(now);
  ASSERT_TRUE(b->done);
  EXPECT_EQ(b->error, code(error_code::not_coordinator));
  EXPECT_EQ(join("g", a->member_id)->error, code(error_code::not_coordinator));
  EXPECT_EQ(sync("g", a->member_id, 1)->error, code(error_code::not_coordinator));
}

TEST_F(fixture, join_errors_are_kafkas) {
  auto bad = join("g", "", std::nullopt, 10);
  ASSERT_TRUE(bad->done);
  EXPECT_EQ(bad->error, code(error_code::invalid_session_timeout));
  auto empty = join("", "");
  EXPECT_EQ(empty->error, code(error_code::invalid_group_id));
  auto unknown = join("new-group", "made-up-id");
  EXPECT_EQ(unknown->error, code(error_code::unknown_member_id));

  auto a = join_dynamic("g");
  tick();
  ASSERT_TRUE(a->done);
  // Another protocol type cannot join.
  protocol::join_group_request r;
  r.group_id = "g";
  r.session_timeout_ms = 10000;
  r.rebalance_timeout_ms = 10000;
  r.protocol_type = "connect";
  protocol::join_group_request::join_group_request_protocol p;
  p.name = "default";
  r.protocols.push_back(p);
  int16_t err = -1;
  c->join_group(r, join_v, {"x", "/h"}, now, [&](owned_message<protocol::join_group_response> m) {
    err = m.message.error_code;
  });
  EXPECT_EQ(err, code(error_code::inconsistent_group_protocol));
}

TEST_F(fixture, group_max_size_is_enforced) {
  config.group_max_size = 1;
  start();
  auto a = join_dynamic("g");
  // The group is full: even the member id is refused (Kafka's acceptJoiningMember).
  auto b = join("g", "");
  ASSERT_TRUE(b->done);
  EXPECT_EQ(b->error, code(error_code::group_max_size_reached));
  tick();
  EXPECT_TRUE(a->done);
  EXPECT_EQ(a->error, 0);
}

TEST_F(fixture, offsets_commit_fetch_and_survive_a_reload) {
  EXPECT_EQ(fetch("simple", 0), -1);
  EXPECT_EQ(commit("simple", 0, 42), 0);
  EXPECT_EQ(commit("simple", 1, 7), 0);
  EXPECT_EQ(fetch("simple", 0), 42);
  EXPECT_EQ(fetch("simple", 1), 7);
  EXPECT_EQ(fetch("simple", 2), -1);

  auto a = join_dynamic("g");
  tick();
  ASSERT_EQ(sync("g", a->member_id, 1, {{a->member_id, {9}}})->error, 0);
  EXPECT_EQ(commit("g", 3, 100, 1, a->member_id), 0);

  // A new coordinator over the same log: the offsets and the group come back.
  start();
  EXPECT_EQ(fetch("simple", 0), 42);
  EXPECT_EQ(fetch("simple", 1), 7);
  EXPECT_EQ(fetch("g", 3), 100);
  EXPECT_EQ(heartbeat("g", a->member_id, 1), 0) << "the loaded group is Stable with its member";
  auto s = sync("g", a->member_id, 1);
  ASSERT_TRUE(s->done);
  EXPECT_EQ(s->assignment, std::vector<uint8_t>{9});
}

// While one thread's commit holds the group's shard (here: blocked inside its append), another
// thread's try_offset_commit does nothing and returns nullopt; the commit it hands off instead
// runs on the holder's thread before the shard is released, after the holder's own commit, and
// the log has both in that order (a reload ends at the handed-off offset).
TEST_F(fixture, a_commit_to_a_busy_shard_is_handed_to_the_holder) {
  std::mutex m;
  std::condition_variable cv;
  bool block_next = true;
  bool in_append = false;
  bool release = false;
  log.on_append = [&] {
    std::unique_lock lock(m);
    if (!block_next) return;
    block_next = false;
    in_append = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  };
  std::thread holder([&] { EXPECT_EQ(commit("simple", 0, 1), 0); });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return in_append; });
  }
  auto req = std::make_shared<protocol::offset_commit_request>();
  req->group_id = "simple";
  req->generation_id_or_member_epoch = -1;
  protocol::offset_commit_request::offset_commit_request_topic t;
  t.name = "t";
  protocol::offset_commit_request::offset_commit_request_partition p;
  p.partition_index = 0;
  p.committed_offset = 2;
  p.committed_metadata = "m";
  t.partitions.push_back(p);
  req->topics.push_back(t);
  EXPECT_FALSE(c->try_offset_commit(*req, commit_v, now)) << "the shard is held";

  std::optional<owned_message<protocol::offset_commit_response>> answer;
  std::thread::id answered_on;
  c->offset_commit_handed_off(req, commit_v, now,
                              [&](owned_message<protocol::offset_commit_response> a) {
                                answered_on = std::this_thread::get_id();
                                answer.emplace(std::move(a));
                              });
  const std::thread::id holder_id = holder.get_id();
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  holder.join();
  ASSERT_TRUE(answer) << "run by the holder before it released the shard";
  EXPECT_EQ(answered_on, holder_id);
  ASSERT_EQ(answer->message.topics.size(), 1u);
  EXPECT_EQ(answer->message.topics[0].partitions[0].error_code, 0);
  EXPECT_EQ(fetch("simple", 0), 2);
  EXPECT_EQ(log.appends, 2);
  log.on_append = nullptr;
  start();
  EXPECT_EQ(fetch("simple", 0), 2);

  // A free shard: try_offset_commit commits at once.
  auto now_free = c->try_offset_commit(*req, commit_v, now);
  ASSERT_TRUE(now_free);
  EXPECT_EQ(now_free->message.topics[0].partitions[0].error_code, 0);
}

TEST_F(fixture, offset_commit_errors_are_kafkas) {
  EXPECT_EQ(commit("nogroup", 0, 1, 3, "m"), code(error_code::group_id_not_found));
  EXPECT_EQ(commit("nogroup", 0, 1, 3, "m", "", "t", 8), code(error_code::illegal_generation));
  EXPECT_EQ(commit("s", 0, 1, -1, "", "", "missing-topic"),
            code(error_code::unknown_topic_or_partition));
  EXPECT_EQ(commit("s", 9, 1), code(error_code::unknown_topic_or_partition));
  EXPECT_EQ(commit("s", 0, 1, -1, "", std::string(4097, 'x')),
            code(error_code::offset_metadata_too_large));
  EXPECT_EQ(commit("s", 0, 1, -1, "", std::string(4096, 'x')), 0);

  auto a = join_dynamic("g");
  tick();
  ASSERT_EQ(sync("g", a->member_id, 1, {{a->member_id, {1}}})->error, 0);
  EXPECT_EQ(commit("g", 0, 1, 2, a->member_id), code(error_code::illegal_generation));
  EXPECT_EQ(commit("g", 0, 1, 1, "stranger"), code(error_code::unknown_member_id));
  EXPECT_EQ(commit("g", 0, 1, -1, ""), code(error_code::unknown_member_id))
      << "a generation -1 commit to a group with members";

  // A failed append answers the produce path's error as the commit error, changes nothing.
  log.fail_with = error_code::kafka_storage_error;
  EXPECT_EQ(commit("g", 0, 5, 1, a->member_id), code(error_code::not_coordinator));
  log.fail_with = error_code::none;
  EXPECT_EQ(fetch("g", 0), -1);
}

TEST_F(fixture, an_unloaded_coordinator_answers_load_in_progress) {
  c = std::make_unique<group_coordinator>(config, log, metadata);
  EXPECT_EQ(heartbeat("g", "m", 1), code(error_code::coordinator_load_in_progress));
  EXPECT_EQ(commit("g", 0, 1), code(error_code::coordinator_load_in_progress));
  int16_t group_error = 0;
  fetch("g", 0, &group_error);
  EXPECT_EQ(group_error, code(error_code::coordinator_load_in_progress));
  auto j = join("g", "");
  EXPECT_EQ(j->error, code(error_code::coordinator_load_in_progress));
}

TEST_F(fixture, groups_are_described_listed_and_deleted) {
  auto a = join_dynamic("g");
  tick();
  ASSERT_EQ(sync("g", a->member_id, 1, {{a->member_id, {1}}})->error, 0);
  EXPECT_EQ(commit("simple", 0, 3), 0);

  protocol::describe_groups_request d;
  d.groups = {"g", "missing"};
  auto described = c->describe_groups(d, 5);
  ASSERT_EQ(described.message.groups.size(), 2u);
  EXPECT_EQ(described.message.groups[0].group_state, "Stable");
  EXPECT_EQ(described.message.groups[0].protocol_type, "consumer");
  EXPECT_EQ(described.message.groups[0].protocol_data, "range");
  ASSERT_EQ(described.message.groups[0].members.size(), 1u);
  EXPECT_EQ(described.message.groups[0].members[0].client_host, "/127.0.0.1");
  EXPECT_EQ(described.message.groups[1].group_state, "Dead");
  EXPECT_EQ(described.message.groups[1].error_code, 0);
  EXPECT_EQ(c->describe_groups(d, 6).message.groups[1].error_code,
            code(error_code::group_id_not_found));

  protocol::list_groups_request l;
  auto listed = c->list_groups(l, 5);
  EXPECT_EQ(listed.message.groups.size(), 2u);
  std::vector<std::string_view> filter{"empty"};
  l.states_filter = filter;
  listed = c->list_groups(l, 5);
  ASSERT_EQ(listed.message.groups.size(), 1u);
  EXPECT_EQ(listed.message.groups[0].group_id, "simple");

  protocol::delete_groups_request del;
  del.groups_names = {"g", "simple", "missing"};
  auto deleted = c->delete_groups(del, 2, now);
  ASSERT_EQ(deleted.message.results.size(), 3u);
  EXPECT_EQ(deleted.message.results[0].error_code, code(error_code::non_empty_group));
  EXPECT_EQ(deleted.message.results[1].error_code, 0);
  EXPECT_EQ(deleted.message.results[2].error_code, code(error_code::group_id_not_found));
  EXPECT_EQ(fetch("simple", 0), -1);
  start();
  EXPECT_EQ(fetch("simple", 0), -1) << "the tombstones are in the log";
  EXPECT_EQ(fetch("g", 0), -1);
}

TEST_F(fixture, offset_delete_refuses_subscribed_topics) {
  metadata.add("other", 1);
  auto a = join_dynamic("g");
  tick();
  ASSERT_EQ(sync("g", a->member_id, 1, {{a->member_id, {1}}})->error, 0);
  ASSERT_EQ(commit("g", 0, 1, 1, a->member_id), 0);
  ASSERT_EQ(commit("g", 0, 1, 1, a->member_id, "", "other"), 0);
  protocol::offset_delete_request r;
  r.group_id = "g";
  for (std::string_view topic : {std::string_view("t"), std::string_view("other")}) {
    protocol::offset_delete_request::offset_delete_request_topic t;
    t.name = topic;
    protocol::offset_delete_request::offset_delete_request_partition p;
    p.partition_index = 0;
    t.partitions.push_back(p);
    r.topics.push_back(t);
  }
  auto resp = c->offset_delete(r, 0, now);
  EXPECT_EQ(resp.message.error_code, 0);
  ASSERT_EQ(resp.message.topics.size(), 2u);
  EXPECT_EQ(resp.message.topics[0].partitions[0].error_code,
            code(error_code::group_subscribed_to_topic));
  EXPECT_EQ(resp.message.topics[1].partitions[0].error_code, 0);
  EXPECT_EQ(fetch("g", 0), 1);
}

TEST_F(fixture, offsets_of_an_empty_group_expire_after_the_retention) {
  config.offsets_retention_minutes = 1;
  config.offsets_retention_check_interval_ms = 1000;
  start();
  ASSERT_EQ(commit("simple", 0, 3), 0);
  now += 30'000;
  tick();
  EXPECT_EQ(fetch("simple", 0), 3);
  now += 31'000;
  tick();
  EXPECT_EQ(fetch("simple", 0), -1);
  protocol::list_groups_request l;
  EXPECT_TRUE(c->list_groups(l, 4).message.groups.empty()) << "the group went with its offsets";
}

TEST_F(fixture, records_are_kafkas_format) {
  ASSERT_EQ(commit("simple", 2, 11, -1, "", "meta"), 0);
  auto records = log.records();
  ASSERT_EQ(records.size(), 1u);
  auto decoded = decode_record(records[0].first, records[0].second);
  ASSERT_TRUE(decoded.has_value());
  auto* oc = std::get_if<loaded_offset_commit>(&*decoded);
  ASSERT_NE(oc, nullptr);
  EXPECT_EQ(oc->group_id, "simple");
  EXPECT_EQ(oc->topic, "t");
  EXPECT_EQ(oc->partition, 2);
  ASSERT_TRUE(oc->value);
  EXPECT_EQ(oc->value->committed_offset, 11);
  EXPECT_EQ(oc->value->metadata, "meta");
  // Key: int16 type 1, then group, topic (int16-length strings) and the partition.
  const std::vector<uint8_t> key{0, 1, 0, 6, 's', 'i', 'm', 'p', 'l', 'e', 0, 1, 't', 0, 0, 0, 2};
  EXPECT_EQ(records[0].first, key);
  // Value version 4 (what Kafka 4.4 writes) with the topic's id as its tagged field 0.
  EXPECT_EQ((*records[0].second)[0], 0);
  EXPECT_EQ((*records[0].second)[1], 4);
  EXPECT_EQ(oc->value->topic_id, metadata.topic("t")->id);
}

}  // namespace
}  // namespace tarn::coordinator

namespace tarn::coordinator {
namespace {

std::vector<uint8_t> golden(const std::string& name) {
  const std::string path = std::string(TARN_SOURCE_DIR) + "/tests/fixtures/offsets-records/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

// The records the coordinator writes are byte for byte those of Kafka 4.4's own record helpers
// (tests/java/OffsetsRecordsGolden.java made the files).
TEST(group_records, offset_commits_are_kafkas_bytes) {
  offset_and_metadata om;
  om.committed_offset = 42;
  om.commit_timestamp_ms = 1700000000123;
  auto r = offset_commit_record("group-a", "orders", 0, om);
  EXPECT_EQ(r.key, golden("offset_commit_no_topic_id.key.bin"));
  EXPECT_EQ(r.value, golden("offset_commit_no_topic_id.value.bin"));

  offset_and_metadata with_id;
  with_id.committed_offset = 1234;
  with_id.leader_epoch = 7;
  with_id.metadata = "meta";
  with_id.commit_timestamp_ms = 1700000000123;
  with_id.topic_id = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
  r = offset_commit_record("group-a", "orders", 3, with_id);
  EXPECT_EQ(r.key, golden("offset_commit.key.bin"));
  EXPECT_EQ(r.value, golden("offset_commit.value.bin"));

  offset_and_metadata expiring;
  expiring.committed_offset = 99;
  expiring.metadata = "m";
  expiring.commit_timestamp_ms = 1700000000123;
  expiring.expire_timestamp_ms = 1700086400123;
  r = offset_commit_record("group-a", "orders", 1, expiring);
  EXPECT_EQ(r.key, golden("offset_commit_expire.key.bin"));
  EXPECT_EQ(r.value, golden("offset_commit_expire.value.bin"));

  r = offset_commit_tombstone("group-a", "orders", 3);
  EXPECT_EQ(r.key, golden("offset_commit_tombstone.key.bin"));
  EXPECT_FALSE(r.value.has_value());
}

TEST(group_records, group_metadata_is_kafkas_bytes) {
  classic_group_snapshot s;
  s.protocol_type = "consumer";
  s.generation = 4;
  s.protocol_name = "range";
  s.leader = "member-1";
  s.current_state_timestamp_ms = 1700000000123;
  for (int i = 1; i <= 2; ++i) {
    classic_member m;
    m.member_id = "member-" + std::to_string(i);
    if (i == 2) m.group_instance_id = "instance-2";
    m.client_id = "client-" + std::to_string(i);
    m.client_host = "/127.0.0." + std::to_string(i);
    m.rebalance_timeout_ms = 300000;
    m.session_timeout_ms = 45000;
    m.protocol_type = "consumer";
    m.protocols.push_back({"range", bytes_of("subscription-" + std::to_string(i))});
    m.assignment = bytes_of("assignment-" + std::to_string(i));
    s.members.push_back(std::move(m));
  }
  classic_group g("group-a", 0);
  g.restore(std::move(s), 0);
  auto r = group_metadata_record(g);
  EXPECT_EQ(r.key, golden("group_metadata_v3.key.bin"));
  EXPECT_EQ(r.value, golden("group_metadata_v3.value.bin"));

  // Read back: the same group.
  auto decoded = decode_record(r.key, *r.value);
  ASSERT_TRUE(decoded.has_value());
  auto* gm = std::get_if<loaded_group_metadata>(&*decoded);
  ASSERT_NE(gm, nullptr);
  ASSERT_TRUE(gm->value);
  EXPECT_EQ(gm->value->generation, 4);
  ASSERT_EQ(gm->value->members.size(), 2u);
  EXPECT_EQ(gm->value->members[1].group_instance_id, "instance-2");
  EXPECT_EQ(gm->value->members[1].assignment, bytes_of("assignment-2"));

  classic_group empty("g2", 0);
  classic_group_snapshot es;
  es.current_state_timestamp_ms = 1700000000123;
  empty.restore(std::move(es), 0);
  r = group_metadata_record(empty);
  EXPECT_EQ(r.key, golden("group_metadata_empty.key.bin"));
  EXPECT_EQ(r.value, golden("group_metadata_empty.value.bin"));
  EXPECT_EQ(group_metadata_tombstone("group-a").key, golden("group_metadata_tombstone.key.bin"));
}

TEST(group_records, kafkas_older_value_versions_are_read) {
  for (const char* name :
       {"offset_commit_value_v0", "offset_commit_value_v1", "offset_commit_value_v2",
        "offset_commit_value_v3", "legacy_offset_commit"}) {
    auto decoded = decode_record(golden(std::string(name) + ".key.bin"),
                                 golden(std::string(name) + ".value.bin"));
    ASSERT_TRUE(decoded.has_value()) << name;
    auto* oc = std::get_if<loaded_offset_commit>(&*decoded);
    ASSERT_NE(oc, nullptr) << name;
    ASSERT_TRUE(oc->value) << name;
    EXPECT_GE(oc->value->committed_offset, 77) << name;
  }
  for (const char* name :
       {"group_metadata_v0", "group_metadata_v1", "group_metadata_v2", "group_metadata_v4"}) {
    auto decoded = decode_record(golden(std::string(name) + ".key.bin"),
                                 golden(std::string(name) + ".value.bin"));
    ASSERT_TRUE(decoded.has_value()) << name;
    auto* gm = std::get_if<loaded_group_metadata>(&*decoded);
    ASSERT_NE(gm, nullptr) << name;
    ASSERT_TRUE(gm->value) << name;
    EXPECT_EQ(gm->value->members.size(), 2u) << name;
  }
}

}  // namespace
}  // namespace tarn::coordinator

namespace tarn::coordinator {
namespace {

// KIP-848 groups through the facade: heartbeats, commits with member epochs, listing, deletion,
// conversion of empty groups between the protocols, reload.
struct consumer_fixture : fixture {
  struct beat {
    int16_t error = -1;
    std::string message;
    int32_t epoch = -1;
    size_t partitions = 0;
  };
  beat heartbeat848(const std::string& group, const std::string& member, int32_t epoch,
                    bool subscribe = true) {
    protocol::consumer_group_heartbeat_request r;
    r.group_id = group;
    r.member_id = member;
    r.member_epoch = epoch;
    r.rebalance_timeout_ms = 30000;
    std::vector<std::string_view> topics{"t"};
    std::vector<protocol::consumer_group_heartbeat_request::topic_partitions_data> owned;
    if (subscribe) {
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
};

TEST_F(consumer_fixture, a_member_joins_gets_every_partition_and_commits_with_its_epoch) {
  auto b = heartbeat848("cg", "member-1", 0);
  ASSERT_EQ(b.error, 0) << b.message;
  EXPECT_EQ(b.epoch, 2) << "a new group's epoch is 1, its first member's 2 (as Kafka 4.4)";
  EXPECT_EQ(b.partitions, 4u);
  EXPECT_EQ(commit("cg", 0, 10, 2, "member-1"), 0);
  EXPECT_EQ(commit("cg", 0, 10, 2, "stranger"), code(error_code::unknown_member_id));
  EXPECT_EQ(commit("cg", 0, 10, 7, "member-1"), code(error_code::stale_member_epoch));
  EXPECT_EQ(fetch("cg", 0), 10);

  protocol::list_groups_request l;
  auto listed = c->list_groups(l, 5);
  ASSERT_EQ(listed.message.groups.size(), 1u);
  EXPECT_EQ(listed.message.groups[0].group_type, "consumer");
  std::vector<std::string_view> classic_only{"classic"};
  l.types_filter = classic_only;
  EXPECT_TRUE(c->list_groups(l, 5).message.groups.empty());

  protocol::consumer_group_describe_request d;
  d.group_ids = {"cg", "nope"};
  auto described = c->consumer_group_describe(d, 1);
  ASSERT_EQ(described.message.groups.size(), 2u);
  EXPECT_EQ(described.message.groups[0].error_code, 0);
  EXPECT_EQ(described.message.groups[0].members.size(), 1u);
  EXPECT_EQ(described.message.groups[1].error_code, code(error_code::group_id_not_found));

  protocol::delete_groups_request del;
  del.groups_names = {"cg"};
  EXPECT_EQ(c->delete_groups(del, 2, now).message.results[0].error_code,
            code(error_code::non_empty_group));

  // A classic member joins the consumer group (online migration): first it gets its id.
  auto j = join("cg", "");
  ASSERT_TRUE(j->done);
  EXPECT_EQ(j->error, code(error_code::member_id_required));

  // Reload: the group and its offsets come back from the records.
  start();
  EXPECT_EQ(fetch("cg", 0), 10);
  auto again = heartbeat848("cg", "member-1", 2);
  EXPECT_EQ(again.error, 0) << again.message;
  EXPECT_EQ(again.epoch, 2);

  // The member leaves; the empty group is deleted with its offsets.
  EXPECT_EQ(heartbeat848("cg", "member-1", -1, false).error, 0);
  EXPECT_EQ(c->delete_groups(del, 2, now).message.results[0].error_code, 0);
  EXPECT_EQ(fetch("cg", 0), -1);
  start();
  EXPECT_EQ(fetch("cg", 0), -1);
  EXPECT_TRUE(c->list_groups(protocol::list_groups_request{}, 5).message.groups.empty());
}

TEST_F(consumer_fixture, empty_groups_change_protocol_and_unsynced_ones_do_not) {
  // A simple (offsets-only) classic group becomes a consumer group at the first heartbeat.
  ASSERT_EQ(commit("g", 0, 5), 0);
  auto b = heartbeat848("g", "m", 0);
  ASSERT_EQ(b.error, 0) << b.message;
  EXPECT_EQ(fetch("g", 0), 5) << "its offsets stay";
  EXPECT_EQ(heartbeat848("g", "m", -1, false).error, 0);
  // The empty consumer group becomes a classic group at the first JoinGroup.
  auto j = join_dynamic("g");
  tick();
  ASSERT_TRUE(j->done);
  EXPECT_EQ(j->error, 0);
  // A classic group whose member never synced (no assignment) is not upgraded: its embedded
  // protocol does not parse (Kafka's SchemaException in fromClassicGroup).
  auto refused = heartbeat848("g", "m2", 0);
  EXPECT_EQ(refused.error, code(error_code::group_id_not_found));
  EXPECT_EQ(refused.message,
            "Cannot upgrade the classic group g to consumer group because the embedded consumer "
            "protocol is malformed.");
  EXPECT_EQ(heartbeat848("unknown", "m", 3).error, code(error_code::group_id_not_found));
}

}  // namespace
}  // namespace tarn::coordinator

namespace tarn::coordinator {
namespace {

// The coordinator itself never removes a record: every commit is one more record of
// __consumer_offsets, and compaction is the broker's log cleaner's (src/storage), which this
// in-memory log does not have. A load of the uncompacted history still ends with the latest offset
// per partition, and the coordinator's memory holds only that.
TEST_F(fixture, uncompacted_offsets_grow_by_a_record_per_commit_and_reload_to_the_latest) {
  constexpr int commits = 2000;  // (20000 took 227 s under TSan)
  for (int i = 1; i <= commits; ++i) ASSERT_EQ(commit("busy", i % 4, i), 0);
  EXPECT_EQ(log.appends, commits) << "one batch per OffsetCommit";
  EXPECT_EQ(log.records().size(), static_cast<size_t>(commits)) << "nothing is ever removed";
  start();
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(fetch("busy", p), commits - (commits - p) % 4) << "partition " << p;
  }
}

}  // namespace
}  // namespace tarn::coordinator

namespace tarn::coordinator {
namespace {

// Kafka 4.4 unloads the coordinator's partitions when __consumer_offsets is deleted: every group
// API answers NOT_COORDINATOR (a waiting JoinGroup too) until FindCoordinator creates the topic
// again, and then the groups and their commits are gone with the log that held them.
TEST_F(fixture, deleting_consumer_offsets_drops_every_group_until_the_topic_is_back) {
  ASSERT_EQ(commit("simple", 0, 5), 0);
  auto j = join_dynamic("g");
  ASSERT_FALSE(j->done) << "waiting for the initial delay";
  log.drop();
  c->on_topics_deleted({"__consumer_offsets"}, now);
  ASSERT_TRUE(j->done);
  EXPECT_EQ(j->error, code(error_code::not_coordinator));
  int16_t group_error = -1;
  fetch("simple", 0, &group_error);
  EXPECT_EQ(group_error, code(error_code::not_coordinator));
  EXPECT_EQ(commit("simple", 0, 6), code(error_code::not_coordinator));
  EXPECT_EQ(heartbeat("g", j->member_id, 1), code(error_code::not_coordinator));
  EXPECT_EQ(log.partitions(), std::nullopt) << "nothing recreated the topic behind its back";
  protocol::list_groups_request l;
  EXPECT_TRUE(c->list_groups(l, 5).message.groups.empty());

  ASSERT_EQ(c->find_coordinator("simple"), error_code::none);
  EXPECT_EQ(log.partitions(), 50);
  EXPECT_EQ(fetch("simple", 0, &group_error), -1) << "the commit went with the old log";
  EXPECT_EQ(group_error, 0);
  EXPECT_EQ(heartbeat("g", j->member_id, 1), code(error_code::unknown_member_id));
  ASSERT_EQ(commit("simple", 0, 7), 0);
  EXPECT_EQ(fetch("simple", 0), 7);
}

// In a cluster each partition of __consumer_offsets is coordinated by its leader: a coordinator
// started unowned answers NOT_COORDINATOR, loads only the partitions it is told it leads (their
// groups and offsets from the log, nothing of the others), and unloading one answers its waiting
// JoinGroup and later requests NOT_COORDINATOR while the other partitions go on.
TEST_F(fixture, partitions_load_and_unload_one_at_a_time_as_leadership_moves) {
  // Two groups on different partitions, committed through a coordinator owning everything.
  const std::string g1 = "group-a";
  std::string g2 = "group-b";
  for (int i = 0; partition_for(g2, 50) == partition_for(g1, 50); ++i)
    g2 = "group-b" + std::to_string(i);
  const int32_t p1 = partition_for(g1, 50);
  const int32_t p2 = partition_for(g2, 50);
  ASSERT_EQ(commit(g1, 0, 11), 0);
  ASSERT_EQ(commit(g2, 1, 22), 0);

  // A new broker's coordinator over the same log, owning nothing yet.
  c = std::make_unique<group_coordinator>(config, log, metadata);
  c->start_unowned(now);
  int16_t group_error = -1;
  fetch(g1, 0, &group_error);
  EXPECT_EQ(group_error, code(error_code::not_coordinator));
  EXPECT_EQ(commit(g2, 1, 23), code(error_code::not_coordinator));
  EXPECT_EQ(join(g1, "")->error, code(error_code::not_coordinator));
  protocol::list_groups_request l;
  EXPECT_EQ(c->list_groups(l, 5).message.error_code, 0) << "nothing led, nothing loading";
  EXPECT_TRUE(c->list_groups(l, 5).message.groups.empty());

  // Leader of p1 only: g1's offsets are back, g2 is still another broker's.
  ASSERT_TRUE(c->load_partition(p1, now));
  EXPECT_TRUE(c->owns_partition(p1));
  EXPECT_FALSE(c->owns_partition(p2));
  EXPECT_EQ(fetch(g1, 0), 11);
  fetch(g2, 1, &group_error);
  EXPECT_EQ(group_error, code(error_code::not_coordinator));
  ASSERT_EQ(c->list_groups(l, 5).message.groups.size(), 1u) << "ListGroups: led partitions only";
  EXPECT_EQ(c->list_groups(l, 5).message.groups[0].group_id, g1);
  ASSERT_EQ(commit(g1, 0, 12), 0);
  EXPECT_TRUE(c->load_partition(p1, now)) << "loading a led partition again changes nothing";
  EXPECT_EQ(fetch(g1, 0), 12);

  // Leader of p2 too; then p1 moves away while a JoinGroup of g1 waits.
  ASSERT_TRUE(c->load_partition(p2, now));
  EXPECT_EQ(fetch(g2, 1), 22);
  auto waiting = join_dynamic(g1);
  ASSERT_FALSE(waiting->done) << "waiting for the initial delay";
  c->unload_partition(p1, now);
  ASSERT_TRUE(waiting->done);
  EXPECT_EQ(waiting->error, code(error_code::not_coordinator));
  EXPECT_FALSE(c->owns_partition(p1));
  fetch(g1, 0, &group_error);
  EXPECT_EQ(group_error, code(error_code::not_coordinator));
  EXPECT_EQ(commit(g1, 0, 13), code(error_code::not_coordinator));
  EXPECT_EQ(fetch(g2, 1), 22) << "the other partition goes on";

  // Back again: replayed from the log, with the commit made while it was led before.
  ASSERT_TRUE(c->load_partition(p1, now));
  EXPECT_EQ(fetch(g1, 0), 12);
  EXPECT_EQ(c->find_coordinator(g1), error_code::none);
  EXPECT_TRUE(c->owns_partition(p1));
}

// A write the log refuses (NOT_ENOUGH_REPLICAS: in a cluster, an ISR below min.insync.replicas)
// is answered with Kafka's mapped error, COORDINATOR_NOT_AVAILABLE, and changes nothing in
// memory: the state machines apply a change only after its records are written (Kafka's
// CoordinatorRuntime reverts its timeline snapshot instead), so the group stays what its log
// says, and a coordinator that loads the log (the next leader) finds the same group.
TEST_F(consumer_fixture, a_refused_write_leaves_every_group_as_its_log_has_it) {
  // A classic group, stable at generation 1 with its assignment.
  auto a = join_dynamic("g");
  tick();
  ASSERT_EQ(a->generation, 1);
  ASSERT_EQ(sync("g", a->member_id, 1, {{a->member_id, {7}}})->error, 0);
  // A consumer group with one member at epoch 2.
  ASSERT_EQ(heartbeat848("cg", "m1", 0).epoch, 2);

  log.fail_with = error_code::not_enough_replicas;
  const int appends = log.appends;
  // A new classic group: its first GroupMetadata cannot be written, so there is no group.
  auto refused = join("fresh", "");
  ASSERT_TRUE(refused->done);
  EXPECT_EQ(refused->error, code(error_code::coordinator_not_available));
  // A second consumer-protocol member, and the first one leaving: refused, the group unchanged.
  EXPECT_EQ(heartbeat848("cg", "m2", 0).error, code(error_code::coordinator_not_available));
  EXPECT_EQ(heartbeat848("cg", "m1", -1, false).error, code(error_code::coordinator_not_available));
  EXPECT_EQ(log.appends, appends);
  log.fail_with = error_code::none;

  const auto check = [&](const char* when) {
    protocol::describe_groups_request d;
    d.groups = {"g", "fresh"};
    auto described = c->describe_groups(d, 5);
    ASSERT_EQ(described.message.groups.size(), 2u) << when;
    EXPECT_EQ(described.message.groups[0].group_state, "Stable") << when;
    ASSERT_EQ(described.message.groups[0].members.size(), 1u) << when;
    const auto assignment = described.message.groups[0].members[0].member_assignment;
    EXPECT_EQ(std::vector<uint8_t>(assignment.begin(), assignment.end()), std::vector<uint8_t>{7})
        << when;
    EXPECT_EQ(described.message.groups[1].group_state, "Dead") << when;
    protocol::consumer_group_describe_request cd;
    cd.group_ids = {"cg"};
    auto cgd = c->consumer_group_describe(cd, 1);
    ASSERT_EQ(cgd.message.groups.size(), 1u) << when;
    EXPECT_EQ(cgd.message.groups[0].group_epoch, 2) << when;
    ASSERT_EQ(cgd.message.groups[0].members.size(), 1u) << when;
    EXPECT_EQ(cgd.message.groups[0].members[0].member_id, "m1") << when;
  };
  check("in memory");
  EXPECT_EQ(heartbeat("g", a->member_id, 1), 0);
  EXPECT_EQ(heartbeat848("cg", "m1", 2).epoch, 2);
  // The next leader replays the log: the same groups.
  start();
  check("after a load");
}

// A partition whose load is overtaken by an unload (the leadership moved on while the log was
// replayed) installs nothing; while it loads, its groups answer COORDINATOR_LOAD_IN_PROGRESS.
TEST_F(fixture, a_load_overtaken_by_an_unload_installs_nothing) {
  const std::string g = "group-a";
  const int32_t p = partition_for(g, 50);
  ASSERT_EQ(commit(g, 0, 5), 0);
  c = std::make_unique<group_coordinator>(config, log, metadata);
  c->start_unowned(now);
  int16_t during = -1;
  bool overtaken = false;
  log.on_replay = [&] {
    if (std::exchange(overtaken, true)) return;
    during = commit(g, 0, 6);
    c->unload_partition(p, now);
  };
  EXPECT_FALSE(c->load_partition(p, now));
  EXPECT_EQ(during, code(error_code::coordinator_load_in_progress));
  EXPECT_FALSE(c->owns_partition(p));
  int16_t group_error = -1;
  fetch(g, 0, &group_error);
  EXPECT_EQ(group_error, code(error_code::not_coordinator));
  ASSERT_TRUE(c->load_partition(p, now));
  EXPECT_EQ(fetch(g, 0), 5);
}

}  // namespace
}  // namespace tarn::coordinator
