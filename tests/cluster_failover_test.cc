// Leader fail-over in a cluster (docs/cluster.md, "Fail-over", issue 27): three real brokers on
// one real etcd with 2 s sessions; the leader of a topic with replication factor 3 and
// min.insync.replicas=2 is killed with SIGKILL. The controller moves the leadership to the next
// in-sync replica once the dead broker's session has ended: Metadata shows it with leader epoch
// 1, every record acknowledged with acks=all is read from it, an idempotent producer's retry is
// answered with its original offset and its sequence goes on, the batches appended from then on
// carry leader epoch 1. The old leader, restarted on its data, had records (acks=1, written while
// the followers were paused) that the new leader never got: it comes back as a follower, truncates
// them where the new leader's log diverges from it (DivergingEpoch), and its segment and
// leader-epoch-checkpoint end up byte for byte the new leader's.
// And real clients across the same fail-over: confluent-kafka's idempotent producer and a
// consumer in a group, every acknowledged record read once, in order; the same with kafka-python
// and with Kafka 4.4.0's Java clients.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "etcd_process.h"
#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
#include "protocol/messages/list_offsets_request.h"
#include "protocol/messages/list_offsets_response.h"
#include "protocol/messages/offset_for_leader_epoch_request.h"
#include "protocol/messages/offset_for_leader_epoch_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"
#include "replication_util.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using protocol::code;
using protocol::error_code;

constexpr int64_t producer_id = 4242;

// broker.session.timeout.ms: 2 s, or TARN_FAILOVER_SESSION_MS (how docs/cluster.md measures the
// fail-over at Kafka's default of 9 s).
int32_t session_timeout_ms() {
  const char* v = std::getenv("TARN_FAILOVER_SESSION_MS");
  return v != nullptr && *v != '\0' ? std::atoi(v) : 2000;
}

// A short session for a quick fail-over; a lag bound well above the pauses below, so that the
// ISR keeps all three while the followers sleep (the leader's death must find them in it).
// A group's first join is not held back and __consumer_offsets is small (the clients test's
// consumer joins alone).
std::vector<std::string> failover_args(const etcd_cluster& etcd, int32_t node_id) {
  return replication_args(etcd, node_id, session_timeout_ms(), 10000,
                          {"group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=3"});
}

// With TARN_FAILOVER_TIMELINE set: the brokers' log lines of the fail-over, for docs/cluster.md.
void print_timeline(const std::string& name, const std::string& output) {
  if (std::getenv("TARN_FAILOVER_TIMELINE") == nullptr) return;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    for (const char* what : {"controller (epoch", "leader of", "follows", "truncated", "ISR of",
                             "registered", "replica manager"}) {
      if (line.find(what) != std::string::npos) {
        std::cout << name << ": " << line << "\n";
        break;
      }
    }
  }
}

// One record `value` in an idempotent batch of producer 4242, epoch 0, sequence `sequence`.
std::vector<uint8_t> idempotent_batch(const std::string& value, int32_t sequence) {
  record::batch_builder_config config;
  config.producer_id = producer_id;
  config.producer_epoch = 0;
  config.base_sequence = sequence;
  record::batch_builder b(config);
  b.try_append(1'700'000'000'000, std::nullopt, record::as_bytes(value));
  return *b.build();
}

// Produce v9 with `acks` of one batch; the answer.
produce_answer produce_with(raw_client& c, int32_t correlation, const std::string& topic,
                            std::span<const uint8_t> batch, int16_t acks) {
  if (!c.send_bytes(produce_frame(correlation, topic, 0, batch, acks))) return {};
  return decode_produce(c.read_frame(30s));
}

int32_t leader_epoch_of(std::span<const uint8_t> batch) { return get_int32(batch, 12); }

