// The share-state RPCs (InitializeShareGroupState 83, ReadShareGroupState 84, WriteShareGroupState
// 85, DeleteShareGroupState 86, ReadShareGroupStateSummary 87; docs/share-groups.md) by
// hand-built requests against the real broker: ApiVersions lists them at Kafka 4.4's versions;
// Initialize then Read gives the initialized state; Write merges batches and the broker's own
// share-partition takes the state (DescribeShareGroupOffsets); stale state and leader epochs are
// fenced; hostile input (unknown topic, out-of-range and negative partitions, an uninitialized
// share-partition, an empty group id, overlapping, reversed and huge batches, repeated
// partitions, many partitions) gets Kafka's answers and the broker stays up; Delete then Read;
// ReadShareGroupStateSummary; a SIGKILL and a restart keep what was written and the fences. The
// same requests against Apache Kafka 4.4.0 give the same answers (`make interop` only).
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <thread>

#include "base/uuid.h"
#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/delete_share_group_state_request.h"
#include "protocol/messages/delete_share_group_state_response.h"
#include "protocol/messages/describe_share_group_offsets_request.h"
#include "protocol/messages/describe_share_group_offsets_response.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "protocol/messages/initialize_share_group_state_request.h"
#include "protocol/messages/initialize_share_group_state_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "protocol/messages/read_share_group_state_request.h"
#include "protocol/messages/read_share_group_state_response.h"
#include "protocol/messages/read_share_group_state_summary_request.h"
#include "protocol/messages/read_share_group_state_summary_response.h"
#include "protocol/messages/write_share_group_state_request.h"
#include "protocol/messages/write_share_group_state_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using protocol::code;
using protocol::error_code;
using namespace std::chrono_literals;

const std::vector<std::string> broker_args = {"--override", "offsets.topic.num.partitions=1",
                                              "--override",
                                              "share.coordinator.state.topic.num.partitions=1"};

constexpr int8_t available = 0;
constexpr int8_t acknowledged = 2;
constexpr int8_t archived = 4;

struct batch {
  int64_t first = 0;
  int64_t last = 0;
  int8_t state = 0;
  int16_t count = 0;
  bool operator==(const batch&) const = default;
};

// The share-state RPCs of group `group` on one connection.
class state_client {
 public:
  explicit state_client(uint16_t port) : conn_(port, nullptr) {}
  kafka_conn& conn() { return conn_; }

  protocol::uuid topic_id(std::string_view name) {
    protocol::metadata_request r;
    r.topics.emplace();
    r.topics->emplace_back().name = name;
    auto got = conn_.call<protocol::metadata_response>(r, 12);
    if (!got || got->topics.empty()) return {};
    return got->topics[0].topic_id;
  }

  // (error code, error message) of one share-partition.
  std::pair<int16_t, std::string> initialize(std::string_view group, const protocol::uuid& topic,
                                             int32_t partition, int32_t state_epoch,
                                             int64_t start) {
    protocol::initialize_share_group_state_request r;
    r.group_id = group;
    auto& t = r.topics.emplace_back();
    t.topic_id = topic;
    t.partitions.push_back({partition, state_epoch, start});
    auto got = conn_.call<protocol::initialize_share_group_state_response>(r, 0);
    return first_result(got);
  }

  struct read_answer {
    int16_t error = -1;
    std::string message;
    int32_t state_epoch = -1;
    int64_t start_offset = -2;
    std::vector<batch> batches;
  };
  read_answer read(std::string_view group, const protocol::uuid& topic, int32_t partition,
                   int32_t leader_epoch) {
    protocol::read_share_group_state_request r;
    r.group_id = group;
    auto& t = r.topics.emplace_back();
    t.topic_id = topic;
    t.partitions.push_back({partition, leader_epoch});
    auto got = conn_.call<protocol::read_share_group_state_response>(r, 0);
    read_answer out;
    if (!got || got->results.size() != 1 || got->results[0].partitions.size() != 1) return out;
    const auto& p = got->results[0].partitions[0];
    out.error = p.error_code;
    out.message = std::string(p.error_message.value_or(""));
    out.state_epoch = p.state_epoch;
    out.start_offset = p.start_offset;
    for (const auto& b : p.state_batches) {
      out.batches.push_back({b.first_offset, b.last_offset, b.delivery_state, b.delivery_count});
    }
    return out;
  }

