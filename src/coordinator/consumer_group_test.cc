// The KIP-848 consumer group state machine, driven like a Java consumer with
// group.protocol=consumer would drive it, without sockets.
#include "coordinator/consumer_group.h"

#include <gtest/gtest.h>

#include <functional>

#include "coordinator/group_coordinator.h"
#include "protocol/reader.h"

namespace tarn::coordinator {
namespace {

using protocol::error_code;
using request = protocol::consumer_group_heartbeat_request;
using response = protocol::consumer_group_heartbeat_response;

class fake_metadata : public metadata_view {
 public:
  topic_uuid add(const std::string& name, int32_t partitions) {
    topic_description t;
    t.name = name;
    t.partitions = partitions;
    t.id[0] = 0x7a;
    t.id[15] = static_cast<uint8_t>(++created_);
    topics_[name] = t;
    return t.id;
  }
  void remove(const std::string& name) { topics_.erase(name); }
  std::optional<topic_description> topic(std::string_view name) const override {
    auto it = topics_.find(std::string(name));
    if (it == topics_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<topic_description> topic_by_id(const topic_uuid& id) const override {
    for (const auto& [n, t] : topics_) {
      if (t.id == id) return t;
    }
    return std::nullopt;
  }
  std::vector<topic_description> topics() const override {
    std::vector<topic_description> out;
    for (const auto& [n, t] : topics_) out.push_back(t);
    return out;
  }

 private:
  std::map<std::string, topic_description> topics_;
  int created_ = 0;
};

// Partitions by topic id, as the heartbeat carries them.
using partitions = std::map<topic_uuid, std::set<int32_t>>;

// One heartbeat's fields; strings live here while the request views them.
struct beat {
  std::string member_id;
  int32_t epoch = 0;
  std::optional<std::string> instance_id;
  std::optional<std::vector<std::string>> topics;
  std::optional<std::string> regex;
  std::optional<std::string> assignor;
  int32_t rebalance_timeout_ms = -1;
  std::optional<partitions> owned;
};

struct written_record {
  int16_t type = 0;
  bool tombstone = false;
};

class ConsumerGroupTest : public ::testing::Test {
 protected:
  ConsumerGroupTest() {
    t_ = metadata_.add("t", 4);
    config_.group_consumer_session_timeout_ms = 45000;
    config_.group_consumer_heartbeat_interval_ms = 5000;
  }

  group_context ctx() {
    group_context c{now_, config_, metadata_,
                    [this](std::vector<coordinator_record> records) {
                      if (fail_with_ != error_code::none) return fail_with_;
                      for (auto& r : records) log_.push_back(std::move(r));
                      return error_code::none;
                    },
                    deferred_};
    c.group_configs = &group_configs_;
    return c;
  }

  owned_message<response> send(const beat& b, int16_t version = 1) {
    request r;
    r.group_id = "g";
    r.member_id = b.member_id;
    r.member_epoch = b.epoch;
    if (b.instance_id) r.instance_id = *b.instance_id;
    r.rebalance_timeout_ms = b.rebalance_timeout_ms;
    std::vector<std::string_view> names;
    if (b.topics) {
      for (const auto& t : *b.topics) names.push_back(t);
      r.subscribed_topic_names = names;
    }
    if (b.regex) r.subscribed_topic_regex = *b.regex;
    if (b.assignor) r.server_assignor = *b.assignor;
    if (b.owned) {
      r.topic_partitions.emplace();
      for (const auto& [t, ps] : *b.owned) {
        auto& tp = r.topic_partitions->emplace_back();
        tp.topic_id.bytes = t;
        tp.partitions.assign(ps.begin(), ps.end());
      }
    }
    client_info client{"client-" + b.member_id, "/127.0.0.1"};
    client.may_describe_topic = may_describe_;
    auto c = ctx();
    return group_.heartbeat(r, version, client, c);
  }

  // A member joining with its topics (epoch 0, rebalance timeout, empty owned partitions).
  owned_message<response> join(const std::string& id, std::vector<std::string> topics,
                               std::optional<std::string> instance = std::nullopt) {
    beat b;
    b.member_id = id;
    b.topics = std::move(topics);
    b.instance_id = std::move(instance);
    b.rebalance_timeout_ms = 30000;
    b.owned = partitions{};
    return send(b);
  }

  owned_message<response> heartbeat(const std::string& id, int32_t epoch,
                                    std::optional<partitions> owned = std::nullopt) {
    beat b;
    b.member_id = id;
    b.epoch = epoch;
    b.owned = std::move(owned);
    return send(b);
  }

  void poll() {
    auto c = ctx();
    group_.poll(c);
  }

  // The principal's DESCRIBE on topics (an authorizer); empty: every topic.
  std::function<bool(std::string_view)> may_describe_;

  static partitions assignment_of(const owned_message<response>& r) {
    partitions out;
    if (!r.message.assignment) return out;
    for (const auto& tp : r.message.assignment->topic_partitions) {
      out[tp.topic_id.bytes].insert(tp.partitions.begin(), tp.partitions.end());
    }
    return out;
  }

  partitions target_of(const std::string& id) const {
    auto it = group_.target_assignment().find(id);
    return it == group_.target_assignment().end() ? partitions{} : it->second;
  }

  const consumer_group_member& member(const std::string& id) const {
    return group_.members().at(id);
  }

  std::vector<written_record> types(size_t from = 0) const {
    std::vector<written_record> out;
    for (size_t i = from; i < log_.size(); ++i) {
      protocol::reader r(log_[i].key);
      out.push_back({r.read_int16(), !log_[i].value.has_value()});
    }
    return out;
  }

  // A fresh group rebuilt from every record written so far.
  consumer_group replayed() const {
    consumer_group g("g");
    for (const auto& r : log_) {
      protocol::reader rd(r.key);
      const int16_t type = rd.read_int16();
      std::optional<std::span<const uint8_t>> value;
      if (r.value) value = std::span<const uint8_t>(*r.value);
      EXPECT_TRUE(g.replay(type, r.key, value)) << "record type " << type;
    }
    return g;
  }

  group_config config_;
  consumer_group_configs group_configs_;  // the groups' consumer.* configs
  fake_metadata metadata_;
  topic_uuid t_{};
  int64_t now_ = 1'000'000;
  std::vector<std::function<void()>> deferred_;
  std::vector<coordinator_record> log_;
  error_code fail_with_ = error_code::none;
  consumer_group group_{"g"};
};

bool operator==(const written_record& a, const written_record& b) {
  return a.type == b.type && a.tombstone == b.tombstone;
}
std::ostream& operator<<(std::ostream& os, const written_record& r) {
  return os << r.type << (r.tombstone ? "(tombstone)" : "");
}

TEST_F(ConsumerGroupTest, FirstMemberJoinsAndGetsEveryPartition) {
  auto r = join("a", {"t"});
  EXPECT_EQ(r.message.error_code, 0);
  EXPECT_EQ(r.message.member_id, "a");
  EXPECT_EQ(r.message.member_epoch, 2);
  EXPECT_EQ(r.message.heartbeat_interval_ms, 5000);
  EXPECT_EQ(assignment_of(r), (partitions{{t_, {0, 1, 2, 3}}}));
  EXPECT_EQ(group_.group_epoch(), 2);
  EXPECT_EQ(group_.assignment_epoch(), 2);
  EXPECT_EQ(group_.state_name(), "Stable");
  // Kafka's records, in its order: member metadata, group epoch, target member and metadata,
  // current assignment.
  EXPECT_EQ(types(), (std::vector<written_record>{
                         {5, false}, {3, false}, {7, false}, {6, false}, {8, false}}));
  EXPECT_EQ(member("a").client_id, "client-a");
  EXPECT_EQ(member("a").client_host, "/127.0.0.1");
  // Each assigned partition remembers the epoch it was assigned at.
  EXPECT_EQ(member("a").assigned_partitions.at(t_),
            (std::map<int32_t, int32_t>{{0, 2}, {1, 2}, {2, 2}, {3, 2}}));
}

TEST_F(ConsumerGroupTest, SteadyHeartbeatWritesNothingAndSendsNoAssignment) {
  join("a", {"t"});
  const size_t written = log_.size();
  auto r = heartbeat("a", 2);
  EXPECT_EQ(r.message.error_code, 0);
  EXPECT_EQ(r.message.member_epoch, 2);
  EXPECT_FALSE(r.message.assignment.has_value());
  EXPECT_EQ(log_.size(), written);
}

TEST_F(ConsumerGroupTest, SecondMemberWaitsUntilTheFirstRevokes) {
  join("a", {"t"});
  now_ += 2000;  // past group.consumer.assignment.interval.ms
  auto b = join("b", {"t"});
  EXPECT_EQ(b.message.member_epoch, 3);
  // Its target is half the partitions, but a still owns them: nothing yet.
  EXPECT_EQ(target_of("b"), (partitions{{t_, {2, 3}}}));
  EXPECT_EQ(assignment_of(b), (partitions{}));
  EXPECT_EQ(member("b").state, member_state::unreleased_partitions);
  EXPECT_EQ(group_.state_name(), "Reconciling");

  // a learns it must give up 2 and 3: it stays at epoch 1 until it has.
  auto a = heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});
  EXPECT_EQ(a.message.member_epoch, 2);
  EXPECT_EQ(assignment_of(a), (partitions{{t_, {0, 1}}}));
  EXPECT_EQ(member("a").state, member_state::unrevoked_partitions);
  // b asks again: still unreleased.
  b = heartbeat("b", 3, partitions{});
  EXPECT_FALSE(b.message.assignment.has_value());

