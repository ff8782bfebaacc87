// Leadership moved on purpose in a cluster (docs/cluster.md, "Controlled shutdown", "ElectLeaders"
// and "Preferred leaders", issue 27): three real brokers on one real etcd.
//   - A leader stopped with SIGTERM hands its leadership over before it exits (KIP-841's
//     controlled shutdown): an acks=all producer that follows KIP-951's hints sees at most
//     NOT_LEADER_OR_FOLLOWER (or the stopping broker's connection closing), never a timeout, and is
//     unavailable for milliseconds instead of a session timeout (TARN_LEADERSHIP_KILL=1 runs the
//     same producer across kill -9, for the figures in docs/cluster.md).
//   - ElectLeaders through any broker: PREFERRED_LEADER_NOT_AVAILABLE while the preferred replica
//     is away, an unclean election of a live replica outside the ISR, ELIGIBLE_LEADERS_NOT_
//     AVAILABLE with no live replica, the preferred replica back as leader once it is in sync,
//     then ELECTION_NOT_NEEDED, and Kafka's errors for unknown topics and partitions.
//   - auto.leader.rebalance.enable: a leader killed and restarted gets its leadership back once
//     it rejoins the ISR, within leader.imbalance.check.interval.seconds.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "etcd_process.h"
#include "kafka_conn.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/elect_leaders_request.h"
#include "protocol/messages/elect_leaders_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"
#include "replication_util.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using protocol::code;
using protocol::error_code;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// An acks=all producer of one partition that follows its leader as Kafka's clients do: one
// record at a time (Produce v11) to the broker it believes leads; on NOT_LEADER_OR_FOLLOWER it
// goes where KIP-951's CurrentLeader says, and on a lost connection or without a hint it asks
// Metadata of `bootstrap` (a broker that stays up). Every answer is kept with its time.
class following_producer {
 public:
  struct outcome {
    int64_t at_ms;
    int16_t error;  // -1: no answer (connection lost or refused)
    int32_t broker;
  };

  following_producer(std::string topic, std::vector<uint16_t> ports, int32_t leader,
                     uint16_t bootstrap)
      : topic_(std::move(topic)), ports_(std::move(ports)), leader_(leader), bootstrap_(bootstrap) {
    thread_ = std::thread([this] { run(); });
  }
  ~following_producer() { stop(); }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  std::vector<outcome> history() const {
    std::lock_guard g(mu_);
    return history_;
  }
  int64_t acknowledged() const {
    std::lock_guard g(mu_);
    int64_t n = 0;
    for (const auto& o : history_) n += o.error == 0 ? 1 : 0;
    return n;
  }
  // The longest time between two acknowledgements in a row: how long producing stood still.
  int64_t longest_gap_ms() const {
    std::lock_guard g(mu_);
    int64_t last = -1, longest = 0;
    for (const auto& o : history_) {
      if (o.error != 0) continue;
      if (last >= 0) longest = std::max(longest, o.at_ms - last);
      last = o.at_ms;
    }
    return longest;
  }

 private:
  void record(int16_t error, int32_t broker) {
    std::lock_guard g(mu_);
    history_.push_back({now_ms(), error, broker});
  }
  void ask_metadata() {
    kafka_conn c(bootstrap_, nullptr);
    if (!c.connected()) return;
    protocol::metadata_request req;
    req.allow_auto_topic_creation = false;
    auto& t = req.topics.emplace().emplace_back();
    t.name = topic_;
    c.send(req, 12);
    auto r = c.receive<protocol::metadata_response>(12, 5s);
    if (!r || r->topics.size() != 1 || r->topics[0].partitions.empty()) return;
    if (r->topics[0].partitions[0].leader_id >= 0) leader_ = r->topics[0].partitions[0].leader_id;
  }
  void run() {
    std::unique_ptr<kafka_conn> conn;
    int32_t conn_broker = -1;
    for (int n = 0; !stop_.load(); ++n) {
      if (!conn || conn_broker != leader_) {
        conn = std::make_unique<kafka_conn>(ports_[static_cast<size_t>(leader_ - 1)], nullptr);
        conn_broker = leader_;
      }
      if (!conn->connected()) {
        record(-1, conn_broker);
        conn.reset();
        std::this_thread::sleep_for(20ms);
        ask_metadata();
        continue;
      }
      protocol::produce_request req;
      req.acks = -1;
      req.timeout_ms = 10000;
      auto& t = req.topic_data.emplace_back();
      t.name = topic_;
      auto& p = t.partition_data.emplace_back();
      p.index = 0;
      const auto batch = value_batch("record-" + std::to_string(n));
      p.records = batch;
      conn->send(req, 11);
      auto r = conn->receive<protocol::produce_response>(11, 15s);
      if (!r || r->responses.empty() || r->responses[0].partition_responses.empty()) {
        record(-1, conn_broker);
        conn.reset();
        std::this_thread::sleep_for(20ms);
        ask_metadata();
        continue;
      }
      const auto& pr = r->responses[0].partition_responses[0];
      record(pr.error_code, conn_broker);
      if (pr.error_code == code(error_code::not_leader_or_follower)) {
        if (pr.current_leader.leader_id >= 0) {
          leader_ = pr.current_leader.leader_id;  // KIP-951: no Metadata round trip
        } else {
          ask_metadata();
        }
      } else if (pr.error_code != 0) {
        std::this_thread::sleep_for(20ms);
      }
    }
  }