  std::pair<int16_t, std::string> write(std::string_view group, const protocol::uuid& topic,
                                        int32_t partition, int32_t state_epoch,
                                        int32_t leader_epoch, int64_t start,
                                        const std::vector<batch>& batches, int16_t version = 1) {
    protocol::write_share_group_state_request r;
    r.group_id = group;
    auto& t = r.topics.emplace_back();
    t.topic_id = topic;
    auto& p = t.partitions.emplace_back();
    p.partition = partition;
    p.state_epoch = state_epoch;
    p.leader_epoch = leader_epoch;
    p.start_offset = start;
    for (const auto& b : batches) p.state_batches.push_back({b.first, b.last, b.state, b.count});
    auto got = conn_.call<protocol::write_share_group_state_response>(r, version);
    return first_result(got);
  }

  std::pair<int16_t, std::string> remove(std::string_view group, const protocol::uuid& topic,
                                         int32_t partition) {
    protocol::delete_share_group_state_request r;
    r.group_id = group;
    auto& t = r.topics.emplace_back();
    t.topic_id = topic;
    t.partitions.push_back({partition});
    auto got = conn_.call<protocol::delete_share_group_state_response>(r, 0);
    return first_result(got);
  }

  // SPSO the broker's share-partition announces (DescribeShareGroupOffsets), -1 without one.
  int64_t described_start(std::string_view group) {
    protocol::describe_share_group_offsets_request r;
    r.groups.emplace_back().group_id = group;
    auto got = conn_.call<protocol::describe_share_group_offsets_response>(r, 1);
    if (!got || got->groups.empty() || got->groups[0].topics.empty()) return -1;
    return got->groups[0].topics[0].partitions.at(0).start_offset;
  }

 private:
  template <class Reply>
  static std::pair<int16_t, std::string> first_result(const Reply& got) {
    if (!got || got->results.size() != 1 || got->results[0].partitions.size() != 1) {
      return {-1, "no single result"};
    }
    const auto& p = got->results[0].partitions[0];
    return {p.error_code, std::string(p.error_message.value_or(""))};
  }

  kafka_conn conn_;
};