  // a reports it revoked them and moves to epoch 2; then b gets them.
  a = heartbeat("a", 2, partitions{{t_, {0, 1}}});
  EXPECT_EQ(a.message.member_epoch, 3);
  EXPECT_EQ(member("a").state, member_state::stable);
  b = heartbeat("b", 3, partitions{});
  EXPECT_EQ(assignment_of(b), (partitions{{t_, {2, 3}}}));
  EXPECT_EQ(member("b").state, member_state::stable);
  EXPECT_EQ(group_.state_name(), "Stable");
  // a kept 0 and 1 from epoch 1; b got 2 and 3 at epoch 2.
  EXPECT_EQ(member("a").assigned_partitions.at(t_).at(0), 2);
  EXPECT_EQ(member("b").assigned_partitions.at(t_).at(2), 3);
}

TEST_F(ConsumerGroupTest, NewTargetAtMostOncePerAssignmentInterval) {
  join("a", {"t"});
  now_ += 100;
  auto b = join("b", {"t"});
  // The group epoch moved but the target stays until the interval passes.
  EXPECT_EQ(group_.group_epoch(), 3);
  EXPECT_EQ(group_.assignment_epoch(), 2);
  EXPECT_EQ(group_.state_name(), "Assigning");
  EXPECT_EQ(b.message.member_epoch, 2);
  EXPECT_EQ(assignment_of(b), (partitions{}));
  now_ += 1000;
  auto a = heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});
  EXPECT_EQ(group_.assignment_epoch(), 3);
  EXPECT_EQ(assignment_of(a), (partitions{{t_, {0, 1}}}));
}