class cluster_failover : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!etcd_available()) GTEST_SKIP() << "etcd is not installed (scripts/install-deps)";
    start_etcd_and_brokers(etcd_, brokers_, 3,
                           [&](int32_t id) { return failover_args(*etcd_, id); });
    if (HasFatalFailure()) return;
  }
  void TearDown() override {
    for (auto& b : brokers_) {
      if (b) b->process().send_signal(SIGCONT);  // a paused broker would not stop on SIGTERM
    }
  }
  broker_process& broker(int32_t id) { return *brokers_[static_cast<size_t>(id - 1)]; }
  void clients_across_a_fail_over(const std::vector<std::string>& client);
  uint16_t port(int32_t id) { return broker(id).port(); }
  std::filesystem::path partition_dir(int32_t id, const std::string& topic) {
    return broker(id).data_dir() / (topic + "-0");
  }

  std::unique_ptr<etcd_cluster> etcd_;
  std::vector<std::unique_ptr<broker_process>> retired_;  // stopped; they own data directories
  std::vector<std::unique_ptr<broker_process>> brokers_;
};

TEST_F(cluster_failover, a_killed_leader_fails_over_and_comes_back_as_a_truncated_follower) {
  const std::string topic = "failover";
  for (int32_t id = 1; id <= 3; ++id) ASSERT_TRUE(wait_for_brokers(port(id), 3)) << "broker " << id;
  ASSERT_EQ(create_topic(port(1), topic, 1, {{"min.insync.replicas", "2"}}, 3), 0);
  // A topic of three partitions: every replica opens every partition's log, though the states
  // reach it one by one (a topic adopted at the first one's must not miss the later ones).
  ASSERT_EQ(create_topic(port(1), "spread", 3, {}, 3), 0);
  for (int32_t id = 1; id <= 3; ++id) {
    auto p = wait_for_partition(port(id), topic, [](const partition_view& v) {
      return v.leader == 1 && v.isr.size() == 3;
    });
    ASSERT_TRUE(p && p->leader == 1 && p->isr.size() == 3) << "broker " << id;
    EXPECT_EQ(p->leader_epoch, 0);
  }

  for (int32_t id = 1; id <= 3; ++id) {
    for (int32_t p = 0; p < 3; ++p) {
      const auto log =
          broker(id).data_dir() / ("spread-" + std::to_string(p)) / "00000000000000000000.log";
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (!std::filesystem::exists(log) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(20ms);
      }
      EXPECT_TRUE(std::filesystem::exists(log)) << log;
    }
  }

  // Five idempotent batches, acks=all: every replica has them.
  std::vector<std::vector<uint8_t>> acked;
  {
    raw_client leader(port(1));
    for (int32_t seq = 0; seq < 5; ++seq) {
      acked.push_back(idempotent_batch("acked-" + std::to_string(seq), seq));
      auto a = produce_with(leader, seq + 1, topic, acked.back(), -1);
      ASSERT_EQ(a.error_code, 0) << "sequence " << seq;
      EXPECT_EQ(a.base_offset, seq);
    }
    // The followers paused (within their sessions and the lag bound); once their fetches in
    // flight have been answered (replica.fetch.wait.max.ms), two records with acks=1 reach the
    // leader alone.
    ASSERT_TRUE(stop_process(broker(2).process()));
    ASSERT_TRUE(stop_process(broker(3).process()));
    std::this_thread::sleep_for(400ms);
    for (int i = 0; i < 2; ++i) {
      auto a =
          produce_with(leader, 10 + i, topic, value_batch("only-on-1-" + std::to_string(i)), 1);
      ASSERT_EQ(a.error_code, 0);
      EXPECT_EQ(a.base_offset, 5 + i);
    }
  }
  const std::string checkpoint_before =
      file_bytes(partition_dir(1, topic) / "leader-epoch-checkpoint");
  EXPECT_EQ(checkpoint_before, "0\n1\n0 0\n");

  // kill -9 of the leader; the followers resume at once.
  broker(1).process().send_signal(SIGKILL);
  ASSERT_TRUE(broker(1).process().wait_exit(10s).has_value());
  const auto killed = std::chrono::steady_clock::now();
  if (std::getenv("TARN_FAILOVER_TIMELINE") != nullptr) {
    const auto wall = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(wall);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch());
    std::tm tm{};
    localtime_r(&t, &tm);
    std::cout << "kill -9 of broker 1 at " << std::put_time(&tm, "%H:%M:%S") << "."
              << std::setfill('0') << std::setw(3) << ms.count() % 1000 << "\n";
  }
  broker(2).process().send_signal(SIGCONT);
  broker(3).process().send_signal(SIGCONT);

  // Broker 2 (the next in-sync replica in replica order) leads at leader epoch 1, the dead one
  // out of the ISR; every live broker says so.
  auto moved = wait_for_partition(
      port(2), topic, [](const partition_view& v) { return v.leader == 2; }, 15s);
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - killed);
  ASSERT_TRUE(moved && moved->leader == 2);
  EXPECT_EQ(moved->leader_epoch, 1);
  EXPECT_EQ(moved->error, 0);
  EXPECT_EQ(sorted(moved->isr), (std::vector<int32_t>{2, 3}));
  // The lease's TTL is the session (2 s); etcd notices its expiry within about half a second.
  EXPECT_LT(elapsed.count(), session_timeout_ms() + 1500) << "fail-over took " << elapsed.count();
  std::cout << "leader moved " << elapsed.count() << " ms after kill -9\n";
  auto on3 = wait_for_partition(port(3), topic,
                                [](const partition_view& v) { return v.leader_epoch == 1; });
  ASSERT_TRUE(on3);
  EXPECT_EQ(on3->leader, 2);

  raw_client leader(port(2));
  int32_t correlation = 100;
  // The idempotent producer's retry of its last batch (its answer was lost, say) is answered
  // with the original offset and not written again: the follower kept the producer's state.
  {
    auto retry = produce_with(leader, correlation++, topic, acked[4], -1);
    ASSERT_EQ(retry.error_code, 0);
    EXPECT_EQ(retry.base_offset, 4);
    // Its sequence goes on (no OUT_OF_ORDER_SEQUENCE_NUMBER) at the new leader's log end, acks=all
    // answered once broker 3 fetched it from the new leader.
    acked.push_back(idempotent_batch("acked-5", 5));
    auto next = produce_with(leader, correlation++, topic, acked.back(), -1);
    ASSERT_EQ(next.error_code, 0);
    EXPECT_EQ(next.base_offset, 5);
    std::cout << "first new record acknowledged (acks=all) by the new leader "
              << std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - killed)
                     .count()
              << " ms after kill -9\n";
    // A gap is still refused: the sequence is known.
    auto gap = produce_with(leader, correlation++, topic, idempotent_batch("gap", 9), -1);
    EXPECT_EQ(gap.error_code, code(error_code::out_of_order_sequence_number));
    for (int i = 0; i < 2; ++i) {
      acked.push_back(value_batch("after-" + std::to_string(i)));
      auto a = produce_with(leader, correlation++, topic, acked.back(), -1);
      ASSERT_EQ(a.error_code, 0);
      EXPECT_EQ(a.base_offset, 6 + i);
    }
  }
  // Every acknowledged record is there, at its offset; the batches of the new leader carry its
  // epoch, the older ones epoch 0; the acks=1 records of the old leader are gone.
  auto read = fetch_all(port(2), topic, 0);
  ASSERT_EQ(read.size(), acked.size());
  for (size_t i = 0; i < acked.size(); ++i) {
    const auto& stored = read[static_cast<int64_t>(i)];
    EXPECT_TRUE(same_batch(stored, acked[i])) << "offset " << i;
    EXPECT_EQ(leader_epoch_of(stored), i < 5 ? 0 : 1) << "offset " << i;
  }
  EXPECT_EQ(file_bytes(partition_dir(2, topic) / "leader-epoch-checkpoint"), "0\n2\n0 0\n1 5\n");

  // OffsetForLeaderEpoch on the new leader: epoch 0 ends where epoch 1 starts; a request with the
  // old leader epoch is fenced. ListOffsets LATEST reports the new epoch.
  {
    kafka_conn c(port(2), nullptr);
    protocol::offset_for_leader_epoch_request req;
    req.replica_id = -1;
    auto& t = req.topics.emplace_back();
    t.topic = topic;
    auto& p = t.partitions.emplace_back();
    p.partition = 0;
    p.current_leader_epoch = 1;
    p.leader_epoch = 0;
    auto& stale = t.partitions.emplace_back();
    stale.partition = 0;
    stale.current_leader_epoch = 0;
    stale.leader_epoch = 0;
    auto r = c.call<protocol::offset_for_leader_epoch_response>(req, 4);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->topics.size(), 1u);
    ASSERT_EQ(r->topics[0].partitions.size(), 2u);
    EXPECT_EQ(r->topics[0].partitions[0].error_code, 0);
    EXPECT_EQ(r->topics[0].partitions[0].leader_epoch, 0);
    EXPECT_EQ(r->topics[0].partitions[0].end_offset, 5);
    EXPECT_EQ(r->topics[0].partitions[1].error_code, code(error_code::fenced_leader_epoch));

    protocol::list_offsets_request lo;
    lo.replica_id = -1;
    auto& lt = lo.topics.emplace_back();
    lt.name = topic;
    auto& lp = lt.partitions.emplace_back();
    lp.partition_index = 0;
    lp.current_leader_epoch = 1;
    lp.timestamp = -1;
    auto latest = c.call<protocol::list_offsets_response>(lo, 7);
    ASSERT_TRUE(latest);
    const auto& answer = latest->topics.at(0).partitions.at(0);
    EXPECT_EQ(answer.error_code, 0);
    EXPECT_EQ(answer.offset, 8);
    EXPECT_EQ(answer.leader_epoch, 1);
  }
  // A produce on the follower is refused with KIP-951's hint: the leader, its epoch, where it is.
  {
    kafka_conn c(port(3), nullptr);
    protocol::produce_request req;
    req.acks = -1;
    req.timeout_ms = 10000;
    auto& t = req.topic_data.emplace_back();
    t.name = topic;
    auto& p = t.partition_data.emplace_back();
    p.index = 0;
    const auto batch = value_batch("not here");
    p.records = batch;
    auto r = c.call<protocol::produce_response>(req, 11);
    ASSERT_TRUE(r);
    const auto& pr = r->responses.at(0).partition_responses.at(0);
    EXPECT_EQ(pr.error_code, code(error_code::not_leader_or_follower));
    EXPECT_EQ(pr.current_leader.leader_id, 2);
    EXPECT_EQ(pr.current_leader.leader_epoch, 1);
    ASSERT_EQ(r->node_endpoints.size(), 1u);
    EXPECT_EQ(r->node_endpoints[0].node_id, 2);
    EXPECT_EQ(r->node_endpoints[0].port, port(2));
  }

  // The old leader restarted on its data: a follower now, it truncates the two records the new
  // leader never had, fetches what it missed and joins the ISR again; its segment and epoch
  // checkpoint are the leader's, byte for byte.
  const std::filesystem::path data1 = broker(1).data_dir();
  retired_.push_back(std::move(brokers_[0]));
  brokers_[0] = std::make_unique<broker_process>(failover_args(*etcd_, 1), data1);
  ASSERT_NE(port(1), 0) << broker(1).output();
  {
    // From its first moment it knows it no longer leads: a consumer or producer with stale
    // metadata is refused, not served from (or acknowledged into) a log the leader does not
    // share; its records at 5 and 6 were never committed. A consumer's Fetch below v11 reads
    // only leaders; from v11 a follower serves its copy up to its high watermark (KIP-392, as
    // Kafka's): never its records at 5 and 6 (epoch 0), at most the new leader's once it has
    // truncated and caught up (epoch 1).
    raw_client stale(port(1));
    {
      protocol::fetch_request old;
      old.replica_id = -1;
      old.max_bytes = 1 << 20;
      old.session_epoch = -1;
      auto& ft = old.topics.emplace_back();
      ft.topic = topic;
      auto& fp = ft.partitions.emplace_back();
      fp.fetch_offset = 5;
      fp.partition_max_bytes = 1 << 20;
      kafka_conn c(port(1), nullptr);
      auto r = c.call<protocol::fetch_response>(old, 10);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->responses.at(0).partitions.at(0).error_code,
                code(error_code::not_leader_or_follower));
    }
    ASSERT_TRUE(stale.send_bytes(fetch_frame(1, topic, 0, 5, 0, 1)));
    const fetch_answer read_at_5 = decode_fetch(stale.read_frame(10s));
    EXPECT_TRUE(read_at_5.error_code == code(error_code::not_leader_or_follower) ||
                read_at_5.error_code == 0)
        << read_at_5.error_code;
    if (!read_at_5.records.empty()) {
      EXPECT_EQ(read_at_5.error_code, 0);
      EXPECT_EQ(leader_epoch_of(read_at_5.records), 1);
    }
    auto refused = produce_with(stale, 2, topic, value_batch("stale"), -1);
    EXPECT_EQ(refused.error_code, code(error_code::not_leader_or_follower));
  }
  auto rejoined = wait_for_partition(
      port(2), topic, [](const partition_view& v) { return v.isr.size() == 3; }, 10s);
  ASSERT_TRUE(rejoined);
  EXPECT_EQ(sorted(rejoined->isr), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(rejoined->leader, 2);
  EXPECT_EQ(rejoined->leader_epoch, 1);
  EXPECT_TRUE(broker(1).process().wait_for_output("truncated from 7 to 5", 5s))
      << broker(1).output();
  const std::string segment = "00000000000000000000.log";
  const std::string leader_segment = file_bytes(partition_dir(2, topic) / segment);
  ASSERT_FALSE(leader_segment.empty());
  for (int32_t id : {1, 3}) {
    EXPECT_EQ(file_bytes(partition_dir(id, topic) / segment), leader_segment) << "broker " << id;
    EXPECT_EQ(file_bytes(partition_dir(id, topic) / "leader-epoch-checkpoint"), "0\n2\n0 0\n1 5\n")
        << "broker " << id;
  }
  // Producing goes on, acks=all with all three.
  auto a = produce_with(leader, correlation++, topic, value_batch("all three again"), -1);
  EXPECT_EQ(a.error_code, 0);
  EXPECT_EQ(a.base_offset, 8);
  print_timeline("broker 1 (killed)", retired_[0]->output());
  print_timeline("broker 1 (restarted)", broker(1).output());
  print_timeline("broker 2", broker(2).output());
  print_timeline("broker 3", broker(3).output());
}

