// tarn's share consumer library (include/tarn/share_consumer.h) against the real `tarn serve`,
// and against Apache Kafka 4.4.0 (the reference half: the same scenarios, release tree only):
//   - three share consumers of one group on a one-partition topic get disjoint records and
//     together every record once, acknowledging implicitly;
//   - explicit RELEASE: the record comes back with delivery count 2; ACCEPT then finishes it;
//   - explicit REJECT: the record never comes back, even after the acquisition lock has passed.
// Plus the client's own refusals: acknowledge() in implicit mode, a poll() in explicit mode with
// records of the last one unacknowledged.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "client/config_admin.h"
#include "kafka_ref_broker.h"
#include "tarn/producer.h"
#include "tarn/share_consumer.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using client::acknowledge_type;
using client::share_consumer;

constexpr int lock_ms = 1000;

// group.share.assignment.interval.ms=0: each member gets its partition at its join. With
// KIP-1263's default 1 s a consumer joining just after the first gets nothing until its next
// heartbeat, 5 s on, and by then the first has read every record (Kafka's offloaded assignor
// hides this there: even the first member gets its partitions at its second heartbeat).
std::vector<std::string> share_settings() {
  return {"group.share.min.record.lock.duration.ms=" + std::to_string(lock_ms),
          "group.share.record.lock.duration.ms=" + std::to_string(lock_ms),
          "group.share.assignment.interval.ms=0"};
}

class share_consumer_lib : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (auto skip = start_test_broker(GetParam(), share_settings(), tarn_, port_); !skip.empty()) {
      GTEST_SKIP() << skip;
    }
    ASSERT_NE(port_, 0);
    prefix_ = test_name_prefix() + std::to_string(::getpid()) + "-";
  }

  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string name(const std::string& what) const { return prefix_ + what; }

  // A one-partition topic holding `count` records ("value-0", ...), in batches of a record or
  // two: Kafka 4.4 acquires whole batches (ShareAcquireMode batch-optimized), so one batch of
  // all the records would go to one consumer, past max.poll.records, its locks running out in
  // the consumer's buffer while the round-robin polls below hand it out ten at a time.
  void make_topic(const std::string& topic, int count) {
    const std::string command = "timeout 60 " + std::string(TARN_BINARY) +
                                " topics --bootstrap-server " + bootstrap() + " --create --topic " +
                                topic + " --partitions 1 --replication-factor 1";
    auto [rc, out] = run_command(command);
    ASSERT_EQ(rc, 0) << command << ": " << out;
    auto p = client::producer::create(
        {{"bootstrap.servers", bootstrap()}, {"linger.ms", "5"}, {"batch.size", "200"}});
    ASSERT_TRUE(p) << p.error().message;
    std::vector<std::string> values;
    for (int i = 0; i < count; ++i) values.push_back("value-" + std::to_string(i));
    for (const auto& v : values) {
      client::producer_record r;
      r.topic = topic;
      r.partition = 0;
      r.value = v;
      (*p)->send(r);
    }
    (*p)->flush();
    (*p)->close();
  }

  // share.auto.offset.reset=earliest for the group, so it reads what is there already, and the
  // group's own acquisition lock when given.
  void read_from_start(const std::string& group, std::optional<int> group_lock_ms = {}) {
    auto admin = client::config_admin::connect(bootstrap());
    ASSERT_TRUE(admin) << admin.error().message;
    std::vector<client::config_change> changes = {
        {"share.auto.offset.reset", client::config_op::set, std::string("earliest")}};
    if (group_lock_ms) {
      changes.push_back({"share.record.lock.duration.ms", client::config_op::set,
                         std::to_string(*group_lock_ms)});
    }
    auto set = (*admin)->alter_configs(client::config_resource_type::group, group, changes);
    ASSERT_TRUE(set) << set.error().message;
  }

  std::unique_ptr<share_consumer> make(const std::string& group, const std::string& topic,
                                       const std::string& mode, int max_poll_records) {
    auto c = share_consumer::create({{"bootstrap.servers", bootstrap()},
                                     {"group.id", group},
                                     {"share.acknowledgement.mode", mode},
                                     {"max.poll.records", std::to_string(max_poll_records)},
                                     {"fetch.max.wait.ms", "100"}});
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    if (!c) return nullptr;
    (*c)->subscribe({topic});
    return std::move(*c);
  }

  // Polls until a record comes (or `limit` passes).
  std::vector<client::consumer_record> poll_some(share_consumer& c,
                                                 std::chrono::milliseconds limit = 8s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      auto r = c.poll(200ms);
      EXPECT_TRUE(r) << (r ? "" : r.error().message);
      if (!r) return {};
      if (!r->empty()) return std::move(*r);
    }
    return {};
  }

  std::unique_ptr<broker_process> tarn_;
  uint16_t port_ = 0;
  std::string prefix_;
};