// The group's consumer.assignment.interval.ms (a group config) replaces the broker's
// group.consumer.assignment.interval.ms: 0 computes a target at every change, 3000 waits 3 s.
TEST_F(ConsumerGroupTest, GroupAssignmentIntervalReplacesTheBrokers) {
  group_configs_.set("g", {{"consumer.assignment.interval.ms", "0"}});
  join("a", {"t"});
  now_ += 100;
  auto b = join("b", {"t"});
  EXPECT_EQ(group_.assignment_epoch(), group_.group_epoch());
  EXPECT_EQ(b.message.member_epoch, 3);
  group_configs_.set("g", {{"consumer.assignment.interval.ms", "3000"}});
  now_ += 100;
  join("c", {"t"});
  EXPECT_EQ(group_.group_epoch(), 4);
  EXPECT_EQ(group_.assignment_epoch(), 3);
  now_ += 1500;  // past the broker's 1000 ms, not the group's 3000
  heartbeat("a", member("a").member_epoch);
  EXPECT_EQ(group_.assignment_epoch(), 3);
  now_ += 1500;
  heartbeat("a", member("a").member_epoch);
  EXPECT_EQ(group_.assignment_epoch(), 4);
}

// group.consumer.assignment.interval.ms changed at runtime reaches the group at its next
// heartbeat (the dynamic broker config; the static one stays 1000 here).
TEST_F(ConsumerGroupTest, DynamicBrokerAssignmentIntervalApplies) {
  group_configs_.set_assignment_interval_ms(0);
  join("a", {"t"});
  now_ += 100;
  join("b", {"t"});
  EXPECT_EQ(group_.assignment_epoch(), group_.group_epoch());
  group_configs_.set_assignment_interval_ms(std::nullopt);  // back to the static 1000 ms
  now_ += 100;
  join("c", {"t"});
  EXPECT_LT(group_.assignment_epoch(), group_.group_epoch());
}

// consumer.heartbeat.interval.ms goes back in every ConsumerGroupHeartbeat response, and
// consumer.session.timeout.ms fences a silent member: another group keeps the broker's values.
TEST_F(ConsumerGroupTest, GroupHeartbeatIntervalAndSessionTimeoutReplaceTheBrokers) {
  group_configs_.set(
      "g", {{"consumer.heartbeat.interval.ms", "8000"}, {"consumer.session.timeout.ms", "55000"}});
  EXPECT_EQ(join("a", {"t"}).message.heartbeat_interval_ms, 8000);
  now_ += 2000;
  join("b", {"t"});
  // b is silent for 50 s: past the broker's 45 s, within the group's 55 s.
  for (int i = 0; i < 10; ++i) {
    now_ += 5000;
    auto r = heartbeat("a", member("a").member_epoch, partitions{{t_, {0, 1}}});
    EXPECT_EQ(r.message.heartbeat_interval_ms, 8000);
    poll();
  }
  EXPECT_TRUE(group_.members().contains("b"));
  now_ += 6000;
  heartbeat("a", member("a").member_epoch, partitions{{t_, {0, 1}}});
  poll();
  EXPECT_FALSE(group_.members().contains("b"));
  // Deleting the group's configs: the broker's values at the next heartbeat.
  group_configs_.set("g", {});
  EXPECT_EQ(heartbeat("a", member("a").member_epoch, partitions{{t_, {0, 1}}})
                .message.heartbeat_interval_ms,
            5000);
  EXPECT_EQ(group_configs_.settings(config_, "other").session_timeout_ms, 45000);
}

TEST_F(ConsumerGroupTest, MemberThatMissesAResponseMayRetryWithThePreviousEpoch) {
  join("a", {"t"});
  now_ += 2000;
  join("b", {"t"});
  heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});
  heartbeat("a", 2, partitions{{t_, {0, 1}}});  // now at epoch 3, response lost
  auto a = heartbeat("a", 2, partitions{{t_, {0, 1}}});
  EXPECT_EQ(a.message.error_code, 0);
  EXPECT_EQ(a.message.member_epoch, 3);
  // Not with partitions it no longer has.
  a = heartbeat("a", 2, partitions{{t_, {0, 1, 2}}});
  EXPECT_EQ(a.message.error_code, static_cast<int16_t>(error_code::fenced_member_epoch));
}