// Real clients across a fail-over: `client` (a command, then its mode and arguments as
// tests/python/failover_clients.py and tests/java/FailoverClients.java take them) produces
// idempotently with acks=all to a topic with replication factor 3 and min.insync.replicas=2
// (three partitions, all led by broker 1, their creator) while broker 1 is killed with SIGKILL;
// the producer learns the new leaders from Metadata (and KIP-951's hints where it reads them),
// and every record is acknowledged once. Broker 1 is started again (as its supervisor would;
// __consumer_offsets wants three replicas), then a consumer in a group reads every acknowledged
// record exactly once, in order, at the offset it was acknowledged at.
void cluster_failover::clients_across_a_fail_over(const std::vector<std::string>& client) {
  const std::string topic = "clients";
  ASSERT_EQ(create_topic(port(1), topic, 3, {{"min.insync.replicas", "2"}}, 3), 0);
  for (int32_t p = 0; p < 3; ++p) {
    ASSERT_TRUE(wait_for_partition(
        port(3), topic, [](const partition_view& v) { return v.isr.size() == 3; }, 10s, p));
  }
  const std::string bootstrap = "127.0.0.1:" + std::to_string(port(1)) +
                                ",127.0.0.1:" + std::to_string(port(2)) +
                                ",127.0.0.1:" + std::to_string(port(3));
  temp_dir tmp;
  const std::string acked = (tmp.path() / "acked").string();
  auto args = client;
  for (const std::string& a :
       {std::string("produce"), bootstrap, topic, std::string("3"), std::string("3.5"), acked}) {
    args.push_back(a);
  }
  child_process producer(args);
  ASSERT_TRUE(producer.wait_for_output("started", 60s)) << producer.output();

  broker(1).process().send_signal(SIGKILL);
  ASSERT_TRUE(broker(1).process().wait_exit(10s));
  const auto moved = wait_for_partition(
      port(2), topic, [](const partition_view& v) { return v.leader != 1 && v.leader > 0; }, 20s);
  ASSERT_TRUE(moved) << broker(2).output();
  auto produced = producer.wait_exit(90s);
  ASSERT_TRUE(produced);
  std::cout << producer.output();
  EXPECT_EQ(produced->code, 0) << producer.output();

  const std::filesystem::path data1 = broker(1).data_dir();
  retired_.push_back(std::move(brokers_[0]));
  brokers_[0] = std::make_unique<broker_process>(failover_args(*etcd_, 1), data1);
  ASSERT_NE(port(1), 0) << broker(1).output();
  std::string command = "timeout 90";
  for (const auto& c : client) command += " '" + c + "'";
  const auto [rc, out] =
      run_command(command + " consume " + bootstrap + " " + topic + " readers " + acked + " 30");
  std::cout << out;
  EXPECT_EQ(rc, 0) << out;
}