  std::string topic_;
  std::vector<uint16_t> ports_;
  int32_t leader_;
  uint16_t bootstrap_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<outcome> history_;
  std::thread thread_;
};

// ElectLeaders v2 through `port`: `partitions` null for every partition.
using asked = std::vector<std::pair<std::string, std::vector<int32_t>>>;
struct election_answer {
  std::string topic;
  int32_t partition;
  int16_t error;
  std::optional<std::string> message;
};
std::optional<std::vector<election_answer>> elect(uint16_t port, int8_t type,
                                                  std::optional<asked> partitions) {
  kafka_conn c(port, nullptr);
  protocol::elect_leaders_request req;
  req.election_type = type;
  if (partitions) {
    req.topic_partitions.emplace();
    for (const auto& [topic, ps] : *partitions) {
      auto& t = req.topic_partitions->emplace_back();
      t.topic = topic;
      t.partitions = ps;
    }
  }
  auto r = c.call<protocol::elect_leaders_response>(req, 2);
  if (!r || r->error_code != 0) return std::nullopt;
  std::vector<election_answer> out;
  for (const auto& t : r->replica_election_results) {
    for (const auto& p : t.partition_result) {
      std::optional<std::string> message;
      if (p.error_message) message = std::string(*p.error_message);
      out.push_back({std::string(t.topic), p.partition_id, p.error_code, message});
    }
  }
  return out;
}

constexpr int8_t preferred = 0;
constexpr int8_t unclean = 1;

class cluster_leadership : public ::testing::Test {
 protected:
  void start(int32_t session_timeout_ms, const std::vector<std::string>& extra) {
    if (!etcd_available()) GTEST_SKIP() << "etcd is not installed (scripts/install-deps)";
    session_timeout_ms_ = session_timeout_ms;
    extra_ = extra;
    start_etcd_and_brokers(etcd_, brokers_, 3, [&](int32_t id) { return args(id); });
    if (HasFatalFailure()) return;
    for (int32_t id = 1; id <= 3; ++id) {
      ASSERT_TRUE(wait_for_brokers(port(id), 3)) << "broker " << id;
    }
  }
  std::vector<std::string> args(int32_t id) {
    return replication_args(*etcd_, id, session_timeout_ms_, 10000, extra_);
  }
  void restart(int32_t id) {
    const std::filesystem::path data = broker(id).data_dir();
    retired_.push_back(std::move(brokers_[static_cast<size_t>(id - 1)]));
    brokers_[static_cast<size_t>(id - 1)] = std::make_unique<broker_process>(args(id), data);
    ASSERT_NE(port(id), 0) << broker(id).output();
  }
  broker_process& broker(int32_t id) { return *brokers_[static_cast<size_t>(id - 1)]; }
  uint16_t port(int32_t id) { return broker(id).port(); }
  std::vector<uint16_t> ports() { return {port(1), port(2), port(3)}; }

  int32_t session_timeout_ms_ = 2000;
  std::vector<std::string> extra_;
  std::unique_ptr<etcd_cluster> etcd_;
  std::vector<std::unique_ptr<broker_process>> retired_;  // stopped; they own data directories
  std::vector<std::unique_ptr<broker_process>> brokers_;
};