TEST_F(ConsumerGroupTest, LeaveRemovesTheMemberWithTombstonesAndBumpsTheEpoch) {
  join("a", {"t"});
  now_ += 2000;
  join("b", {"t"});
  const size_t from = log_.size();
  auto r = heartbeat("b", -1);
  EXPECT_EQ(r.message.error_code, 0);
  EXPECT_EQ(r.message.member_id, "b");
  EXPECT_EQ(r.message.member_epoch, -1);
  EXPECT_FALSE(group_.members().contains("b"));
  EXPECT_EQ(group_.group_epoch(), 4);
  EXPECT_EQ(types(from),
            (std::vector<written_record>{{8, true}, {7, true}, {5, true}, {3, false}}));
  // a gets everything back at the next target.
  now_ += 2000;
  auto a = heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});
  EXPECT_EQ(a.message.member_epoch, 4);
  EXPECT_EQ(target_of("a"), (partitions{{t_, {0, 1, 2, 3}}}));
  // Leaving twice: the member is unknown.
  r = heartbeat("b", -1);
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::unknown_member_id));
  EXPECT_EQ(r.message.error_message, "Member b is not a member of group g.");
}

TEST_F(ConsumerGroupTest, SessionTimeoutFencesASilentMember) {
  join("a", {"t"});
  now_ += 2000;
  join("b", {"t"});
  for (int i = 0; i < 10; ++i) {
    now_ += 5000;
    heartbeat("a", member("a").member_epoch, partitions{{t_, {0, 1}}});
    poll();
  }
  // b has been silent for 50 s > group.consumer.session.timeout.ms.
  EXPECT_FALSE(group_.members().contains("b"));
  EXPECT_TRUE(group_.members().contains("a"));
  auto r = heartbeat("b", 3);
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::unknown_member_id));
}

TEST_F(ConsumerGroupTest, MemberThatDoesNotRevokeWithinItsRebalanceTimeoutIsFenced) {
  join("a", {"t"});
  now_ += 2000;
  join("b", {"t"});
  heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});  // must revoke 2 and 3 within 30 s
  ASSERT_EQ(member("a").state, member_state::unrevoked_partitions);
  for (int i = 0; i < 7; ++i) {
    now_ += 5000;
    heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});  // alive, but keeps them
    heartbeat("b", 3, partitions{});
    poll();
  }
  EXPECT_FALSE(group_.members().contains("a"));
}

TEST_F(ConsumerGroupTest, StaticMemberComesBackAsANewMemberWithItsPartitions) {
  join("s1", {"t"}, "instance-1");
  EXPECT_EQ(member("s1").instance_id, "instance-1");
  // A second process with the same instance id cannot join while the first is there.
  auto dup = join("s2", {"t"}, "instance-1");
  EXPECT_EQ(dup.message.error_code, static_cast<int16_t>(error_code::unreleased_instance_id));
  EXPECT_EQ(dup.message.error_message,
            "Static member s2 with instance id instance-1 cannot join the group because the "
            "instance id is owned by s1 member.");

  beat away;
  away.member_id = "s1";
  away.epoch = -2;
  away.instance_id = "instance-1";
  auto r = send(away);
  EXPECT_EQ(r.message.error_code, 0);
  EXPECT_EQ(r.message.member_epoch, -2);
  EXPECT_EQ(member("s1").member_epoch, -2);
  EXPECT_EQ(group_.group_epoch(), 2);  // no rebalance

  now_ += 10000;
  r = join("s2", {"t"}, "instance-1");
  EXPECT_EQ(r.message.error_code, 0);
  EXPECT_EQ(r.message.member_id, "s2");
  EXPECT_EQ(r.message.member_epoch, 2);
  EXPECT_EQ(assignment_of(r), (partitions{{t_, {0, 1, 2, 3}}}));
  EXPECT_EQ(group_.group_epoch(), 2);
  EXPECT_FALSE(group_.members().contains("s1"));
  EXPECT_EQ(target_of("s2"), (partitions{{t_, {0, 1, 2, 3}}}));

  // The old member id is fenced by the new one.
  beat stale;
  stale.member_id = "s1";
  stale.epoch = 2;
  stale.instance_id = "instance-1";
  r = send(stale);
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::fenced_instance_id));
  EXPECT_EQ(r.message.error_message,
            "Static member s1 with instance id instance-1 was fenced by member s2.");
}

TEST_F(ConsumerGroupTest, StaticMemberAwayTooLongIsFenced) {
  join("s1", {"t"}, "instance-1");
  beat away;
  away.member_id = "s1";
  away.epoch = -2;
  away.instance_id = "instance-1";
  send(away);
  now_ += 46000;
  poll();
  EXPECT_TRUE(group_.empty());
  EXPECT_EQ(group_.state_name(), "Empty");
}