// confluent-kafka-python on librdkafka 2.0: about 7 s.
TEST_F(cluster_failover, confluent_kafka_clients_see_every_acknowledged_record_once) {
  const std::string python = "/usr/bin/python3";  // Debian's, with confluent_kafka
  if (run_command(python + " -c 'import confluent_kafka'").first != 0) {
    GTEST_SKIP() << "confluent_kafka not installed";
  }
  clients_across_a_fail_over(
      {python, std::string(TARN_SOURCE_DIR) + "/tests/python/failover_clients.py"});
}

// kafka-python 2.0.2 (Debian's python3-kafka): an acks=all producer with retries (no idempotence
// in 2.0.2: a retry's copy of an unacknowledged batch is allowed, tests/python/
// failover_kafka_python.py) and a KafkaConsumer in a group.
TEST_F(cluster_failover, kafka_python_clients_see_every_acknowledged_record_once) {
  const std::string python = "/usr/bin/python3";  // Debian's, with kafka-python
  if (run_command(python + " -c 'import kafka'").first != 0) {
    GTEST_SKIP() << "kafka-python not installed (scripts/install-deps: python3-kafka)";
  }
  clients_across_a_fail_over(
      {python, std::string(TARN_SOURCE_DIR) + "/tests/python/failover_kafka_python.py"});
}

// Kafka 4.4.0's KafkaProducer and KafkaConsumer (classic group protocol): about 20 s with two JVM
// starts, so its name puts it in make interop (tests/kafka_tests.regex), not make test; it starts
// no Kafka broker.
TEST_F(cluster_failover, java_clients_see_every_acknowledged_record_once_against_kafka_jars) {
#ifdef TARN_SANITIZED_BUILD
  GTEST_SKIP() << "the Java clients run in the release build only";
#else
  const std::string libs = kafka_libs();
  if (libs.empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
  clients_across_a_fail_over({"/usr/bin/java", "-cp", libs + "/*",
                              std::string(TARN_SOURCE_DIR) + "/tests/java/FailoverClients.java"});
#endif
}

}  // namespace
}  // namespace tarn::test