TEST(share_state_rpc, apis_fencing_hostile_input_and_a_restart) {
  temp_dir dir;
  const std::filesystem::path data = dir.path() / "data";
  protocol::uuid q;
  std::vector<batch> written;
  {
    broker_process broker(broker_args, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    ASSERT_EQ(create_topic(broker.port(), "q", 2), 0);
    state_client c(broker.port());

    // ApiVersions lists them at the versions a Kafka 4.4 broker listener lists.
    {
      protocol::api_versions_request r;
      auto got = c.conn().call<protocol::api_versions_response>(r, 2);
      ASSERT_TRUE(got);
      ASSERT_EQ(got->error_code, 0);
      std::map<int16_t, std::pair<int16_t, int16_t>> versions;
      for (const auto& k : got->api_keys) versions[k.api_key] = {k.min_version, k.max_version};
      ASSERT_TRUE(versions.contains(83) && versions.contains(84) && versions.contains(86));
      EXPECT_EQ(versions[83], (std::pair<int16_t, int16_t>{0, 0}));
      EXPECT_EQ(versions[84], (std::pair<int16_t, int16_t>{0, 0}));
      EXPECT_EQ(versions[85], (std::pair<int16_t, int16_t>{0, 1}));
      EXPECT_EQ(versions[86], (std::pair<int16_t, int16_t>{0, 0}));
      EXPECT_EQ(versions[87], (std::pair<int16_t, int16_t>{0, 1}));
    }

    q = c.topic_id("q");
    ASSERT_FALSE(q.is_zero());
    // Initialize then Read: the initialized state.
    EXPECT_EQ(c.initialize("g", q, 0, 1, 0).first, code(error_code::none));
    auto r = c.read("g", q, 0, 1);
    EXPECT_EQ(r.error, code(error_code::none)) << r.message;
    EXPECT_EQ(r.state_epoch, 1);
    EXPECT_EQ(r.start_offset, 0);
    EXPECT_TRUE(r.batches.empty());

    // Write, with overlapping batches (merged) and a reversed one (dropped).
    EXPECT_EQ(c.write("g", q, 0, 1, 1, 3,
                      {{3, 9, available, 1}, {3, 5, acknowledged, 1}, {9, 2, archived, 1}})
                  .first,
              code(error_code::none));
    written = {{3, 5, acknowledged, 1}, {6, 9, available, 1}};
    r = c.read("g", q, 0, 1);
    EXPECT_EQ(r.start_offset, 3);
    EXPECT_EQ(r.batches, written);
    // The broker's own share-partition took it: 3-5 finished, so its SPSO is 6.
    EXPECT_EQ(c.described_start("g"), 6);

    // Stale epochs: a state epoch below the recorded one; a new leader (epoch 2) reads, then
    // the old leader's write is fenced (the leader epoch is checked first).
    auto w = c.write("g", q, 0, 0, 1, 3, {});
    EXPECT_EQ(w.first, code(error_code::fenced_state_epoch)) << w.second;
    EXPECT_EQ(c.read("g", q, 0, 2).error, code(error_code::none));
    w = c.write("g", q, 0, 0, 1, 3, {});
    EXPECT_EQ(w.first, code(error_code::fenced_leader_epoch)) << w.second;
    EXPECT_EQ(w.second, protocol::describe(error_code::fenced_leader_epoch).message);
    EXPECT_EQ(c.read("g", q, 0, 1).error, code(error_code::fenced_leader_epoch));

    // Hostile input: Kafka's codes, and the broker answers on.
    protocol::uuid nobody{};
    nobody.bytes[5] = 7;
    EXPECT_EQ(c.initialize("g", nobody, 0, 0, 0).first,
              code(error_code::unknown_topic_or_partition));
    EXPECT_EQ(c.initialize("g", q, 2, 0, 0).first, code(error_code::unknown_topic_or_partition));
    EXPECT_EQ(c.initialize("g", q, -1, 0, 0),
              (std::pair<int16_t, std::string>{code(error_code::invalid_request),
                                               "The partition id cannot be a negative number."}));
    EXPECT_EQ(c.write("other", q, 0, 0, 0, 0, {}),
              (std::pair<int16_t, std::string>{
                  code(error_code::invalid_request),
                  "Write operation on uninitialized share partition not allowed."}));
    EXPECT_EQ(c.write("g", q, 0, -1, 2, 0, {}).second,
              "The state epoch cannot be a negative number.");
    {
      // An empty group id: an empty answer (Kafka's ShareCoordinatorService).
      protocol::read_share_group_state_request rr;
      rr.group_id = "";
      rr.topics.emplace_back().topic_id = q;
      rr.topics[0].partitions.push_back({0, 0});
      auto got = c.conn().call<protocol::read_share_group_state_response>(rr, 0);
      ASSERT_TRUE(got);
      EXPECT_TRUE(got->results.empty());
    }
    {
      // 20,000 partitions of a topic nobody has, partition 0 of q twice: one answer a partition.
      protocol::read_share_group_state_summary_request rr;
      rr.group_id = "g";
      auto& t = rr.topics.emplace_back();
      t.topic_id = nobody;
      for (int32_t i = 0; i < 20000; ++i) t.partitions.push_back({i, 0});
      auto& t2 = rr.topics.emplace_back();
      t2.topic_id = q;
      t2.partitions.push_back({0, 0});
      t2.partitions.push_back({0, 0});
      auto got = c.conn().call<protocol::read_share_group_state_summary_response>(rr, 1);
      ASSERT_TRUE(got);
      ASSERT_EQ(got->results.size(), 2u);
      EXPECT_EQ(got->results[0].partitions.size(), 20000u);
      EXPECT_EQ(got->results[0].partitions[19999].error_code,
                code(error_code::unknown_topic_or_partition));
      ASSERT_EQ(got->results[1].partitions.size(), 1u);
      const auto& s = got->results[1].partitions[0];
      EXPECT_EQ(s.error_code, code(error_code::none));
      EXPECT_EQ(s.state_epoch, 1);
      EXPECT_EQ(s.leader_epoch, 2);
      EXPECT_EQ(s.start_offset, 3);
    }
    // A batch spanning 2^40 offsets on partition 1: written as it is (a few bytes); the broker's
    // share-partition holds at most 2^20 of them in memory.
    ASSERT_EQ(c.initialize("g", q, 1, 0, 0).first, code(error_code::none));
    EXPECT_EQ(c.write("g", q, 1, 0, 0, 0, {{0, int64_t{1} << 40, archived, 1}}).first,
              code(error_code::none));
    // Delete then Read: no state.
    EXPECT_EQ(c.remove("g", q, 1).first, code(error_code::none));
    auto gone = c.read("g", q, 1, 0);
    EXPECT_EQ(gone.error, code(error_code::invalid_request));
    EXPECT_EQ(gone.message, "Read operation on uninitialized share partition not allowed.");
    EXPECT_EQ(c.remove("g", q, 1).first, code(error_code::none));  // nothing to delete: NONE

    broker.process().send_signal(SIGKILL);
    ASSERT_TRUE(broker.process().wait_exit(10s).has_value());
  }
  broker_process broker(broker_args, data);
  ASSERT_NE(broker.port(), 0) << broker.output();
  state_client c(broker.port());
  auto r = c.read("g", q, 0, 2);
  EXPECT_EQ(r.error, code(error_code::none)) << r.message;
  EXPECT_EQ(r.state_epoch, 1);
  EXPECT_EQ(r.start_offset, 3);
  EXPECT_EQ(r.batches, written);
  EXPECT_EQ(c.write("g", q, 0, 1, 1, 3, {}).first, code(error_code::fenced_leader_epoch));
  EXPECT_EQ(c.read("g", q, 1, 0).error, code(error_code::invalid_request));
  EXPECT_EQ(c.described_start("g"), 6);
}

// One run of requests for the comparison with Kafka: a line per answer.
std::vector<std::string> answers_of(state_client& c, const protocol::uuid& q) {
  std::vector<std::string> out;
  auto line = [&out](const std::string& what, const std::pair<int16_t, std::string>& r) {
    out.push_back(what + ": " + std::to_string(r.first) + " " + r.second);
  };
  auto read_line = [&](const std::string& what, int32_t partition, int32_t leader_epoch) {
    auto r = c.read("g", q, partition, leader_epoch);
    std::string text = what + ": " + std::to_string(r.error) + " " + r.message + " epoch " +
                       std::to_string(r.state_epoch) + " start " + std::to_string(r.start_offset);
    for (const auto& b : r.batches) {
      text += " [" + std::to_string(b.first) + "-" + std::to_string(b.last) + " " +
              std::to_string(b.state) + " " + std::to_string(b.count) + "]";
    }
    out.push_back(text);
  };
  read_line("read before", 0, 1);
  line("initialize", c.initialize("g", q, 0, 1, 0));
  read_line("read", 0, 1);
  line("write", c.write("g", q, 0, 1, 1, 3, {{3, 9, available, 1}, {3, 5, acknowledged, 1}}));
  read_line("read written", 0, 1);
  // Kafka's combiner: the higher delivery count wins, then the higher state, whatever the order.
  line("write counts", c.write("g", q, 0, 1, 1, 3, {{6, 7, available, 3}, {3, 4, available, 1}}));
  line("write lower", c.write("g", q, 0, 1, 1, 3, {{6, 9, archived, 1}}));
  read_line("read merged", 0, 1);
  line("stale state epoch", c.write("g", q, 0, 0, 1, 3, {}));
  read_line("new leader", 0, 2);
  line("stale leader epoch", c.write("g", q, 0, 1, 1, 3, {}));
  read_line("stale leader read", 0, 1);
  line("partition past the count", c.initialize("g", q, 2, 0, 0));
  line("negative partition", c.initialize("g", q, -1, 0, 0));
  line("negative state epoch", c.write("g", q, 0, -1, 2, 0, {}));
  line("uninitialized", c.write("other", q, 0, 0, 0, 0, {}));
  line("delete without state", c.remove("g", q, 1));
  read_line("read without state", 1, 0);
  protocol::read_share_group_state_summary_request sr;
  sr.group_id = "g";
  auto& t = sr.topics.emplace_back();
  t.topic_id = q;
  t.partitions.push_back({0, 0});
  t.partitions.push_back({1, 0});
  auto got = c.conn().call<protocol::read_share_group_state_summary_response>(sr, 1);
  if (got && got->results.size() == 1) {
    for (const auto& p : got->results[0].partitions) {
      out.push_back("summary " + std::to_string(p.partition) + ": " + std::to_string(p.error_code) +
                    " epochs " + std::to_string(p.state_epoch) + "/" +
                    std::to_string(p.leader_epoch) + " start " + std::to_string(p.start_offset) +
                    " complete " + std::to_string(p.delivery_complete_count));
    }
  }
  protocol::read_share_group_state_request er;
  er.group_id = "";
  er.topics.emplace_back().topic_id = q;
  er.topics[0].partitions.push_back({0, 0});
  auto empty = c.conn().call<protocol::read_share_group_state_response>(er, 0);
  out.push_back("empty group id: " + std::to_string(empty ? empty->results.size() : 99));
  return out;
}

TEST(share_state_rpc, same_answers_against_kafka) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  const std::string& error = kafka_broker::instance().start();
  if (!error.empty()) GTEST_SKIP() << error;
  const uint16_t kport = kafka_broker::instance().port();
  ASSERT_EQ(create_topic(kport, "q", 2), 0);
  state_client k(kport);
  protocol::uuid kq;
  for (int i = 0; i < 100 && kq.is_zero(); ++i) {
    kq = k.topic_id("q");
    if (kq.is_zero()) std::this_thread::sleep_for(100ms);
  }
  ASSERT_FALSE(kq.is_zero());
  // Kafka's share coordinator owns the key's partition of __share_group_state once the topic
  // exists and is loaded: FindCoordinator (key type SHARE) creates it; wait until it answers.
  uuid id;
  for (int i = 0; i < 8; ++i)
    id.most_significant_bits = (id.most_significant_bits << 8) | kq.bytes[i];
  for (int i = 8; i < 16; ++i) {
    id.least_significant_bits = (id.least_significant_bits << 8) | kq.bytes[i];
  }
  const std::string key = "g:" + id.to_string() + ":0";
  bool ready = false;
  for (int i = 0; i < 300 && !ready; ++i) {
    protocol::find_coordinator_request fc;
    fc.key_type = 2;
    fc.coordinator_keys.push_back(key);
    auto found = k.conn().call<protocol::find_coordinator_response>(fc, 6);
    ready = found && found->coordinators.size() == 1 && found->coordinators[0].error_code == 0;
    if (ready) {
      // Loaded once a summary of a share-partition without state is answered NONE.
      protocol::read_share_group_state_summary_request sr;
      sr.group_id = "probe";
      auto& t = sr.topics.emplace_back();
      t.topic_id = kq;
      t.partitions.push_back({0, 0});
      auto got = k.conn().call<protocol::read_share_group_state_summary_response>(sr, 1);
      ready = got && got->results.size() == 1 && got->results[0].partitions[0].error_code == 0;
    }
    if (!ready) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(ready) << "Kafka's share coordinator did not load";
  // "probe" hashes elsewhere than "g": wait for g's partition of the topic as well.
  for (int i = 0; i < 100; ++i) {
    auto r = k.read("g", kq, 0, 0);
    if (r.error != code(error_code::not_coordinator) &&
        r.error != code(error_code::coordinator_load_in_progress) &&
        r.error != code(error_code::coordinator_not_available)) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  const auto kafka_lines = answers_of(k, kq);

  temp_dir dir;
  broker_process broker(broker_args, dir.path() / "data");
  ASSERT_NE(broker.port(), 0) << broker.output();
  ASSERT_EQ(create_topic(broker.port(), "q", 2), 0);
  state_client c(broker.port());
  const auto tarn_lines = answers_of(c, c.topic_id("q"));
  EXPECT_EQ(tarn_lines, kafka_lines);
}

}  // namespace
}  // namespace tarn::test