// With an authorizer a regex resolves to the matching topics the heartbeating member may
// DESCRIBE, at its first resolution and at each refresh (Kafka's GroupMetadataManager).
TEST_F(ConsumerGroupTest, RegexSubscriptionOnlyResolvesToTopicsThePrincipalMayDescribe) {
  const auto o1 = metadata_.add("orders-1", 2);
  metadata_.add("orders-secret", 2);
  std::vector<std::string> asked;
  may_describe_ = [&](std::string_view t) {
    asked.emplace_back(t);
    return t != "orders-secret" && t != "orders-hidden";
  };
  beat b;
  b.member_id = "a";
  b.regex = "orders-.*";
  b.rebalance_timeout_ms = 30000;
  b.owned = partitions{};
  auto r = send(b);
  EXPECT_EQ(r.message.error_code, 0);
  EXPECT_EQ(assignment_of(r), (partitions{{o1, {0, 1}}}));
  EXPECT_EQ(group_.resolved_regexes().at("orders-.*").topics, (std::set<std::string>{"orders-1"}));
  EXPECT_EQ(asked, (std::vector<std::string>{"orders-1", "orders-secret"}))
      << "only matching topics are asked about";
  metadata_.add("orders-hidden", 1);
  const auto o2 = metadata_.add("orders-2", 1);
  now_ += 11000;
  r = heartbeat("a", 2, partitions{{o1, {0, 1}}});
  EXPECT_EQ(assignment_of(r), (partitions{{o1, {0, 1}}, {o2, {0}}}));
  EXPECT_EQ(group_.subscribed_topics(), (std::vector<std::string>{"orders-1", "orders-2"}));
}

TEST_F(ConsumerGroupTest, RegexSubscriptionFollowsTopicsAsTheyAppear) {
  const auto o1 = metadata_.add("orders-1", 2);
  metadata_.add("payments", 2);
  beat b;
  b.member_id = "a";
  b.regex = "orders-.*";
  b.rebalance_timeout_ms = 30000;
  b.owned = partitions{};
  auto r = send(b);
  EXPECT_EQ(r.message.error_code, 0);
  EXPECT_EQ(r.message.member_epoch, 2);
  EXPECT_EQ(assignment_of(r), (partitions{{o1, {0, 1}}}));
  ASSERT_TRUE(group_.resolved_regexes().contains("orders-.*"));
  EXPECT_EQ(group_.resolved_regexes().at("orders-.*").topics, (std::set<std::string>{"orders-1"}));

  // A new matching topic is picked up at a heartbeat once the 10 s refresh interval passed.
  const auto o2 = metadata_.add("orders-2", 1);
  now_ += 11000;
  r = heartbeat("a", 2, partitions{{o1, {0, 1}}});
  EXPECT_EQ(r.message.member_epoch, 3);
  EXPECT_EQ(assignment_of(r), (partitions{{o1, {0, 1}}, {o2, {0}}}));
  EXPECT_EQ(group_.subscribed_topics(), (std::vector<std::string>{"orders-1", "orders-2"}));

  // Leaving deletes the resolved regex with the member.
  const size_t from = log_.size();
  heartbeat("a", -1);
  EXPECT_EQ(types(from), (std::vector<written_record>{
                             {8, true}, {7, true}, {5, true}, {16, true}, {3, false}, {6, false}}));
  EXPECT_TRUE(group_.resolved_regexes().empty());
}

TEST_F(ConsumerGroupTest, RegexSyntaxAsRe2) {
  auto join_regex = [&](const std::string& id, const std::string& regex) {
    beat b;
    b.member_id = id;
    b.regex = regex;
    b.rebalance_timeout_ms = 30000;
    b.owned = partitions{};
    return send(b);
  };
  const auto o1 = metadata_.add("orders-1", 1);
  // RE2's leading (?i) is accepted.
  auto r = join_regex("a", "(?i)ORDERS-.*");
  EXPECT_EQ(r.message.error_code, 0);
  EXPECT_EQ(assignment_of(r), (partitions{{o1, {0}}}));
  // Lookaround and backreferences are not RE2: refused with RE2's words.
  r = join_regex("b", "(?=o)orders-.*");
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::invalid_regular_expression));
  EXPECT_EQ(r.message.error_message,
            "SubscribedTopicRegex `(?=o)orders-.*` is not a valid regular expression: invalid or "
            "unsupported Perl syntax.");
  r = join_regex("b", "(o)\\1");
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::invalid_regular_expression));
}

TEST_F(ConsumerGroupTest, InvalidRegexIsRefused) {
  beat b;
  b.member_id = "a";
  b.regex = "orders-(";
  b.rebalance_timeout_ms = 30000;
  b.owned = partitions{};
  auto r = send(b);
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::invalid_regular_expression));
  EXPECT_EQ(
      r.message.error_message,
      "SubscribedTopicRegex `orders-(` is not a valid regular expression: missing closing ).");
  EXPECT_TRUE(group_.pristine());
  EXPECT_TRUE(log_.empty());
}