TEST_F(cluster_leadership, a_sigtermed_leader_hands_over_before_it_exits) {
  const bool kill = std::getenv("TARN_LEADERSHIP_KILL") != nullptr;
  // A long session (unless measuring kill -9): the handover must not wait for it.
  ASSERT_NO_FATAL_FAILURE(start(kill ? 2000 : 30000, {}));
  const std::string topic = "handover";
  ASSERT_EQ(create_topic(port(1), topic, 1, {{"min.insync.replicas", "2"}}, 3), 0);
  for (int32_t id = 1; id <= 3; ++id) {
    auto p = wait_for_partition(port(id), topic, [](const partition_view& v) {
      return v.leader == 1 && v.isr.size() == 3;
    });
    ASSERT_TRUE(p && p->leader == 1 && p->isr.size() == 3) << "broker " << id;
  }

  following_producer producer(topic, ports(), 1, port(3));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (producer.acknowledged() < 20 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_GE(producer.acknowledged(), 20);
  const int64_t before = producer.acknowledged();
  const int64_t signalled = now_ms();
  broker(1).process().send_signal(kill ? SIGKILL : SIGTERM);
  auto exited = broker(1).process().wait_exit(15s);
  const int64_t exit_ms = now_ms() - signalled;
  ASSERT_TRUE(exited.has_value());
  // Producing goes on at the new leader.
  while (producer.acknowledged() < before + 20 &&
         std::chrono::steady_clock::now() < deadline + 5s) {
    std::this_thread::sleep_for(5ms);
  }
  producer.stop();
  const auto history = producer.history();
  std::cout << "acks=all producer across " << (kill ? "kill -9" : "SIGTERM (controlled shutdown)")
            << " of the leader: longest gap between acknowledgements " << producer.longest_gap_ms()
            << " ms; the broker exited " << exit_ms << " ms after the signal; "
            << producer.acknowledged() << " records acknowledged\n";
  EXPECT_GE(producer.acknowledged(), before + 20);
  auto moved = wait_for_partition(
      port(3), topic, [](const partition_view& v) { return v.leader == 2 && v.isr.size() == 2; });
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->leader, 2);
  EXPECT_EQ(sorted(moved->isr), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(moved->leader_epoch, 1);
  if (kill) return;

  // The controlled shutdown: it asked, led nothing, then closed its listeners and exited cleanly.
  EXPECT_TRUE(exited->exited && exited->code == 0) << broker(1).output();
  const std::string out = broker(1).output();
  const auto asked = out.find("controlled shutdown: broker 1 leads 1 partition(s)");
  const auto follows = out.find("handover-0: leader 2 at leader epoch 1; this broker follows");
  const auto done = out.find("controlled shutdown: leads no partition after");
  const auto closing = out.find("shutting down (SIGTERM): closing listeners");
  ASSERT_NE(asked, std::string::npos) << out;
  ASSERT_NE(follows, std::string::npos) << out;
  ASSERT_NE(done, std::string::npos) << out;
  ASSERT_NE(closing, std::string::npos) << out;
  EXPECT_LT(asked, follows);
  EXPECT_LT(follows, done);
  EXPECT_LT(done, closing);
  // No acks=all request failed beyond a retriable error: NOT_LEADER_OR_FOLLOWER (with its hint),
  // or, from the stopping broker after the signal, a connection closed without an answer (a
  // request sent just as it stopped reading, once it led nothing: seen under TSan, where the
  // event loops are slow to read; Kafka's clients retry it as a NetworkException); never a
  // timeout. And producing stood still for far less than a session.
  for (const auto& o : history) {
    if (o.error == 0) continue;
    const bool lost_at_stop = o.error == -1 && o.broker == 1 && o.at_ms >= signalled;
    EXPECT_TRUE(o.error == code(error_code::not_leader_or_follower) || lost_at_stop)
        << "error " << o.error << " from broker " << o.broker << " " << o.at_ms - signalled
        << " ms after the signal";
  }
  EXPECT_LT(producer.longest_gap_ms(), 2000);
}

TEST_F(cluster_leadership, elect_leaders_preferred_and_unclean_through_any_broker) {
  ASSERT_NO_FATAL_FAILURE(start(30000, {"auto.leader.rebalance.enable=false"}));
  // `elect` on broker 1 (replicas [1,2,3]); `pair` and `lonely` on broker 2 (it leads them).
  ASSERT_EQ(create_topic(port(1), "elect", 1, {}, 3), 0);
  ASSERT_EQ(create_topic(port(2), "pair", 1, {}, 2), 0);
  ASSERT_EQ(create_topic(port(2), "lonely", 1, {}, 1), 0);
  auto elect0 = wait_for_partition(
      port(3), "elect", [](const partition_view& v) { return v.leader == 1 && v.isr.size() == 3; });
  ASSERT_TRUE(elect0 && elect0->isr.size() == 3);
  auto pair0 = wait_for_partition(
      port(3), "pair", [](const partition_view& v) { return v.leader == 2 && v.isr.size() == 2; });
  ASSERT_TRUE(pair0 && pair0->isr.size() == 2);
  ASSERT_EQ(pair0->replicas.size(), 2u);
  EXPECT_EQ(pair0->replicas[0], 2);
  const int32_t pair_follower = pair0->replicas[1];
  ASSERT_EQ(pair_follower, 1) << "placement: creator first, then the others from the lowest id";
  // Records both replicas of `pair` have, then (below) three that only broker 2 gets.
  raw_client pair_leader(port(2));
  int32_t correlation = 1;
  for (const char* v : {"p0", "p1"}) {
    ASSERT_TRUE(pair_leader.send_bytes(produce_frame(correlation++, "pair", 0, value_batch(v))));
    ASSERT_EQ(decode_produce(pair_leader.read_frame(10s)).error_code, 0) << v;
  }

  // Broker 1 stopped (controlled): `elect` is led by 2; its preferred replica is away.
  ASSERT_TRUE(broker(1).stop().has_value());
  auto away = elect(port(3), preferred, asked{{"elect", {0}}});
  ASSERT_TRUE(away);
  ASSERT_EQ(away->size(), 1u);
  EXPECT_EQ((*away)[0].error, code(error_code::preferred_leader_not_available));
  EXPECT_EQ((*away)[0].message, "The preferred leader was not available.");

  for (const char* v : {"p2 on 2 alone", "p3 on 2 alone", "p4 on 2 alone"}) {
    ASSERT_TRUE(pair_leader.send_bytes(produce_frame(correlation++, "pair", 0, value_batch(v))));
    ASSERT_EQ(decode_produce(pair_leader.read_frame(10s)).error_code, 0) << v;
  }
  // Broker 2 stopped too: `pair` and `lonely` have no leader; their ISR is empty, broker 2 in
  // their ELR (KIP-966 with eligible.leader.replicas.version 1, as a new Kafka 4.4 cluster: the
  // last member leaves the ISR below min ISR into the ELR; before KIP-966 it stayed in the ISR).
  // Broker 1 back: a live replica of `pair`, out of its ISR and ELR.
  ASSERT_TRUE(broker(2).stop().has_value());
  ASSERT_NO_FATAL_FAILURE(restart(1));
  ASSERT_TRUE(wait_for_brokers(port(3), 2));
  auto leaderless =
      wait_for_partition(port(3), "pair", [](const partition_view& v) { return v.leader == -1; });
  ASSERT_TRUE(leaderless);
  EXPECT_TRUE(leaderless->isr.empty());
  // Unclean election of every partition, through broker 1: `pair` gets broker 1 with an ISR of
  // itself; `lonely` has no live replica; `elect` has a leader (left out, as Kafka does).
  auto uncleaned = elect(port(1), unclean, std::nullopt);
  ASSERT_TRUE(uncleaned);
  ASSERT_EQ(uncleaned->size(), 2u);
  for (const auto& a : *uncleaned) {
    if (a.topic == "pair") {
      EXPECT_EQ(a.error, 0);
      EXPECT_FALSE(a.message.has_value());
    } else {
      EXPECT_EQ(a.topic, "lonely");
      EXPECT_EQ(a.error, code(error_code::eligible_leaders_not_available));
      EXPECT_EQ(a.message, "Eligible topic partition leaders are not available.");
    }
  }
  auto pair_now =
      wait_for_partition(port(3), "pair", [](const partition_view& v) { return v.leader == 1; });
  ASSERT_TRUE(pair_now);
  EXPECT_EQ(pair_now->isr, (std::vector<int32_t>{1}));
  raw_client unclean_leader(port(1));
  ASSERT_TRUE(unclean_leader.send_bytes(
      produce_frame(correlation++, "pair", 0, value_batch("p2 after the unclean election"))));
  ASSERT_EQ(decode_produce(unclean_leader.read_frame(10s)).error_code, 0);
  // Broker 2 back with a log of 5 against the new leader's 3, and no epochs to compare (its
  // leader-epoch-checkpoint gone, as from a log older than epochs): no DivergingEpoch can say
  // where they part, so its fetch from 5 is OFFSET_OUT_OF_RANGE. As Kafka's fetcher, it asks the
  // leader's log end offset (ListOffsets LATEST as a follower), truncates to it and catches up.
  std::filesystem::remove(broker(2).data_dir() / "pair-0" / "leader-epoch-checkpoint");
  ASSERT_NO_FATAL_FAILURE(restart(2));
  auto rejoined = wait_for_partition(
      port(3), "pair", [](const partition_view& v) { return v.leader == 1 && v.isr.size() == 2; });
  ASSERT_TRUE(rejoined && rejoined->isr.size() == 2) << broker(2).output();
  EXPECT_NE(broker(2).output().find("pair-0: truncated from 5 to 3, the end of leader 1's log"),
            std::string::npos)
      << broker(2).output();

  // Broker 1 catches up on `elect` (led by 3 now) and rejoins its ISR: the preferred election
  // through broker 3 gives it back its leadership, at the next leader epoch.
  auto in_sync = wait_for_partition(port(3), "elect", [](const partition_view& v) {
    return std::find(v.isr.begin(), v.isr.end(), 1) != v.isr.end();
  });
  ASSERT_TRUE(in_sync);
  const int32_t epoch = in_sync->leader_epoch;
  auto back = elect(port(3), preferred, asked{{"elect", {0, 7}}, {"missing", {0}}});
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0].error, 0);
  EXPECT_EQ((*back)[1].error, code(error_code::unknown_topic_or_partition));
  EXPECT_EQ((*back)[1].message, "No such partition as elect-7");
  EXPECT_EQ((*back)[2].error, code(error_code::unknown_topic_or_partition));
  EXPECT_EQ((*back)[2].message, "No such topic as missing");
  for (int32_t id : {1, 3}) {
    auto led = wait_for_partition(port(id), "elect", [&](const partition_view& v) {
      return v.leader == 1 && v.leader_epoch == epoch + 1;
    });
    ASSERT_TRUE(led && led->leader == 1) << "broker " << id;
  }
  auto again = elect(port(1), preferred, asked{{"elect", {0}}});
  ASSERT_TRUE(again && again->size() == 1u);
  EXPECT_EQ((*again)[0].error, code(error_code::election_not_needed));
  EXPECT_EQ((*again)[0].message, "Leader election not needed for topic partition.");
  auto not_unclean = elect(port(1), unclean, asked{{"elect", {0}}});
  ASSERT_TRUE(not_unclean && not_unclean->size() == 1u);
  EXPECT_EQ((*not_unclean)[0].error, code(error_code::election_not_needed));
  // Produce goes to the elected leader.
  raw_client leader(port(1));
  ASSERT_TRUE(leader.send_bytes(produce_frame(1, "elect", 0, value_batch("after"), -1)));
  EXPECT_EQ(decode_produce(leader.read_frame(10s)).error_code, 0);
}

