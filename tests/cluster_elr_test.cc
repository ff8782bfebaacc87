// KIP-966's eligible leader replicas in a cluster (docs/cluster.md, "Eligible leader replicas",
// issue 27): etcd and three `tarn serve` (cluster_harness.h), a topic with replication factor 3
// and min.insync.replicas=2, eligible.leader.replicas.version 1 as a new cluster finalizes it.
//
// - A follower killed: the ISR shrinks to two (at min ISR, no ELR). The other follower stopped
//   (SIGTERM: a controlled shutdown, then its clean-shutdown marker): the ISR is the leader
//   alone and the follower is in the ELR; the high watermark stays where it was (strict min ISR)
//   and acks=all is refused NOT_ENOUGH_REPLICAS. The leader killed: nobody runs. The stopped
//   follower started again: it shut down cleanly, so as an ELR member it is elected (no unclean
//   election), alone in the ISR with the old leader in the ELR; the killed follower started again
//   joins its ISR, the ELR empties, acks=all is answered again, and every record acknowledged
//   with acks=all is there.
// - The same with the ELR member killed (SIGKILL) instead: started again without its marker it
//   leaves the ELR (it may have lost what it had not flushed) and is not elected; the partition
//   stays without a leader, the old leader in the ELR and as the last known leader, until the old
//   leader comes back: KIP-966's last-known-leader election makes it leader again, alone in the
//   ISR, with every acknowledged record.
// - And a twin of the rules against a three-node Kafka 4.4.0 KRaft cluster (the reference, with
//   min.insync.replicas=3, since Kafka's controllers are its nodes and two of three must live):
//   a follower paused, a record sent with acks=all as it stopped answering is REQUEST_TIMED_OUT
//   (the high watermark does not pass it under min ISR), the follower is the ELR, acks=all is
//   NOT_ENOUGH_REPLICAS; min.insync.replicas changed to 4 (the ISR still below the effective
//   min ISR, 3): the ELR is emptied all the same (KIP-966's ClearElrRecord); resumed, the ISR is
//   whole and the ELR empty. DescribeTopicPartitions'
//   EligibleLeaderReplicas and LastKnownElr are compared as each cluster answers them.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/config_admin.h"
#include "cluster_harness.h"
#include "kafka_client.h"
#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "kafka_test_names.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/describe_topic_partitions_request.h"
#include "protocol/messages/describe_topic_partitions_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/writer.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using protocol::code;
using protocol::error_code;
using clock_type = std::chrono::steady_clock;

// One partition as DescribeTopicPartitions answers it.
struct dtp_partition {
  int16_t error = -1;
  int32_t leader = -2;
  int32_t leader_epoch = -1;
  std::vector<int32_t> isr;
  std::vector<int32_t> elr;
  std::vector<int32_t> last_known_elr;
};

std::vector<int32_t> sorted_ids(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// DescribeTopicPartitions v0 of partition 0 of `topic` through the broker on `port`.
std::optional<dtp_partition> describe_partition(uint16_t port, const std::string& topic) {
  auto c = tools::kafka_client::connect("127.0.0.1:" + std::to_string(port));
  if (!c) return std::nullopt;
  protocol::describe_topic_partitions_request req;
  req.topics.push_back({topic});
  std::vector<uint8_t> buf;
  auto r = tools::call<protocol::describe_topic_partitions_response>(**c, req, 0, buf);
  if (!r || r->topics.size() != 1 || r->topics[0].partitions.empty()) return std::nullopt;
  const auto& p = r->topics[0].partitions[0];
  dtp_partition out;
  out.error = p.error_code;
  out.leader = p.leader_id;
  out.leader_epoch = p.leader_epoch;
  out.isr = sorted_ids(p.isr_nodes);
  if (p.eligible_leader_replicas) out.elr = sorted_ids(*p.eligible_leader_replicas);
  if (p.last_known_elr) out.last_known_elr = *p.last_known_elr;
  return out;
}

// Polls describe_partition() until `pred` holds; the last answer either way.
template <typename Pred>
std::optional<dtp_partition> wait_partition(uint16_t port, const std::string& topic, Pred pred,
                                            std::chrono::milliseconds timeout = 40s) {
  std::optional<dtp_partition> last;
  const auto deadline = clock_type::now() + timeout;
  while (clock_type::now() < deadline) {
    last = describe_partition(port, topic);
    if (last && pred(*last)) return last;
    std::this_thread::sleep_for(200ms);
  }
  return last;
}

std::string show(const std::optional<dtp_partition>& p) {
  if (!p) return "no answer";
  auto list = [](const std::vector<int32_t>& v) {
    std::string s;
    for (int32_t id : v) s += (s.empty() ? "" : ",") + std::to_string(id);
    return "[" + s + "]";
  };
  return "leader " + std::to_string(p->leader) + " (epoch " + std::to_string(p->leader_epoch) +
         ", error " + std::to_string(p->error) + "), ISR " + list(p->isr) + ", ELR " +
         list(p->elr) + ", LastKnownElr " + list(p->last_known_elr);
}

// Produce v9 of one batch with acks=all and the request's TimeoutMs `timeout_ms`.
produce_answer produce_all(uint16_t port, const std::string& topic, const std::string& value,
                           int32_t timeout_ms = 30000) {
  protocol::produce_request req;
  req.acks = -1;
  req.timeout_ms = timeout_ms;
  const auto batch = value_batch(value);
  auto& t = req.topic_data.emplace_back();
  t.name = topic;
  auto& p = t.partition_data.emplace_back();
  p.index = 0;
  p.records = batch;
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, 9);
  raw_client c(port);
  if (!c.send_bytes(request_frame(0, 9, 1, body, true))) return {};
  return decode_produce(c.read_frame(std::chrono::milliseconds(timeout_ms) + 30s));
}