TEST_F(ConsumerGroupTest, UnsubscribingRevokesAndMissingTopicsAreUnassigned) {
  const auto u = metadata_.add("u", 2);
  join("a", {"t", "u", "not-there"});
  EXPECT_EQ(member("a").assigned_partitions.size(), 2u);
  beat b;
  b.member_id = "a";
  b.epoch = 2;
  b.topics = std::vector<std::string>{"t"};
  b.owned = partitions{{t_, {0, 1, 2, 3}}, {u, {0, 1}}};
  auto r = send(b);
  // Dropped at once from its assignment, pending revocation until it reports them gone.
  EXPECT_EQ(assignment_of(r), (partitions{{t_, {0, 1, 2, 3}}}));
  EXPECT_EQ(member("a").state, member_state::unrevoked_partitions);
  now_ += 2000;  // the new target (without u) once the assignment interval passed
  r = heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});
  EXPECT_EQ(member("a").state, member_state::stable);
  EXPECT_EQ(r.message.member_epoch, 3);
}

TEST_F(ConsumerGroupTest, DeletedTopicIsDroppedAtTheNextHeartbeat) {
  const auto u = metadata_.add("u", 2);
  join("a", {"t", "u"});
  metadata_.remove("u");
  now_ += 2000;
  auto r = heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}, {u, {0, 1}}});
  EXPECT_EQ(group_.group_epoch(), 3);  // the metadata hash changed
  EXPECT_EQ(target_of("a"), (partitions{{t_, {0, 1, 2, 3}}}));
  EXPECT_EQ(assignment_of(r), (partitions{{t_, {0, 1, 2, 3}}}));
}

TEST_F(ConsumerGroupTest, ServerAssignorPicksRange) {
  const auto u = metadata_.add("u", 3);
  metadata_.remove("t");
  beat b;
  b.member_id = "b";
  b.topics = std::vector<std::string>{"u"};
  b.assignor = "range";
  b.rebalance_timeout_ms = 30000;
  b.owned = partitions{};
  send(b);
  now_ += 2000;
  b.member_id = "a";
  send(b);
  EXPECT_EQ(target_of("a"), (partitions{{u, {0, 1}}}));
  EXPECT_EQ(target_of("b"), (partitions{{u, {2}}}));
  protocol::consumer_group_describe_response::described_group d;
  message_arena arena;
  group_.describe(d, arena, 1, config_, metadata_);
  EXPECT_EQ(d.assignor_name, "range");
}

TEST_F(ConsumerGroupTest, RequestValidationAsKafka) {
  auto expect = [&](const beat& b, int16_t version, error_code code, std::string_view message) {
    auto r = send(b, version);
    EXPECT_EQ(r.message.error_code, static_cast<int16_t>(code)) << message;
    EXPECT_EQ(r.message.error_message.value_or(""), message);
  };
  beat b;
  b.rebalance_timeout_ms = 30000;
  b.topics = std::vector<std::string>{"t"};
  b.owned = partitions{};
  expect(b, 1, error_code::invalid_request, "MemberId can't be empty.");
  b.member_id = " ";
  expect(b, 1, error_code::invalid_request, "MemberId can't be empty.");
  b.member_id = "a";
  b.instance_id = "";
  expect(b, 1, error_code::invalid_request, "InstanceId can't be empty.");
  b.instance_id.reset();
  b.rebalance_timeout_ms = -1;
  expect(b, 1, error_code::invalid_request,
         "RebalanceTimeoutMs must be provided in first request.");
  b.rebalance_timeout_ms = 30000;
  b.owned = partitions{{t_, {0}}};
  expect(b, 1, error_code::invalid_request, "TopicPartitions must be empty when (re-)joining.");
  b.owned.reset();
  expect(b, 1, error_code::invalid_request, "TopicPartitions must be empty when (re-)joining.");
  b.owned = partitions{};
  b.topics.reset();
  expect(b, 1, error_code::invalid_request,
         "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.");
  b.topics = std::vector<std::string>{"t"};
  b.assignor = "sticky";
  expect(b, 1, error_code::unsupported_assignor,
         "ServerAssignor sticky is not supported. Supported assignors: uniform, range.");
  b.assignor.reset();
  b.epoch = -3;
  expect(b, 1, error_code::invalid_request, "MemberEpoch is invalid.");
  b.epoch = -2;
  expect(b, 1, error_code::invalid_request, "InstanceId can't be null.");
  EXPECT_TRUE(log_.empty());
  EXPECT_TRUE(group_.pristine());
}

TEST_F(ConsumerGroupTest, NotFoundWordsDependOnTheEpoch) {
  EXPECT_EQ(consumer_group::not_found_error("g", 5).message, "Consumer group g not found.");
  EXPECT_EQ(consumer_group::not_found_error("g", -1).message, "Group g not found.");
  EXPECT_EQ(consumer_group::not_found_error("g", -2).code, error_code::group_id_not_found);
}

TEST_F(ConsumerGroupTest, VersionZeroGeneratesTheMemberId) {
  beat b;
  b.rebalance_timeout_ms = 30000;
  b.topics = std::vector<std::string>{"t"};
  b.owned = partitions{};
  auto r = send(b, 0);
  EXPECT_EQ(r.message.error_code, 0);
  ASSERT_TRUE(r.message.member_id.has_value());
  EXPECT_EQ(r.message.member_id->size(), 22u);  // Kafka's Uuid.toString(): base64 of 16 bytes
  EXPECT_TRUE(group_.members().contains(std::string(*r.message.member_id)));
}