TEST_P(share_consumer_lib, three_consumers_get_disjoint_records_and_every_record_once) {
  const std::string topic = name("three");
  const std::string group = name("three-group");
  constexpr int records = 300;
  make_topic(topic, records);
  // A lock longer than the broker's 1 s: on the loaded 2-core machine the first records' locks
  // ran out before the next poll's acknowledgement reached a fresh broker (1 run in 2, always
  // the group's first acquisition, offsets 0-9: INVALID_RECORD_STATE, then redelivered to
  // another consumer, as they should be), which this scenario is not about.
  read_from_start(group, 15000);
  std::vector<std::unique_ptr<share_consumer>> consumers;
  for (int i = 0; i < 3; ++i) {
    consumers.push_back(make(group, topic, "implicit", 10));
    ASSERT_NE(consumers.back(), nullptr);
  }
  std::vector<std::set<int64_t>> got(3);
  std::map<int64_t, int> times;
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (static_cast<int>(times.size()) < records && std::chrono::steady_clock::now() < until) {
    for (size_t i = 0; i < consumers.size(); ++i) {
      auto r = consumers[i]->poll(50ms);
      ASSERT_TRUE(r) << r.error().message;
      for (const auto& rec : *r) {
        EXPECT_EQ(rec.value, "value-" + std::to_string(rec.offset));
        ASSERT_TRUE(rec.delivery_count.has_value());
        got[i].insert(rec.offset);
        ++times[rec.offset];
      }
    }
  }
  for (auto& c : consumers) EXPECT_TRUE(c->close());
  EXPECT_EQ(static_cast<int>(times.size()), records);
  for (const auto& [offset, n] : times) EXPECT_EQ(n, 1) << "offset " << offset;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_FALSE(got[i].empty()) << "consumer " << i << " got nothing";
    for (size_t j = i + 1; j < got.size(); ++j) {
      for (int64_t o : got[i]) EXPECT_FALSE(got[j].count(o)) << o << " went to two consumers";
    }
  }
}

TEST_P(share_consumer_lib, explicit_release_redelivers_with_delivery_count_two) {
  const std::string topic = name("release");
  const std::string group = name("release-group");
  make_topic(topic, 1);
  read_from_start(group);
  auto c = make(group, topic, "explicit", 1);
  ASSERT_NE(c, nullptr);
  auto first = poll_some(*c);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].offset, 0);
  EXPECT_EQ(first[0].delivery_count, std::optional<int16_t>(1));
  // Explicit mode: poll() refuses while the record is not acknowledged.
  EXPECT_FALSE(c->poll(10ms));
  ASSERT_TRUE(c->acknowledge(first[0], acknowledge_type::release));
  auto second = poll_some(*c);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].offset, 0);
  EXPECT_EQ(second[0].delivery_count, std::optional<int16_t>(2));
  ASSERT_TRUE(c->acknowledge(second[0], acknowledge_type::accept));
  auto committed = c->commit_sync();
  ASSERT_TRUE(committed) << committed.error().message;
  ASSERT_EQ(committed->size(), 1u);
  EXPECT_FALSE(committed->begin()->second.has_value()) << committed->begin()->second->message;
  EXPECT_TRUE(poll_some(*c, 1500ms).empty()) << "an accepted record came back";
  EXPECT_TRUE(c->close());
}

TEST_P(share_consumer_lib, explicit_reject_is_never_redelivered) {
  const std::string topic = name("reject");
  const std::string group = name("reject-group");
  make_topic(topic, 2);
  // The group's lock: 2 s, longer than the broker's 1 s for the same reason as above, short
  // enough to wait past it.
  constexpr int reject_lock_ms = 2 * lock_ms;
  read_from_start(group, reject_lock_ms);
  std::vector<std::pair<client::topic_partition, std::optional<client::consumer_error>>> outcomes;
  auto c = make(group, topic, "explicit", 10);
  ASSERT_NE(c, nullptr);
  c->set_acknowledgement_commit_callback(
      [&](const client::topic_partition& tp, const std::vector<int64_t>&,
          const std::optional<client::consumer_error>& e) { outcomes.emplace_back(tp, e); });
  std::vector<client::consumer_record> got;
  const auto until = std::chrono::steady_clock::now() + 8s;
  while (got.size() < 2 && std::chrono::steady_clock::now() < until) {
    for (auto& r : poll_some(*c, 1s)) {
      ASSERT_TRUE(
          c->acknowledge(r, r.offset == 0 ? acknowledge_type::reject : acknowledge_type::accept));
      got.push_back(std::move(r));
    }
  }
  ASSERT_EQ(got.size(), 2u);
  // Past the acquisition lock: a rejected record is archived, never handed out again.
  EXPECT_TRUE(poll_some(*c, std::chrono::milliseconds(reject_lock_ms + 500)).empty());
  EXPECT_TRUE(c->close());
  ASSERT_FALSE(outcomes.empty());
  for (const auto& [tp, e] : outcomes) EXPECT_FALSE(e.has_value()) << e->message;
  // Another member of the group gets nothing either.
  auto other = make(group, topic, "implicit", 10);
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(poll_some(*other, 1500ms).empty());
  EXPECT_FALSE(other->acknowledge(topic, 0, 0, acknowledge_type::accept))
      << "implicit mode takes no acknowledge()";
  EXPECT_TRUE(other->close());
}

INSTANTIATE_TEST_SUITE_P(brokers, share_consumer_lib,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

}  // namespace
}  // namespace tarn::test