// The high watermark a consumer's Fetch sees on `port`.
int64_t high_watermark(uint16_t port, const std::string& topic) {
  raw_client c(port);
  if (!c.send_bytes(fetch_frame(7, topic, 0, 0, 0, 0))) return -1;
  return decode_fetch(c.read_frame(30s)).high_watermark;
}

// Whether every value in `acked` is among the batches of the partition read from `port`, in
// order (one record a batch; the value is at the end of the batch).
::testing::AssertionResult has_records(uint16_t port, const std::string& topic,
                                       const std::vector<std::string>& acked) {
  auto batches = fetch_all(port, topic, 0);
  size_t next = 0;
  for (const auto& [offset, bytes] : batches) {
    if (next == acked.size()) break;
    const std::string text(bytes.begin(), bytes.end());
    if (text.find(acked[next]) != std::string::npos) ++next;
  }
  if (next == acked.size()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "record '" << acked[next] << "' (acknowledged) is missing"
                                       << " among " << batches.size() << " batches";
}

// tarn's cluster: ISR changes within a second, no automatic rebalancing (the leaders are the
// test's).
std::unique_ptr<cluster_harness> tarn_cluster_for_elr() {
  return make_tarn_cluster(3,
                           {"replica.lag.time.max.ms=1000", "replica.fetch.wait.max.ms=100",
                            "replica.fetch.backoff.ms=100", "auto.leader.rebalance.enable=false"});
}

class cluster_elr : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = tarn_cluster_for_elr();
    const std::string why = cluster_->start();
    if (why.find("etcd is not installed") != std::string::npos) GTEST_SKIP() << why;
    ASSERT_EQ(why, "");
  }
  void TearDown() override {
    if (cluster_ && HasFailure()) std::cerr << cluster_->diagnostics();
  }
  uint16_t port(int32_t id) const { return cluster_->port(id - 1); }

  // A topic of one partition, replication factor 3, min.insync.replicas=2, fully replicated;
  // its leader and the two followers.
  void make_topic(const std::string& topic, int32_t& leader, int32_t& f1, int32_t& f2) {
    ASSERT_EQ(create_topic(*cluster_, topic, 1, 3, {{"min.insync.replicas", "2"}}), "");
    ASSERT_TRUE(wait_fully_replicated(*cluster_, topic, 30s));
    auto p = describe_partition(cluster_->port(0), topic);
    ASSERT_TRUE(p) << "DescribeTopicPartitions did not answer";
    ASSERT_GE(p->leader, 1) << show(p);
    EXPECT_TRUE(p->elr.empty()) << show(p);
    EXPECT_TRUE(p->last_known_elr.empty()) << show(p);
    leader = p->leader;
    std::vector<int32_t> followers;
    for (int32_t id = 1; id <= 3; ++id) {
      if (id != leader) followers.push_back(id);
    }
    f1 = followers[0];
    f2 = followers[1];
  }

  std::unique_ptr<cluster_harness> cluster_;
};