TEST_F(ConsumerGroupTest, EpochAndMembershipErrors) {
  auto r = heartbeat("nobody", 4);
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::unknown_member_id));
  EXPECT_EQ(r.message.error_message, "Member nobody is not a member of group g.");
  join("a", {"t"});
  r = heartbeat("a", 7);
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::fenced_member_epoch));
  EXPECT_EQ(r.message.error_message,
            "The consumer group member has a greater member epoch (7) than the one known by the "
            "group coordinator (2). The member must abandon all its partitions and rejoin.");
  // Joining again with epoch 0 under the same id is never fenced (KIP-1082; Kafka 4.4 skips the
  // epoch check at 0): the member keeps its epoch and gets its assignment.
  r = join("a", {"t"});
  EXPECT_EQ(r.message.error_code, 0);
  EXPECT_EQ(r.message.member_epoch, 2);
  EXPECT_EQ(assignment_of(r), (partitions{{t_, {0, 1, 2, 3}}}));
  now_ += 2000;
  join("b", {"t"});
  heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});
  heartbeat("a", 2, partitions{{t_, {0, 1}}});
  r = join("a", {"t"});
  EXPECT_EQ(r.message.error_code, 0);
  EXPECT_EQ(r.message.member_epoch, 3);
  EXPECT_EQ(assignment_of(r), (partitions{{t_, {0, 1}}}));
  // The previous epoch without the partitions it gave up is fenced.
  r = heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::fenced_member_epoch));

  beat s;
  s.member_id = "x";
  s.epoch = 3;
  s.instance_id = "nobody";
  r = send(s);
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::unknown_member_id));
  EXPECT_EQ(r.message.error_message, "Instance id nobody is unknown.");
}

TEST_F(ConsumerGroupTest, GroupMaxSize) {
  config_.group_consumer_max_size = 1;
  join("a", {"t"});
  auto r = join("b", {"t"});
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::group_max_size_reached));
  EXPECT_EQ(r.message.error_message,
            "The consumer group has reached its maximum capacity of 1 members.");
  EXPECT_EQ(heartbeat("a", 2).message.error_code, 0);  // members already in are fine
}

TEST_F(ConsumerGroupTest, FailedWriteChangesNothing) {
  join("a", {"t"});
  fail_with_ = error_code::kafka_storage_error;
  now_ += 2000;
  auto r = join("b", {"t"});
  EXPECT_EQ(r.message.error_code, static_cast<int16_t>(error_code::not_coordinator));
  EXPECT_FALSE(group_.members().contains("b"));
  EXPECT_EQ(group_.group_epoch(), 2);
  fail_with_ = error_code::none;
  EXPECT_EQ(join("b", {"t"}).message.error_code, 0);
}

TEST_F(ConsumerGroupTest, DescribeAsKafka) {
  join("a", {"t"});
  now_ += 2000;
  join("b", {"t"});
  heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});
  protocol::consumer_group_describe_response::described_group d;
  message_arena arena;
  group_.describe(d, arena, 1, config_, metadata_);
  EXPECT_EQ(d.group_id, "g");
  EXPECT_EQ(d.group_state, "Reconciling");
  EXPECT_EQ(d.group_epoch, 3);
  EXPECT_EQ(d.assignment_epoch, 3);
  EXPECT_EQ(d.assignor_name, "uniform");
  ASSERT_EQ(d.members.size(), 2u);
  const auto& a = d.members[0];
  EXPECT_EQ(a.member_id, "a");
  EXPECT_EQ(a.member_epoch, 2);
  EXPECT_EQ(a.client_id, "client-a");
  EXPECT_EQ(a.client_host, "/127.0.0.1");
  EXPECT_EQ(a.subscribed_topic_names, (std::vector<std::string_view>{"t"}));
  EXPECT_EQ(a.subscribed_topic_regex, "");  // Kafka describes no regex as ""
  EXPECT_EQ(a.member_type, 1);
  // Current assignment: what it still owns (assigned and pending revocation); target: its half.
  ASSERT_EQ(a.assignment.topic_partitions.size(), 1u);
  EXPECT_EQ(a.assignment.topic_partitions[0].topic_name, "t");
  EXPECT_EQ(a.assignment.topic_partitions[0].partitions, (std::vector<int32_t>{0, 1, 2, 3}));
  ASSERT_EQ(a.target_assignment.topic_partitions.size(), 1u);
  EXPECT_EQ(a.target_assignment.topic_partitions[0].partitions, (std::vector<int32_t>{0, 1}));
}