TEST_F(cluster_leadership, auto_rebalance_gives_a_returned_broker_its_leadership_back) {
  ASSERT_NO_FATAL_FAILURE(start(2000, {"leader.imbalance.check.interval.seconds=1"}));
  ASSERT_EQ(create_topic(port(1), "balanced", 2, {}, 3), 0);
  for (int32_t p = 0; p < 2; ++p) {
    auto v = wait_for_partition(
        port(3), "balanced",
        [](const partition_view& v) { return v.leader == 1 && v.isr.size() == 3; }, 10s, p);
    ASSERT_TRUE(v && v->leader == 1) << "partition " << p;
  }
  broker(1).process().send_signal(SIGKILL);
  ASSERT_TRUE(broker(1).process().wait_exit(10s).has_value());
  for (int32_t p = 0; p < 2; ++p) {
    auto v = wait_for_partition(
        port(3), "balanced", [](const partition_view& v) { return v.leader != 1 && v.leader >= 0; },
        10s, p);
    ASSERT_TRUE(v && v->leader != 1 && v->leader >= 0) << "partition " << p;
  }
  ASSERT_NO_FATAL_FAILURE(restart(1));
  const auto restarted = std::chrono::steady_clock::now();
  // Back in the ISR, then leader again (the controller checks every second), at leader epoch 2.
  for (int32_t p = 0; p < 2; ++p) {
    auto v = wait_for_partition(
        port(3), "balanced", [](const partition_view& v) { return v.leader == 1; }, 10s, p);
    ASSERT_TRUE(v && v->leader == 1) << "partition " << p;
    EXPECT_EQ(v->leader_epoch, 2);
    EXPECT_EQ(v->isr.size(), 3u);
  }
  std::cout << "leadership back on broker 1 "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - restarted)
                   .count()
            << " ms after its restart\n";
}

}  // namespace
}  // namespace tarn::test