TEST_F(cluster_elr, an_elr_member_back_from_a_clean_shutdown_leads_without_unclean_election) {
  const std::string topic = "elr";
  int32_t leader = 0, f1 = 0, f2 = 0;
  make_topic(topic, leader, f1, f2);
  if (HasFatalFailure()) return;
  std::vector<std::string> acked;
  for (int i = 0; i < 3; ++i) {
    acked.push_back("acked-" + std::to_string(i));
    ASSERT_EQ(produce_all(port(leader), topic, acked.back()).error_code, 0);
  }

  // f2 killed: the ISR is two, at min ISR: no ELR.
  ASSERT_TRUE(cluster_->kill(f2 - 1));
  auto two =
      wait_partition(port(leader), topic, [](const dtp_partition& p) { return p.isr.size() == 2; });
  ASSERT_TRUE(two && two->isr.size() == 2) << show(two);
  EXPECT_TRUE(two->elr.empty()) << show(two);
  acked.push_back("acked-with-two");
  ASSERT_EQ(produce_all(port(leader), topic, acked.back()).error_code, 0);
  const int64_t hw = high_watermark(port(leader), topic);
  EXPECT_EQ(hw, 4);

  // f1 stopped cleanly: the ISR is the leader alone, below min ISR: f1 is eligible.
  ASSERT_TRUE(cluster_->stop(f1 - 1));
  auto alone =
      wait_partition(port(leader), topic, [](const dtp_partition& p) { return p.isr.size() == 1; });
  ASSERT_TRUE(alone && alone->isr.size() == 1) << show(alone);
  EXPECT_EQ(alone->isr, std::vector<int32_t>{leader}) << show(alone);
  EXPECT_EQ(alone->elr, std::vector<int32_t>{f1}) << show(alone);
  EXPECT_TRUE(alone->last_known_elr.empty()) << show(alone);
  EXPECT_EQ(produce_all(port(leader), topic, "refused").error_code,
            code(error_code::not_enough_replicas));
  // Strict min ISR: an acks=1 record is appended, but the high watermark does not pass it.
  {
    raw_client c(port(leader));
    ASSERT_TRUE(c.send_bytes(produce_frame(1, topic, 0, value_batch("acks=1 alone"), 1)));
    EXPECT_EQ(decode_produce(c.read_frame(30s)).error_code, 0);
  }
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(high_watermark(port(leader), topic), hw);

  // The leader killed: nobody runs. f1 started again on its data after its clean shutdown: an
  // ELR member with an empty ISR, it is elected, alone in the ISR; the old leader waits in the
  // ELR; no last known leader is needed.
  ASSERT_TRUE(cluster_->kill(leader - 1));
  ASSERT_TRUE(cluster_->restart(f1 - 1));
  auto elected = wait_partition(
      port(f1), topic, [&](const dtp_partition& p) { return p.leader == f1 && p.error == 0; });
  ASSERT_TRUE(elected && elected->leader == f1) << show(elected);
  EXPECT_EQ(elected->isr, std::vector<int32_t>{f1}) << show(elected);
  EXPECT_EQ(elected->elr, std::vector<int32_t>{leader}) << show(elected);
  EXPECT_TRUE(elected->last_known_elr.empty()) << show(elected);
  EXPECT_GT(elected->leader_epoch, alone->leader_epoch) << show(elected);
  // Still below min ISR: acks=all refused, before anything is appended.
  EXPECT_EQ(produce_all(port(f1), topic, "refused again").error_code,
            code(error_code::not_enough_replicas));

  // f2 started again (it was out of the ISR and the ELR): it catches up, joins the ISR, which is
  // at min ISR again: the ELR empties and acks=all is answered.
  ASSERT_TRUE(cluster_->restart(f2 - 1));
  auto whole =
      wait_partition(port(f1), topic, [](const dtp_partition& p) { return p.isr.size() == 2; });
  ASSERT_TRUE(whole && whole->isr.size() == 2) << show(whole);
  EXPECT_EQ(whole->isr, sorted_ids({f1, f2})) << show(whole);
  EXPECT_TRUE(whole->elr.empty()) << show(whole);
  EXPECT_TRUE(whole->last_known_elr.empty()) << show(whole);
  acked.push_back("acked-after-election");
  const auto after = produce_all(port(f1), topic, acked.back());
  EXPECT_EQ(after.error_code, 0);
  EXPECT_EQ(after.base_offset, 4);  // nothing acknowledged is lost, nothing unacknowledged kept
  EXPECT_TRUE(has_records(port(f1), topic, acked));

  // The old leader back: a follower now, it truncates its unacknowledged record and rejoins.
  ASSERT_TRUE(cluster_->restart(leader - 1));
  ASSERT_TRUE(wait_fully_replicated(*cluster_, topic, 40s));
  EXPECT_TRUE(has_records(port(f1), topic, acked));
}