TEST_F(ConsumerGroupTest, OffsetCommitAndFetchValidation) {
  EXPECT_FALSE(group_.validate_offset_commit("", std::nullopt, -1, false, 9).error);
  join("a", {"t"});
  now_ += 2000;
  join("b", {"t"});
  heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});
  heartbeat("a", 2, partitions{{t_, {0, 1}}});  // a: epoch 3, 0 and 1 since epoch 2

  EXPECT_FALSE(group_.validate_offset_commit("a", std::nullopt, 3, false, 9).error);
  auto c = group_.validate_offset_commit("a", std::nullopt, 4, false, 9);
  EXPECT_EQ(c.error.code, error_code::stale_member_epoch);
  EXPECT_EQ(c.error.message, "Received member epoch 4 is newer than current member epoch 3.");
  c = group_.validate_offset_commit("zz", std::nullopt, 3, false, 9);
  EXPECT_EQ(c.error.code, error_code::unknown_member_id);
  c = group_.validate_offset_commit("a", std::nullopt, 3, false, 8);
  EXPECT_EQ(c.error.code, error_code::unsupported_version);
  // An older epoch (KIP-1251): per partition.
  c = group_.validate_offset_commit("a", std::nullopt, 2, false, 9);
  EXPECT_FALSE(c.error);
  EXPECT_TRUE(c.check_partitions);
  EXPECT_FALSE(group_.validate_offset_commit_partition("a", 2, "t", t_, 0));
  auto e = group_.validate_offset_commit_partition("a", 2, "t", t_, 2);
  EXPECT_EQ(e.code, error_code::stale_member_epoch);
  EXPECT_EQ(e.message, "Partition t-2 is not assigned or pending revocation for member.");
  heartbeat("b", 3, partitions{});  // b: 2 and 3 at epoch 3
  e = group_.validate_offset_commit_partition("b", 2, "t", t_, 2);
  EXPECT_EQ(e.message,
            "Received member epoch 2 is older than assignment epoch 3 for partition t-2.");
  EXPECT_EQ(group_.validate_offset_commit("a", 2), error_code::stale_member_epoch);
  EXPECT_EQ(group_.validate_offset_commit("a", 3), error_code::none);

  EXPECT_FALSE(group_.validate_offset_fetch(std::nullopt, -1));
  EXPECT_FALSE(group_.validate_offset_fetch("a", 3));
  auto f = group_.validate_offset_fetch("a", 2);
  EXPECT_EQ(f.code, error_code::stale_member_epoch);
  EXPECT_EQ(f.message, "The received member epoch 2 does not match the expected member epoch 3.");
  EXPECT_EQ(group_.validate_offset_fetch("zz", 2).code, error_code::unknown_member_id);
}

TEST_F(ConsumerGroupTest, DeleteOnlyWhenEmpty) {
  join("a", {"t"});
  EXPECT_EQ(group_.validate_delete().code, error_code::non_empty_group);
  heartbeat("a", -1);
  EXPECT_FALSE(group_.validate_delete());
  std::vector<coordinator_record> records;
  group_.delete_records(records);
  for (auto& r : records) log_.push_back(std::move(r));
  auto g = replayed();
  EXPECT_TRUE(g.dead());
  EXPECT_EQ(g.state_name(), "Dead");
}

TEST_F(ConsumerGroupTest, ReplayOfTheWrittenRecordsRebuildsTheGroup) {
  const auto o1 = metadata_.add("orders-1", 3);
  join("a", {"t"});
  now_ += 2000;
  join("s1", {"t"}, "instance-1");
  heartbeat("a", 2, partitions{{t_, {0, 1, 2, 3}}});
  beat b;
  b.member_id = "r";
  b.regex = "orders-.*";
  b.rebalance_timeout_ms = 30000;
  b.owned = partitions{};
  now_ += 2000;
  send(b);
  beat away;
  away.member_id = "s1";
  away.epoch = -2;
  away.instance_id = "instance-1";
  send(away);
  now_ += 2000;
  join("s2", {"t"}, "instance-1");
  heartbeat("r", member("r").member_epoch, partitions{{o1, {0, 1, 2}}});
  ASSERT_GE(group_.members().size(), 3u);

  consumer_group g = replayed();
  EXPECT_TRUE(g.same_state(group_));
  EXPECT_EQ(g.state_name(), group_.state_name());
  EXPECT_EQ(g.members(), group_.members());
  EXPECT_EQ(g.target_assignment(), group_.target_assignment());
  EXPECT_FALSE(g.pristine());

  // The replayed group carries on: a member heartbeats into it.
  consumer_group& live = group_;
  std::swap(live, g);
  auto r = heartbeat("a", member("a").member_epoch, partitions{{t_, {0, 1}}});
  EXPECT_EQ(r.message.error_code, 0);
}

TEST_F(ConsumerGroupTest, RecordsOfAnotherGroupOrGarbageAreRejected) {
  join("a", {"t"});
  consumer_group other("other");
  protocol::reader rd(log_[0].key);
  const int16_t type = rd.read_int16();
  EXPECT_FALSE(other.replay(type, log_[0].key, std::span<const uint8_t>(*log_[0].value)));
  const std::vector<uint8_t> garbage{0, 5, 1};
  EXPECT_FALSE(other.replay(5, garbage, std::nullopt));
  EXPECT_TRUE(other.pristine());
}

TEST_F(ConsumerGroupTest, LoadedMembersGetAFreshSession) {
  join("a", {"t"});
  consumer_group g = replayed();
  std::swap(group_, g);
  now_ += 40000;
  poll();  // the session starts at the first poll after the load
  now_ += 40000;
  poll();
  EXPECT_TRUE(group_.members().contains("a"));
  now_ += 10000;
  poll();
  EXPECT_FALSE(group_.members().contains("a"));
}

}  // namespace
}  // namespace tarn::coordinator
