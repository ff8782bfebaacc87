// The fault-injection checker (cluster_checker.h): its analysis on hand-made histories (no
// processes), runs against a three-node Apache Kafka 4.4.0 KRaft cluster with kills, pauses,
// restarts and network partitions (the reference: it must find nothing; make interop), and runs
// against a three-broker tarn cluster on etcd: without faults (make test), with kills, pauses,
// etcd member kills and network partitions (make soak); and an isolated tarn leader's answers
// to acks=all (make test).
// Run time and seed: TARN_CLUSTER_CHECK_SECONDS, TARN_CLUSTER_CHECK_SEED (make soak sets them).
#include "cluster_checker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster_harness.h"
#include "kafka_conn.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using checker::analyze;
using checker::history;
using checker::read_op;
using checker::write_op;
using checker::write_outcome;

int env_or(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

write_op acked(std::string value, int32_t partition, int64_t offset) {
  return {std::move(value), partition, write_outcome::acknowledged, offset};
}
write_op unknown(std::string value, int32_t partition) {
  return {std::move(value), partition, write_outcome::indeterminate, -1};
}
read_op seen(int32_t partition, int64_t offset, std::string value, bool final = true) {
  return {partition, offset, std::move(value), final};
}

// ---- the analysis ----

TEST(cluster_checker, analysis_of_a_clean_history_is_valid) {
  history h;
  h.writes = {acked("w0-0", 0, 0),
              acked("w0-1", 0, 1),
              acked("w1-0", 1, 0),
              unknown("w1-1", 1),
              {"w1-2", 1, write_outcome::failed, -1}};
  h.reads = {seen(0, 0, "w0-0", false), seen(0, 0, "w0-0"), seen(0, 1, "w0-1"), seen(1, 0, "w1-0"),
             seen(1, 1, "w1-1")};
  h.final_read_complete = true;
  auto a = analyze(h);
  EXPECT_TRUE(a.valid()) << a.summary();
  EXPECT_EQ(a.writes, 5u);
  EXPECT_EQ(a.acknowledged, 3u);
  EXPECT_EQ(a.failed, 1u);
  EXPECT_EQ(a.indeterminate, 1u);
  EXPECT_EQ(a.recovered, 1u);  // the indeterminate write was read
  EXPECT_TRUE(a.unseen.empty());
  EXPECT_EQ(a.reads, 5u);
  EXPECT_EQ(a.final_reads, 4u);
}

TEST(cluster_checker, analysis_finds_an_acknowledged_write_missing_from_the_final_read) {
  history h;
  h.writes = {acked("w0-0", 0, 0), acked("w0-1", 0, 1)};
  h.reads = {seen(0, 0, "w0-0")};
  h.final_read_complete = true;
  auto a = analyze(h);
  EXPECT_FALSE(a.valid());
  ASSERT_EQ(a.lost.size(), 1u) << a.summary();
  EXPECT_EQ(a.lost[0], "w0-1 acknowledged at 0/1, absent from the final read");
  EXPECT_TRUE(a.duplicates.empty());
  EXPECT_TRUE(a.inconsistent_offsets.empty());
}

TEST(cluster_checker, analysis_finds_a_value_read_during_the_run_then_gone) {
  history h;
  h.writes = {unknown("w0-0", 2)};
  h.reads = {seen(2, 7, "w0-0", false)};  // read, so committed, yet not in the final read
  h.final_read_complete = true;
  auto a = analyze(h);
  ASSERT_EQ(a.lost.size(), 1u) << a.summary();
  EXPECT_EQ(a.lost[0], "w0-0 read at 2/7 during the run, absent from the final read");
  EXPECT_EQ(a.recovered, 1u);
}

TEST(cluster_checker, analysis_judges_no_loss_without_a_complete_final_read) {
  history h;
  h.writes = {acked("w0-0", 0, 0)};
  h.final_read_complete = false;
  auto a = analyze(h);
  EXPECT_TRUE(a.lost.empty());
  EXPECT_FALSE(a.valid()) << "no verdict without the final read";
  EXPECT_NE(a.summary().find("did not complete"), std::string::npos) << a.summary();
}

TEST(cluster_checker, analysis_finds_a_duplicate) {
  history h;
  h.writes = {acked("w0-0", 0, 0), unknown("w0-1", 0)};
  // A retried send appended twice (the idempotent producer's dedup failed).
  h.reads = {seen(0, 0, "w0-0"), seen(0, 1, "w0-1"), seen(0, 2, "w0-1")};
  h.final_read_complete = true;
  auto a = analyze(h);
  EXPECT_FALSE(a.valid());
  ASSERT_EQ(a.duplicates.size(), 1u) << a.summary();
  EXPECT_EQ(a.duplicates[0], "w0-1 at 0/1 (final read) 0/2 (final read)");
  EXPECT_TRUE(a.lost.empty());
  EXPECT_TRUE(a.inconsistent_offsets.empty());
}

TEST(cluster_checker, analysis_finds_an_ack_at_another_offset_than_read) {
  history h;
  h.writes = {acked("w0-0", 1, 4)};
  h.reads = {seen(1, 5, "w0-0")};
  h.final_read_complete = true;
  auto a = analyze(h);
  ASSERT_EQ(a.duplicates.size(), 1u) << a.summary();
  EXPECT_EQ(a.duplicates[0], "w0-0 at 1/4 (ack) 1/5 (final read)");
}

TEST(cluster_checker, analysis_finds_inconsistent_offsets_across_reads_and_acks) {
  history h;
  h.writes = {acked("w0-0", 0, 3), acked("w1-0", 0, 4), unknown("w2-0", 0)};
  // Offset 3 read with another value than acknowledged (a truncated leader's log reused it);
  // offset 4 read with two values by two reads during the run.
  h.reads = {seen(0, 3, "w2-0", false), seen(0, 4, "w1-0", false), seen(0, 4, "w0-0"),
             seen(0, 3, "w2-0")};
  h.final_read_complete = true;
  auto a = analyze(h);
  EXPECT_FALSE(a.valid());
  ASSERT_EQ(a.inconsistent_offsets.size(), 2u) << a.summary();
  EXPECT_EQ(a.inconsistent_offsets[0], "0/3 holds w0-0 (ack) w2-0 (final read, read)");
  EXPECT_EQ(a.inconsistent_offsets[1], "0/4 holds w0-0 (final read) w1-0 (ack, read)");
  // w0-0 was acknowledged at 3 and read at 4; w1-0 was acknowledged, then vanished.
  ASSERT_EQ(a.duplicates.size(), 1u);
  EXPECT_EQ(a.duplicates[0], "w0-0 at 0/3 (ack) 0/4 (final read)");
  ASSERT_EQ(a.lost.size(), 1u);
  EXPECT_EQ(a.lost[0], "w1-0 acknowledged at 0/4, absent from the final read");
}

TEST(cluster_checker, analysis_finds_phantoms_and_lists_unseen_writes_without_failing) {
  history h;
  h.writes = {acked("w0-0", 0, 0), unknown("w0-1", 0), {"w0-2", 0, write_outcome::failed, -1}};
  h.reads = {seen(0, 0, "w0-0"), seen(0, 1, "w0-2"), seen(0, 2, "garbage")};
  h.final_read_complete = true;
  auto a = analyze(h);
  ASSERT_EQ(a.phantoms.size(), 2u) << a.summary();
  EXPECT_EQ(a.phantoms[0], "garbage read at 0/2, never sent");
  EXPECT_EQ(a.phantoms[1], "w0-2 read at 0/1, its send was refused before it left the client");
  ASSERT_EQ(a.unseen.size(), 1u);
  EXPECT_EQ(a.unseen[0], "w0-1 (partition 0)");

  h.reads.pop_back();
  h.reads.pop_back();
  a = analyze(h);
  EXPECT_TRUE(a.valid()) << "an unseen indeterminate write is allowed: " << a.summary();
  EXPECT_EQ(a.unseen.size(), 1u);
}

TEST(cluster_checker, analysis_finds_one_producers_writes_out_of_send_order) {
  history h;
  auto sent = [](std::string value, int64_t offset, int writer, int instance, int64_t sequence) {
    write_op w = acked(std::move(value), 0, offset);
    w.writer = writer;
    w.instance = instance;
    w.sequence = sequence;
    return w;
  };
  h.writes = {sent("w0-0", 0, 0, 0, 0), sent("w0-1", 2, 0, 0, 1), sent("w0-2", 1, 0, 0, 2),
              // Another writer, and a new instance of the first: their order is their own.
              sent("w1-0", 4, 1, 0, 0), sent("w0-3", 3, 0, 1, 3)};
  for (const auto& w : h.writes) h.reads.push_back(seen(0, w.offset, w.value));
  h.final_read_complete = true;
  auto a = analyze(h);
  EXPECT_FALSE(a.valid());
  ASSERT_EQ(a.reordered.size(), 1u) << a.summary();
  EXPECT_EQ(a.reordered[0], "w0-2 at 0/1, sent after w0-1 at 0/2");
}

TEST(cluster_checker, analysis_of_a_large_history_is_fast) {
  history h;
  for (int64_t i = 0; i < 50'000; ++i) {
    const auto p = static_cast<int32_t>(i % 3);
    h.writes.push_back(acked("w" + std::to_string(i % 4) + "-" + std::to_string(i), p, i / 3));
    h.reads.push_back(seen(p, i / 3, h.writes.back().value, false));
    h.reads.push_back(seen(p, i / 3, h.writes.back().value));
  }
  h.final_read_complete = true;
  const auto started = clock_type::now();
  auto a = analyze(h);
  const auto took = clock_type::now() - started;
  EXPECT_TRUE(a.valid()) << a.summary();
  // Near-linear: a quadratic analysis would take minutes here; generous for sanitizer trees.
  EXPECT_LT(took, 30s);
}

// ---- runs against clusters ----

void report(const checker::run_result& r, const cluster_harness& cluster) {
  std::cout << "cluster_checker against " << cluster.name() << ": " << r.a.summary(20)
            << r.producer_instances << " producer instances, " << r.consumer_restarts
            << " consumer restarts\n";
  for (const auto& line : r.nemesis_log) std::cout << "  " << line << "\n";
}

// After a failed run, every node's whole log (all its starts) into $TARN_TEST_LOG_DIR when set:
// the message's tails show only the last start of each node.
void save_logs_on_failure(const cluster_harness& cluster) {
  const char* dir = std::getenv("TARN_TEST_LOG_DIR");
  if (dir == nullptr || !::testing::Test::HasFailure()) return;
  const std::filesystem::path into =
      std::filesystem::path(dir) / ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::error_code ec;
  std::filesystem::create_directories(into, ec);
  cluster.save_logs(into);
  std::cout << "cluster_checker: the nodes' logs are in " << into.string() << "\n";
}

// The network-partition runs' faults (a node isolated, a link cut, again, a pause) for
// TARN_CLUSTER_CHECK_SECONDS (default_seconds unset) from TARN_CLUSTER_CHECK_SEED, each fault up
// to fault_max.
checker::options partition_options(int default_seconds, std::chrono::milliseconds fault_max) {
  checker::options o;
  o.duration = std::chrono::seconds(env_or("TARN_CLUSTER_CHECK_SECONDS", default_seconds));
  o.seed = static_cast<uint32_t>(env_or("TARN_CLUSTER_CHECK_SEED", 1));
  o.faults = {checker::fault::isolate, checker::fault::cut, checker::fault::isolate,
              checker::fault::pause};
  o.fault_max = fault_max;
  return o;
}

// Kills (-9), pauses (SIGSTOP) and graceful restarts of one node at a time for
// TARN_CLUSTER_CHECK_SECONDS (60 by default) against Kafka 4.4.0: the reference, so the checker
// itself is checked. Its name puts it in make interop (tests/kafka_tests.regex).
TEST(cluster_checker, kills_and_pauses_lose_nothing_against_kafka) {
#ifdef TARN_SANITIZED_BUILD
  GTEST_SKIP() << "the Kafka 4.4.0 reference runs in the release build only";
#else
  if (!have_program("java") || !have_program("kcat")) GTEST_SKIP() << "java or kcat missing";
  auto cluster = make_kafka_cluster(3);
  const std::string error = cluster->start();
  ASSERT_EQ(error, "");
  checker::options o;
  o.duration = std::chrono::seconds(env_or("TARN_CLUSTER_CHECK_SECONDS", 60));
  o.seed = static_cast<uint32_t>(env_or("TARN_CLUSTER_CHECK_SEED", 1));
  o.faults = {checker::fault::kill, checker::fault::pause, checker::fault::stop};
  // min.insync.replicas=2 is the cluster's (kafka-ref cluster-start); said again on the topic.
  o.topic_configs = {{"min.insync.replicas", "2"}, {"unclean.leader.election.enable", "false"}};
  // TARN_CLUSTER_CHECK_ACKS=1 checks the checker: acks=1 without idempotence, min.insync=1 and
  // unclean election may lose or duplicate writes, and the test should then fail.
  if (const char* acks = std::getenv("TARN_CLUSTER_CHECK_ACKS"); acks && *acks) {
    o.acks = acks;
    o.topic_configs = {{"min.insync.replicas", "1"}, {"unclean.leader.election.enable", "true"}};
  }
  auto r = checker::run(*cluster, o);
  report(r, *cluster);
  ASSERT_EQ(r.error, "") << cluster->diagnostics();
  EXPECT_TRUE(r.a.valid()) << r.a.summary(20) << cluster->diagnostics();
  save_logs_on_failure(*cluster);
  EXPECT_GT(r.a.acknowledged, 0u);
  EXPECT_GE(r.nemesis_log.size(), 4u) << "at least one fault and its heal";
#endif
}

// Network partitions between Kafka's nodes (nftables rules on the packets of each node's cgroup:
// scripts/kafka-ref partition) for TARN_CLUSTER_CHECK_SECONDS: a node cut off from the others
// (the old leader keeps clients' requests it can no longer commit) or one link cut, each for up
// to 8 s (past the 3 s session timeout), and pauses between. Skipped where partitions cannot be
// made (not root, no nft, cgroup v2 not under /sys/fs/cgroup).
TEST(cluster_checker, partitions_lose_nothing_against_kafka) {
#ifdef TARN_SANITIZED_BUILD
  GTEST_SKIP() << "the Kafka 4.4.0 reference runs in the release build only";
#else
  if (!have_program("java") || !have_program("kcat")) GTEST_SKIP() << "java or kcat missing";
  auto cluster = make_kafka_cluster(3);
  const std::string error = cluster->start();
  ASSERT_EQ(error, "");
  if (!cluster->can_partition()) {
    GTEST_SKIP() << "no partitions here: they need root, nft and cgroup v2 under /sys/fs/cgroup";
  }
  checker::options o = partition_options(60, std::chrono::milliseconds(8000));
  o.topic_configs = {{"min.insync.replicas", "2"}, {"unclean.leader.election.enable", "false"}};
  auto r = checker::run(*cluster, o);
  report(r, *cluster);
  ASSERT_EQ(r.error, "") << cluster->diagnostics();
  EXPECT_TRUE(r.a.valid()) << r.a.summary(20) << cluster->diagnostics();
  save_logs_on_failure(*cluster);
  EXPECT_GT(r.a.acknowledged, 0u);
  EXPECT_GE(r.nemesis_log.size(), 4u) << "at least one fault and its heal";
#endif
}

// tarn's cluster today: three brokers on etcd, no replication yet, so a single-replica topic
// (its creator leads every partition) and no faults: the harness, the client library against a
// cluster and the checker's plumbing, in a few seconds.
TEST(cluster_checker, tarn_cluster_without_faults_loses_nothing) {
  auto cluster = make_tarn_cluster(3);
  const std::string error = cluster->start();
  if (error.find("not installed") != std::string::npos) GTEST_SKIP() << error;
  ASSERT_EQ(error, "");
  checker::options o;
  o.duration = std::chrono::seconds(env_or("TARN_CLUSTER_CHECK_TARN_SECONDS", 3));
  o.replication_factor = 1;
  o.writes_per_second = 300;
  auto r = checker::run(*cluster, o);
  report(r, *cluster);
  ASSERT_EQ(r.error, "") << cluster->diagnostics();
  EXPECT_TRUE(r.a.valid()) << r.a.summary(20) << cluster->diagnostics();
  save_logs_on_failure(*cluster);
  EXPECT_GT(r.a.acknowledged, 0u);
  EXPECT_EQ(r.a.acknowledged, r.a.writes) << "nothing fails without faults";
}

// tarn's cluster today under kill -9 and SIGTERM of one broker at a time, restarted on its port
// and data: a single-replica topic's leader (its creator) dies too, so its partitions are away
// until it is back, and the idempotent producers' retries must land once each. Soak only (make
// soak sets TARN_CLUSTER_CHECK_SECONDS; 25 s by hand: valid, 11,268 writes, 5 faults).
TEST(cluster_checker, tarn_single_replica_kills_lose_nothing) {
  if (std::getenv("TARN_CLUSTER_CHECK_SECONDS") == nullptr) {
    GTEST_SKIP() << "make soak runs it (TARN_CLUSTER_CHECK_SECONDS)";
  }
  auto cluster = make_tarn_cluster(3);
  const std::string error = cluster->start();
  if (error.find("not installed") != std::string::npos) GTEST_SKIP() << error;
  ASSERT_EQ(error, "");
  checker::options o;
  o.duration = std::chrono::seconds(env_or("TARN_CLUSTER_CHECK_SECONDS", 30));
  o.seed = static_cast<uint32_t>(env_or("TARN_CLUSTER_CHECK_SEED", 1));
  o.replication_factor = 1;
  // A broker paused past its session (2 s) is fenced and exits: no pauses, faults under 3 s.
  o.faults = {checker::fault::kill, checker::fault::stop};
  o.fault_max = std::chrono::milliseconds(3000);
  auto r = checker::run(*cluster, o);
  report(r, *cluster);
  ASSERT_EQ(r.error, "") << cluster->diagnostics();
  EXPECT_TRUE(r.a.valid()) << r.a.summary(20) << cluster->diagnostics();
  save_logs_on_failure(*cluster);
  EXPECT_GT(r.a.acknowledged, 0u);
}

// The same run as against Kafka, with tarn's leaders failing over (docs/cluster.md,
// "Fail-over"): replication factor 3, min.insync.replicas=2, unclean election off; kill -9,
// pauses (one past the 2 s session is fenced, exits and is started again, as its supervisor
// would), SIGTERM and restarts of one broker at a time, and kills of one etcd member of three.
// Short in make test (30 s, a handful of faults; the release build only: under the sanitizers
// the brokers miss their 2 s sessions for want of CPU, which is not what this run checks), long
// in make soak (TARN_CLUSTER_CHECK_SECONDS).
TEST(cluster_checker, tarn_kills_and_pauses_lose_nothing) {
#ifdef TARN_SANITIZED_BUILD
  if (std::getenv("TARN_CLUSTER_CHECK_SECONDS") == nullptr) {
    GTEST_SKIP() << "the short run is the release build's; make soak runs it long";
  }
#endif
  auto cluster = make_tarn_cluster(3,
                                   {"default.replication.factor=3", "min.insync.replicas=2",
                                    "unclean.leader.election.enable=false"},
                                   3);  // etcd of three members: one may be killed
  const std::string error = cluster->start();
  if (error.find("not installed") != std::string::npos) GTEST_SKIP() << error;
  ASSERT_EQ(error, "");
  checker::options o;
  o.duration = std::chrono::seconds(env_or("TARN_CLUSTER_CHECK_SECONDS", 30));
  o.seed = static_cast<uint32_t>(env_or("TARN_CLUSTER_CHECK_SEED", 1));
  o.replication_factor = 3;
  o.faults = {checker::fault::kill, checker::fault::pause, checker::fault::stop,
              checker::fault::kill_metadata};
  auto r = checker::run(*cluster, o);
  report(r, *cluster);
  ASSERT_EQ(r.error, "") << cluster->diagnostics();
  EXPECT_TRUE(r.a.valid()) << r.a.summary(20) << cluster->diagnostics();
  save_logs_on_failure(*cluster);
  EXPECT_GT(r.a.acknowledged, 0u);
  EXPECT_GE(r.nemesis_log.size(), 4u) << "at least one fault and its heal";
}

// Partition 0's leader epoch as the broker on `port` reports it in Metadata v12; -1 without one.
// The topic's partitions as node `node` describes them.
std::optional<std::vector<partition_view>> describe_on_node(const cluster_harness& cluster,
                                                            int node, const std::string& topic) {
  kafka_conn c(cluster.port(node), nullptr);
  protocol::metadata_request req;
  req.allow_auto_topic_creation = false;
  req.topics.emplace().emplace_back().name = topic;
  auto r = c.call<protocol::metadata_response>(req, 12);
  if (!r || r->topics.size() != 1) return std::nullopt;
  std::vector<partition_view> out;
  for (const auto& p : r->topics[0].partitions) {
    out.push_back({p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes});
  }
  return out;
}

int32_t leader_epoch_on(uint16_t port, const std::string& topic) {
  kafka_conn c(port, nullptr);
  protocol::metadata_request req;
  req.allow_auto_topic_creation = false;
  req.topics.emplace().emplace_back().name = topic;
  auto r = c.call<protocol::metadata_response>(req, 12);
  if (!r || r->topics.size() != 1 || r->topics[0].partitions.empty()) return -1;
  return r->topics[0].partitions[0].leader_epoch;
}

// The controller id Metadata v12 answers on `port`; -2 without an answer.
int32_t controller_on(uint16_t port) {
  kafka_conn c(port, nullptr);
  protocol::metadata_request req;
  req.topics.emplace();  // no topics
  auto r = c.call<protocol::metadata_response>(req, 12);
  return r ? r->controller_id : -2;
}

// A leader cut off from the other brokers, etcd still reachable (scripts/kafka-ref partition
// --isolate): its lease lives, so it keeps its leadership at the same leader epoch, while its
// followers, whose fetches no longer reach it, leave its ISR after replica.lag.time.max.ms (the
// leader's AlterPartition goes to etcd). acks=all is then never acknowledged: the record sent as
// the cut began was appended and waited for the ISR, which shrinks to the leader alone, below
// min.insync.replicas=2, so the high watermark never passes it (KIP-966's strict min ISR) and it is
// answered REQUEST_TIMED_OUT at its timeout; the next is refused NOT_ENOUGH_REPLICAS before the
// append. Kafka's leader does the same
// when only its brokers' links are cut (its controller, which still hears it, shrinks the ISR).
// Healed, the followers catch up, rejoin the ISR and acks=all is answered again. A few seconds;
// skipped where partitions cannot be made (not root, no nft, cgroup v2 not under /sys/fs/cgroup).
TEST(cluster_checker, tarn_isolated_leader_keeps_leadership_and_refuses_acks_all) {
  auto cluster =
      make_tarn_cluster(3, {"default.replication.factor=3", "min.insync.replicas=2",
                            "replica.lag.time.max.ms=1000", "replica.fetch.wait.max.ms=100",
                            "replica.fetch.backoff.ms=100", "replica.socket.timeout.ms=2000"});
  const std::string error = cluster->start();
  if (error.find("not installed") != std::string::npos) GTEST_SKIP() << error;
  ASSERT_EQ(error, "");
  if (!cluster->can_partition()) {
    GTEST_SKIP() << "no partitions here: they need root, nft and cgroup v2 under /sys/fs/cgroup";
  }
  const std::string topic = "isolated";
  ASSERT_EQ(create_topic(*cluster, topic, 1, 3), "");
  ASSERT_TRUE(wait_fully_replicated(*cluster, topic, 20s));
  auto before = describe_topic(*cluster, topic);
  ASSERT_TRUE(before && before->size() == 1);
  const int32_t leader = (*before)[0].leader;
  ASSERT_GE(leader, 1);
  const int leader_node = leader - 1;
  const int other_node = leader_node == 0 ? 1 : 0;
  const int32_t epoch = leader_epoch_on(cluster->port(leader_node), topic);
  ASSERT_GE(epoch, 0);
  raw_client c(cluster->port(leader_node));
  int32_t correlation = 1;
  auto a = produce_one(c, correlation++, topic, 0, value_batch("before"));
  ASSERT_EQ(a.error_code, 0);

  ASSERT_TRUE(cluster->isolate(leader_node));
  // Sent as the cut begins: appended, then held for the ISR until it shrinks to the leader.
  const auto sent = clock_type::now();
  ASSERT_TRUE(c.send_bytes(
      produce_frame(correlation++, topic, 0, value_batch("as the cut began"), -1, 5000)));
  a = decode_produce(c.read_frame(30s));
  const auto waited = clock_type::now() - sent;
  EXPECT_EQ(a.error_code, protocol::code(protocol::error_code::request_timed_out));
  EXPECT_GE(waited, 4500ms) << "answered before the request's timeout";
  auto during = describe_topic(*cluster, topic);
  ASSERT_TRUE(during && during->size() == 1);
  EXPECT_EQ((*during)[0].leader, leader) << "the isolated broker keeps its lease and leadership";
  EXPECT_EQ((*during)[0].isr, std::vector<int32_t>{leader});
  // The same leader epoch, on both sides of the cut (etcd gives every broker the state).
  EXPECT_EQ(leader_epoch_on(cluster->port(leader_node), topic), epoch);
  EXPECT_EQ(leader_epoch_on(cluster->port(other_node), topic), epoch);
  a = produce_one(c, correlation++, topic, 0, value_batch("refused"));
  EXPECT_EQ(a.error_code, protocol::code(protocol::error_code::not_enough_replicas));

  ASSERT_TRUE(cluster->heal_partitions());
  ASSERT_TRUE(wait_fully_replicated(*cluster, topic, 20s)) << cluster->diagnostics();
  a = produce_one(c, correlation++, topic, 0, value_batch("after"));
  EXPECT_EQ(a.error_code, 0);

  // The same leader cut from etcd (not from the other brokers): its lease expires, so it is
  // fenced (KIP-841). It stays up and leads nothing: produces answer NOT_LEADER_OR_FOLLOWER and
  // an acks=all waiting for the ISR is never acknowledged; the controller moves the leadership.
  // What it acknowledged before (its followers fetched it) is kept by the new leader.
  std::map<std::string, int64_t> acknowledged = {{"after", a.base_offset}};
  ASSERT_TRUE(cluster->cut_from_metadata(leader_node));
  const auto cut_at = clock_type::now();
  int16_t last = 0;
  for (int i = 0; clock_type::now() - cut_at < 10s; ++i) {
    const std::string value = "cut " + std::to_string(i);
    a = produce_one(c, correlation++, topic, 0, value_batch(value));
    last = a.error_code;
    if (last == 0) acknowledged[value] = a.base_offset;
    if (last == protocol::code(protocol::error_code::not_leader_or_follower)) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(last, protocol::code(protocol::error_code::not_leader_or_follower))
      << cluster->diagnostics();
  const auto fenced_after = clock_type::now() - cut_at;
  EXPECT_LT(fenced_after, 5s) << "the session is 2 s";
  // Another broker leads, at a newer leader epoch, without the fenced broker in the ISR.
  std::optional<std::vector<partition_view>> moved;
  for (auto deadline = clock_type::now() + 10s; clock_type::now() < deadline;
       std::this_thread::sleep_for(100ms)) {
    moved = describe_on_node(*cluster, other_node, topic);
    if (moved && moved->size() == 1 && (*moved)[0].leader >= 1 && (*moved)[0].leader != leader) {
      break;
    }
  }
  ASSERT_TRUE(moved && moved->size() == 1) << cluster->diagnostics();
  const int32_t new_leader = (*moved)[0].leader;
  ASSERT_TRUE(new_leader >= 1 && new_leader != leader) << cluster->diagnostics();
  EXPECT_EQ(std::count((*moved)[0].isr.begin(), (*moved)[0].isr.end(), leader), 0);
  EXPECT_GT(leader_epoch_on(cluster->port(other_node), topic), epoch);
  raw_client to_new(cluster->port(new_leader - 1));
  a = produce_one(to_new, correlation++, topic, 0, value_batch("to the new leader"));
  EXPECT_EQ(a.error_code, 0);
  if (a.error_code == 0) acknowledged["to the new leader"] = a.base_offset;
  // Still cut: still fenced. Like a fenced Kafka broker it names another broker as controller
  // (the one it last saw, or another live one), never itself, whatever role it held before.
  a = produce_one(c, correlation++, topic, 0, value_batch("still fenced"));
  EXPECT_EQ(a.error_code, protocol::code(protocol::error_code::not_leader_or_follower));
  const int32_t named = controller_on(cluster->port(leader_node));
  EXPECT_NE(named, leader);
  EXPECT_GE(named, 1);

  // Healed: it registers again (a new broker epoch), catches up and rejoins the ISR, without a
  // restart (the same process).
  ASSERT_TRUE(cluster->heal_partitions());
  ASSERT_TRUE(wait_fully_replicated(*cluster, topic, 10s)) << cluster->diagnostics();
  EXPECT_EQ(cluster->state(leader_node), node_state::up);
  EXPECT_NE(cluster->diagnostics().find("registered again"), std::string::npos)
      << cluster->diagnostics();
  // Every acknowledged record is where it was acknowledged.
  auto stored = fetch_all(cluster->port(new_leader - 1), topic, 0);
  for (const auto& [value, offset] : acknowledged) {
    auto it = stored.find(offset);
    ASSERT_NE(it, stored.end()) << value << " at " << offset;
    EXPECT_TRUE(same_batch(it->second, value_batch(value))) << value << " at " << offset;
  }
  std::cout << "fenced "
            << std::chrono::duration_cast<std::chrono::milliseconds>(fenced_after).count()
            << " ms after the cut from etcd, " << acknowledged.size() - 1
            << " record(s) acknowledged around it\n";
}

// Network partitions between tarn's brokers, as the Kafka run makes them (nftables rules on the
// packets of each broker's cgroup: scripts/kafka-ref partition): a broker cut off from the other
// brokers, etcd still reachable (it keeps its lease, so its leaderships: its followers leave its
// ISR after replica.lag.time.max.ms, and with the ISR at itself acks=all is refused, never
// acknowledged), or one broker-to-broker link cut, each for up to 10 s, and pauses between.
// replica.lag.time.max.ms and replica.socket.timeout.ms as the Kafka cluster's (5 s), so an
// isolation outlasts the lag bound. Soak only (TARN_CLUSTER_CHECK_SECONDS); skipped where
// partitions cannot be made (not root, no nft, cgroup v2 not under /sys/fs/cgroup).
TEST(cluster_checker, tarn_partitions_lose_nothing) {
  if (std::getenv("TARN_CLUSTER_CHECK_SECONDS") == nullptr) {
    GTEST_SKIP() << "make soak runs it (TARN_CLUSTER_CHECK_SECONDS)";
  }
  auto cluster =
      make_tarn_cluster(3,
                        {"default.replication.factor=3", "min.insync.replicas=2",
                         "unclean.leader.election.enable=false", "replica.lag.time.max.ms=5000",
                         "replica.socket.timeout.ms=5000"},
                        3);
  const std::string error = cluster->start();
  if (error.find("not installed") != std::string::npos) GTEST_SKIP() << error;
  ASSERT_EQ(error, "");
  if (!cluster->can_partition()) {
    GTEST_SKIP() << "no partitions here: they need root, nft and cgroup v2 under /sys/fs/cgroup";
  }
  // Up to 10 s: an isolation outlasts the 5 s lag bound and the leader's check after it, so an
  // isolated leader's ISR shrinks to itself (and acks=all is refused) before the heal.
  checker::options o = partition_options(30, std::chrono::milliseconds(10000));
  o.replication_factor = 3;
  auto r = checker::run(*cluster, o);
  report(r, *cluster);
  ASSERT_EQ(r.error, "") << cluster->diagnostics();
  EXPECT_TRUE(r.a.valid()) << r.a.summary(20) << cluster->diagnostics();
  save_logs_on_failure(*cluster);
  EXPECT_GT(r.a.acknowledged, 0u);
  EXPECT_GE(r.nemesis_log.size(), 4u) << "at least one fault and its heal";
}

}  // namespace
}  // namespace tarn::test