TEST_F(cluster_elr, an_unclean_shutdown_takes_a_replica_out_of_the_elr) {
  const std::string topic = "elr-unclean";
  int32_t leader = 0, f1 = 0, f2 = 0;
  make_topic(topic, leader, f1, f2);
  if (HasFatalFailure()) return;
  const std::vector<std::string> acked = {"acked-0", "acked-1"};
  for (const auto& v : acked) ASSERT_EQ(produce_all(port(leader), topic, v).error_code, 0);

  ASSERT_TRUE(cluster_->kill(f2 - 1));
  auto two =
      wait_partition(port(leader), topic, [](const dtp_partition& p) { return p.isr.size() == 2; });
  ASSERT_TRUE(two && two->isr.size() == 2) << show(two);
  // f1 killed too (no clean-shutdown marker): still eligible while it is away.
  ASSERT_TRUE(cluster_->kill(f1 - 1));
  auto alone =
      wait_partition(port(leader), topic, [](const dtp_partition& p) { return p.isr.size() == 1; });
  ASSERT_TRUE(alone && alone->isr.size() == 1) << show(alone);
  EXPECT_EQ(alone->elr, std::vector<int32_t>{f1}) << show(alone);

  // The leader killed, then f1 started again: its unclean shutdown takes it out of the ELR, so
  // nobody may lead (unclean.leader.election.enable is false); the old leader, which had
  // everything, is the ELR and the last known leader.
  ASSERT_TRUE(cluster_->kill(leader - 1));
  ASSERT_TRUE(cluster_->restart(f1 - 1));
  auto none = wait_partition(port(f1), topic, [&](const dtp_partition& p) {
    return p.elr == std::vector<int32_t>{leader};
  });
  ASSERT_TRUE(none && none->elr == std::vector<int32_t>{leader}) << show(none);
  EXPECT_EQ(none->leader, -1) << show(none);
  EXPECT_EQ(none->error, code(error_code::leader_not_available)) << show(none);
  EXPECT_TRUE(none->isr.empty()) << show(none);
  EXPECT_EQ(none->last_known_elr, std::vector<int32_t>{leader}) << show(none);
  std::this_thread::sleep_for(1s);  // and it stays so
  auto still = describe_partition(port(f1), topic);
  ASSERT_TRUE(still);
  EXPECT_EQ(still->leader, -1) << show(still);

  // The old leader back (killed too, so it leaves the ELR as well): as the last known leader,
  // with the ISR and ELR empty, it leads again, alone in the ISR, with every acknowledged record.
  ASSERT_TRUE(cluster_->restart(leader - 1));
  auto back =
      wait_partition(port(f1), topic, [&](const dtp_partition& p) { return p.leader == leader; });
  ASSERT_TRUE(back && back->leader == leader) << show(back);
  EXPECT_TRUE(back->elr.empty()) << show(back);
  EXPECT_TRUE(back->last_known_elr.empty()) << show(back);
  ASSERT_TRUE(cluster_->restart(f2 - 1));
  ASSERT_TRUE(wait_fully_replicated(*cluster_, topic, 40s));
  EXPECT_TRUE(has_records(port(leader), topic, acked));
  EXPECT_EQ(produce_all(port(leader), topic, "after").error_code, 0);
}

// The twin: the same rules against tarn and against Kafka 4.4.0 (its half is `make interop`'s).
class cluster_elr_twin : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (GetParam() == broker_kind::kafka) {
#ifdef TARN_SANITIZED_BUILD
      GTEST_SKIP() << "the Kafka reference half checks the scenario only (release builds)";
#endif
      if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
      if (auto why = kafka_test_name_error(); !why.empty()) FAIL() << why;
      cluster_ = make_kafka_cluster(
          3, {"replica.lag.time.max.ms=2000", "auto.leader.rebalance.enable=false"});
    } else {
      cluster_ = tarn_cluster_for_elr();
    }
    const std::string why = cluster_->start();
    if (why.find("etcd is not installed") != std::string::npos) GTEST_SKIP() << why;
    ASSERT_EQ(why, "");
  }
  void TearDown() override {
    if (!cluster_) return;
    for (int n = 0; n < cluster_->node_count(); ++n) {
      if (cluster_->state(n) == node_state::paused) cluster_->resume(n);
    }
    if (HasFailure()) std::cerr << cluster_->diagnostics();
  }
  std::unique_ptr<cluster_harness> cluster_;
};

TEST_P(cluster_elr_twin, a_follower_out_of_an_isr_below_min_isr_is_eligible) {
  const std::string topic = "elr-twin";
  ASSERT_EQ(create_topic(*cluster_, topic, 1, 3, {{"min.insync.replicas", "3"}}), "");
  ASSERT_TRUE(wait_fully_replicated(*cluster_, topic, 40s)) << cluster_->diagnostics();
  auto whole = describe_partition(cluster_->port(0), topic);
  ASSERT_TRUE(whole && whole->leader >= 1) << show(whole);
  EXPECT_TRUE(whole->elr.empty()) << show(whole);
  EXPECT_TRUE(whole->last_known_elr.empty()) << show(whole);
  const int32_t leader = whole->leader;
  const uint16_t leader_port = cluster_->port(leader - 1);
  const int32_t follower = leader % 3 + 1;
  ASSERT_EQ(produce_all(leader_port, topic, "first").error_code, 0);

  // Paused: a record sent now is appended while the ISR is whole, then the ISR shrinks below
  // min ISR, and the high watermark never passes it: the request times out.
  ASSERT_TRUE(cluster_->pause(follower - 1));
  // (Kafka's node pause returns once the signal is sent; a moment for it to take.)
  std::this_thread::sleep_for(300ms);
  const auto timed_out = produce_all(leader_port, topic, "as the follower stopped", 8000);
  EXPECT_EQ(timed_out.error_code, code(error_code::request_timed_out));
  auto shrunk =
      wait_partition(leader_port, topic, [](const dtp_partition& p) { return p.isr.size() == 2; });
  ASSERT_TRUE(shrunk && shrunk->isr.size() == 2) << show(shrunk);
  EXPECT_EQ(shrunk->leader, leader) << show(shrunk);
  EXPECT_EQ(shrunk->elr, std::vector<int32_t>{follower}) << show(shrunk);
  EXPECT_TRUE(shrunk->last_known_elr.empty()) << show(shrunk);
  EXPECT_EQ(produce_all(leader_port, topic, "refused").error_code,
            code(error_code::not_enough_replicas));
  EXPECT_EQ(high_watermark(leader_port, topic), 1);

  // min.insync.replicas changed, 3 -> 4 (IncrementalAlterConfigs through the leader): the
  // effective min ISR stays the replica count, 3, so the ISR of two is still below it and no ISR
  // rule would touch the ELR; KIP-966's ClearElrRecord empties it (and the last known leader),
  // the leader and the ISR as they were. (On Kafka the paused node may be the quorum's leader:
  // the change waits for the next one, so it is retried.)
  auto set_min_isr = [&](const std::string& value) {
    std::string altered = "not sent";
    for (auto deadline = clock_type::now() + 40s;
         !altered.empty() && clock_type::now() < deadline;) {
      auto admin = client::config_admin::connect("127.0.0.1:" + std::to_string(leader_port), 10s);
      if (admin) {
        auto a = (*admin)->alter_configs(client::config_resource_type::topic, topic,
                                         {{"min.insync.replicas", client::config_op::set, value}});
        altered = a ? "" : a.error().message;
      } else {
        altered = admin.error().message;
      }
      if (!altered.empty()) std::this_thread::sleep_for(500ms);
    }
    return altered;
  };
  ASSERT_EQ(set_min_isr("4"), "");
  auto cleared = wait_partition(leader_port, topic, [](const dtp_partition& p) {
    return p.elr.empty() && p.last_known_elr.empty();
  });
  ASSERT_TRUE(cleared && cleared->elr.empty()) << show(cleared);
  EXPECT_EQ(cleared->leader, leader) << show(cleared);
  EXPECT_EQ(cleared->isr, shrunk->isr) << show(cleared);
  EXPECT_EQ(cleared->leader_epoch, shrunk->leader_epoch) << show(cleared);
  std::this_thread::sleep_for(1s);  // and it stays so (the controller's scans do not refill it)
  auto still = describe_partition(leader_port, topic);
  ASSERT_TRUE(still);
  EXPECT_TRUE(still->elr.empty()) << show(still);
  // min.insync.replicas stays 4, above the 3 replicas: Kafka's effectiveMinIsr caps it at the
  // replica count, so acks=all is answered once the ISR is whole again (not NOT_ENOUGH_REPLICAS).

  // Resumed: back in the ISR, the ELR empty, acks=all answered.
  ASSERT_TRUE(cluster_->resume(follower - 1));
  auto back =
      wait_partition(leader_port, topic, [](const dtp_partition& p) { return p.isr.size() == 3; });
  ASSERT_TRUE(back && back->isr.size() == 3) << show(back);
  EXPECT_TRUE(back->elr.empty()) << show(back);
  EXPECT_TRUE(back->last_known_elr.empty()) << show(back);
  EXPECT_EQ(produce_all(leader_port, topic, "again").error_code, 0);
}

INSTANTIATE_TEST_SUITE_P(both, cluster_elr_twin,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

}  // namespace
}  // namespace tarn::test
