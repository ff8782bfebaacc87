// Kafka's own kafka-topics.sh (Apache Kafka 4.4.0's TopicCommand, run through scripts/kafka-ref
// tool) against a replicated cluster (docs/cluster.md, "Replication", issue 27): three brokers,
// a topic with replication factor 3 and min.insync.replicas=2. --describe shows the leader,
// replicas and ISR; a follower paused (SIGSTOP) until the ISR shrinks makes the partition
// under-replicated and at its min ISR, not unavailable and not under its min ISR; resumed, the
// partition is whole again. kafka-leader-election.sh restores preferred leaders;
// kafka-reassign-partitions.sh moves a replica (--generate, --execute, --verify, --list), then
// cancels a move it throttled (--execute --throttle, --cancel). The same scenario runs against tarn
// (etcd and three `tarn serve`) and against a three-node Kafka 4.4.0 KRaft cluster, the reference
// that checks the scenario itself: both halves start a JVM, so both are named for `make interop`
// (tests/kafka_tests.regex).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "client/config_admin.h"
#include "cluster_harness.h"
#include "kafka_ref_broker.h"
#include "kafka_test_names.h"
#include "produce_util.h"
#include "test_util.h"
#include "tool_output.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;

// One partition line of kafka-topics.sh --describe ("\tTopic: t\tPartition: 0\tLeader: 1\t
// Replicas: 1,2,3\tIsr: 1,2,3\tElr: \tLastKnownElr: ").
struct described_partition {
  int32_t partition = -1;
  int32_t leader = -2;
  std::vector<int32_t> replicas, isr;
  bool elr_empty = false;
};

std::vector<int32_t> ids_of(const std::string& list) {
  std::vector<int32_t> out;
  std::stringstream in(list);
  std::string id;
  while (std::getline(in, id, ',')) {
    if (!id.empty()) out.push_back(std::stoi(id));
  }
  return out;
}

std::vector<described_partition> partition_lines(const std::string& out) {
  static const std::regex line(
      R"(Partition: (\d+)\tLeader: (-?\d+|none)\tReplicas: ([\d,]*)\tIsr: ([\d,]*)\tElr: ([\d,]*|N/A)\tLastKnownElr: ([\d,]*|N/A))");
  std::vector<described_partition> parts;
  std::stringstream in(out);
  std::string text;
  while (std::getline(in, text)) {
    std::smatch m;
    if (!std::regex_search(text, m, line)) continue;
    described_partition p;
    p.partition = std::stoi(m[1]);
    p.leader = m[2] == "none" ? -1 : std::stoi(m[2]);
    p.replicas = ids_of(m[3]);
    p.isr = ids_of(m[4]);
    // Empty lists, or N/A where the cluster has no ELR (KIP-966 off): none either way.
    p.elr_empty = (m[5].length() == 0 || m[5] == "N/A") && (m[6].length() == 0 || m[6] == "N/A");
    parts.push_back(std::move(p));
  }
  return parts;
}

std::vector<int32_t> sorted(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// A throttled replica fetches at most one 100 KB batch a fetch (replica.fetch.max.bytes; a
// fetch still returns one batch larger than it), and a throttle's rate is measured over 11
// windows of 5 s: past its bound, a throttled replica waits until the samples that put it there
// leave the windows (55 s) before it may fetch again. With the defaults (1 MB a fetch, 1 s
// windows) a move of 3 MB throttled at 1000 B/s still completes in about 22 s (1 MB, then 1 MB
// each time the samples expire), which a loaded machine's tool runs (a JVM each) outlasted:
// Kafka's half once found nothing left to cancel.
constexpr const char* slow_throttle[] = {"replica.fetch.max.bytes=102400",
                                         "replication.quota.window.size.seconds=5"};

class cluster_tools : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
    if (GetParam() == broker_kind::kafka) {
#ifdef TARN_SANITIZED_BUILD
      GTEST_SKIP() << "the Kafka reference half checks the scenario only (release builds)";
#endif
      if (auto why = kafka_test_name_error(); !why.empty()) FAIL() << why;
      // An ISR shrinks after replica.lag.time.max.ms: short, so the test does not wait 30 s.
      // No automatic rebalancing: the leader election test moves leaders back by hand.
      cluster_ = make_kafka_cluster(
          3, {"replica.lag.time.max.ms=2000", "auto.leader.rebalance.enable=false",
              slow_throttle[0], slow_throttle[1]});
    } else {
      // A paused broker keeps its session (it must not be fenced while paused: it would exit
      // when resumed); its ISR membership goes after replica.lag.time.max.ms.
      cluster_ = make_tarn_cluster(
          3, {"replica.lag.time.max.ms=1000", "broker.session.timeout.ms=600000",
              "replica.fetch.wait.max.ms=100", "replica.fetch.backoff.ms=100",
              "auto.leader.rebalance.enable=false", slow_throttle[0], slow_throttle[1]});
    }
    const std::string why = cluster_->start();
    if (!why.empty()) {
      if (GetParam() == broker_kind::tarn &&
          why.find("etcd is not installed") != std::string::npos) {
        GTEST_SKIP() << why;
      }
      FAIL() << why;
    }
    // The tool's requests time out soon, should one reach the paused broker (clients keep one
    // connection per broker the metadata lists).
    std::ofstream(dir_.path() / "admin.properties")
        << "request.timeout.ms=5000\ndefault.api.timeout.ms=20000\n";
  }
  void TearDown() override {
    if (cluster_) {
      for (int n = 0; n < cluster_->node_count(); ++n) {
        if (cluster_->state(n) == node_state::paused) cluster_->resume(n);
      }
      if (HasFailure()) std::cerr << cluster_->diagnostics();
    }
  }

  // kafka-topics.sh through node `via` (a live one; the others come from its metadata).
  split_output topics(int via, const std::string& args) {
    return run_split("timeout 120 " + std::string(TARN_SOURCE_DIR) +
                     "/scripts/kafka-ref tool topics --bootstrap-server 127.0.0.1:" +
                     std::to_string(cluster_->port(via)) + " --command-config " +
                     (dir_.path() / "admin.properties").string() + " " + args);
  }

  // The KRaft quorum's leader (kafka-metadata-quorum.sh describe --status: "LeaderId: N"), -1
  // when the tool does not say.
  int32_t kafka_quorum_leader(int via) {
    auto status = run_split("timeout 120 " + std::string(TARN_SOURCE_DIR) +
                            "/scripts/kafka-ref tool org.apache.kafka.tools.MetadataQuorumCommand "
                            "--bootstrap-server 127.0.0.1:" +
                            std::to_string(cluster_->port(via)) + " --command-config " +
                            (dir_.path() / "admin.properties").string() + " describe --status");
    const auto at = status.out.find("LeaderId:");
    if (status.code != 0 || at == std::string::npos) return -1;
    return std::atoi(status.out.c_str() + at + 9);
  }

  // kafka-leader-election.sh (Kafka 4.4.0's LeaderElectionCommand) through node `via`.
  split_output leader_election(int via, const std::string& args) {
    return run_split("timeout 120 " + std::string(TARN_SOURCE_DIR) +
                     "/scripts/kafka-ref tool org.apache.kafka.tools.LeaderElectionCommand "
                     "--bootstrap-server 127.0.0.1:" +
                     std::to_string(cluster_->port(via)) + " --command-config " +
                     (dir_.path() / "admin.properties").string() + " " + args);
  }

  // One config as node `node` describes it (DescribeConfigs sent to that node alone, which
  // answers from what it applied): "value/source" ("<null>" for a null value), "" when the node
  // does not describe it, "?" when it does not answer.
  std::string described(int node, client::config_resource_type type, const std::string& name,
                        std::string_view key) {
    auto admin =
        client::config_admin::connect("127.0.0.1:" + std::to_string(cluster_->port(node)), 10s);
    if (!admin) return "?";
    auto configs = (*admin)->describe_configs(type, name, false);
    if (!configs) return "?";
    for (const auto& c : *configs) {
      if (c.name == key) return c.value.value_or("<null>") + "/" + std::to_string(c.source);
    }
    return "";
  }
  // Waits until every node describes `key` of the resource as `ok` accepts (a change reaches
  // each node on its own): "", or after 30 s what the first node not there described.
  template <typename Ok>
  std::string every_node_describes(client::config_resource_type type, const std::string& name,
                                   std::string_view key, Ok ok) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    for (int n = 0; n < cluster_->node_count(); ++n) {
      // A broker's own configs are described by that broker only.
      const std::string resource =
          type == client::config_resource_type::broker ? std::to_string(n + 1) : name;
      for (std::string v = described(n, type, resource, key); !ok(v);
           v = described(n, type, resource, key)) {
        if (std::chrono::steady_clock::now() > deadline) {
          return "node " + std::to_string(n + 1) + " describes " + std::string(key) + " as '" + v +
                 "'";
        }
        std::this_thread::sleep_for(100ms);
      }
    }
    return "";
  }
  std::string alter(int node, client::config_resource_type type, const std::string& name,
                    const std::vector<client::config_change>& changes) {
    auto admin =
        client::config_admin::connect("127.0.0.1:" + std::to_string(cluster_->port(node)), 10s);
    if (!admin) return admin.error().message;
    auto altered = (*admin)->alter_configs(type, name, changes);
    return altered ? "" : altered.error().message;
  }

  // kafka-reassign-partitions.sh (Kafka 4.4.0's ReassignPartitionsCommand) through node `via`.
  split_output reassign_partitions(int via, const std::string& args) {
    return run_split("timeout 120 " + std::string(TARN_SOURCE_DIR) +
                     "/scripts/kafka-ref tool org.apache.kafka.tools.reassign."
                     "ReassignPartitionsCommand --bootstrap-server 127.0.0.1:" +
                     std::to_string(cluster_->port(via)) + " --command-config " +
                     (dir_.path() / "admin.properties").string() + " " + args);
  }

  temp_dir dir_;
  std::unique_ptr<cluster_harness> cluster_;
};

// kafka-leader-election.sh against a cluster whose preferred leader was stopped (a controlled
// shutdown moves its leadership away) and came back in sync: PREFERRED of every partition moves
// the leadership back, then nothing is left to elect, UNCLEAN finds every partition led, and a
// named partition already led by its preferred replica is reported as such.
TEST_P(cluster_tools, kafka_leader_election_restores_preferred_leaders_against_kafka) {
  const std::string topic = "elected";
  ASSERT_EQ(create_topic(*cluster_, topic, 1, 3), "");
  ASSERT_TRUE(wait_fully_replicated(*cluster_, topic, 30s)) << cluster_->diagnostics();
  auto d = describe_topic(*cluster_, topic);
  ASSERT_TRUE(d && d->size() == 1u);
  const int32_t preferred = (*d)[0].replicas[0];
  ASSERT_EQ((*d)[0].leader, preferred);

  ASSERT_TRUE(cluster_->stop(preferred - 1)) << cluster_->diagnostics();
  int32_t leader = -1;
  auto deadline = std::chrono::steady_clock::now() + 40s;
  while (std::chrono::steady_clock::now() < deadline) {
    d = describe_topic(*cluster_, topic);
    if (d && d->size() == 1 && (*d)[0].leader >= 0 && (*d)[0].leader != preferred) {
      leader = (*d)[0].leader;
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_NE(leader, -1) << cluster_->diagnostics();
  ASSERT_TRUE(cluster_->restart(preferred - 1)) << cluster_->diagnostics();
  ASSERT_TRUE(wait_fully_replicated(*cluster_, topic, 40s)) << cluster_->diagnostics();
  d = describe_topic(*cluster_, topic);
  ASSERT_TRUE(d && d->size() == 1u);
  EXPECT_EQ((*d)[0].leader, leader);  // no automatic rebalancing here

  const int via = leader - 1;
  auto elected = leader_election(via, "--election-type PREFERRED --all-topic-partitions");
  ASSERT_EQ(elected.code, 0) << elected.out << elected.err;
  EXPECT_NE(elected.out.find("Successfully completed leader election (PREFERRED) for partitions " +
                             topic + "-0"),
            std::string::npos)
      << elected.out;
  deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    d = describe_topic(*cluster_, topic);
    if (d && d->size() == 1 && (*d)[0].leader == preferred) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(d && d->size() == 1u);
  EXPECT_EQ((*d)[0].leader, preferred);

  // Nothing left to elect: every partition is led by its preferred replica, and led at all.
  for (const char* type : {"PREFERRED", "UNCLEAN"}) {
    auto none =
        leader_election(via, std::string("--election-type ") + type + " --all-topic-partitions");
    ASSERT_EQ(none.code, 0) << none.out << none.err;
    EXPECT_EQ(none.out.find("Successfully"), std::string::npos) << type << ": " << none.out;
    EXPECT_EQ(none.out.find("Error"), std::string::npos) << type << ": " << none.out;
  }
  auto named =
      leader_election(via, "--election-type PREFERRED --topic " + topic + " --partition 0");
  ASSERT_EQ(named.code, 0) << named.out << named.err;
  EXPECT_NE(named.out.find("Valid replica already elected for partitions " + topic + "-0"),
            std::string::npos)
      << named.out;
}

// kafka-reassign-partitions.sh moving a partition of replication factor 2 off its leader onto
// the third broker: --generate proposes a plan from the live brokers, --execute starts the move
// (printing the current assignment to roll back to), --verify reports it until it is completed,
// and the partition ends on the new replicas, all in sync, led by the target's first; records
// produced before are all still there.
TEST_P(cluster_tools, kafka_reassign_partitions_moves_a_replica_against_kafka) {
  const std::string topic = "reassigned";
  // Records kept whatever their timestamps (see --cancel below).
  ASSERT_EQ(create_topic(*cluster_, topic, 1, 2, {{"retention.ms", "-1"}}), "");
  ASSERT_TRUE(wait_fully_replicated(*cluster_, topic, 30s)) << cluster_->diagnostics();
  auto d = describe_topic(*cluster_, topic);
  ASSERT_TRUE(d && d->size() == 1u);
  const int32_t old_leader = (*d)[0].leader;
  const std::vector<int32_t> old_replicas = (*d)[0].replicas;
  ASSERT_EQ(old_replicas.size(), 2u);
  int32_t third = 1;
  while (std::find(old_replicas.begin(), old_replicas.end(), third) != old_replicas.end()) ++third;
  const int32_t kept = old_replicas[0] == old_leader ? old_replicas[1] : old_replicas[0];
  const std::vector<int32_t> target{kept, third};
  const int via = kept - 1;

  std::ofstream(dir_.path() / "topics.json")
      << R"({"version":1,"topics":[{"topic":")" << topic << R"("}]})";
  auto generated =
      reassign_partitions(via, "--generate --broker-list 1,2,3 --topics-to-move-json-file " +
                                   (dir_.path() / "topics.json").string());
  ASSERT_EQ(generated.code, 0) << generated.out << generated.err;
  EXPECT_NE(generated.out.find("Current partition replica assignment"), std::string::npos)
      << generated.out;
  EXPECT_NE(generated.out.find("Proposed partition reassignment configuration"), std::string::npos)
      << generated.out;

  std::ofstream(dir_.path() / "plan.json")
      << R"({"version":1,"partitions":[{"topic":")" << topic << R"(","partition":0,"replicas":[)"
      << target[0] << "," << target[1] << R"(],"log_dirs":["any","any"]}]})";
  const std::string plan = " --reassignment-json-file " + (dir_.path() / "plan.json").string();
  auto executed = reassign_partitions(via, "--execute" + plan);
  ASSERT_EQ(executed.code, 0) << executed.out << executed.err;
  EXPECT_NE(executed.out.find("Successfully started partition reassignment for " + topic + "-0"),
            std::string::npos)
      << executed.out;

  bool completed = false;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!completed && std::chrono::steady_clock::now() < deadline) {
    auto verified = reassign_partitions(via, "--verify" + plan);
    ASSERT_EQ(verified.code, 0) << verified.out << verified.err;
    completed = verified.out.find("Reassignment of partition " + topic + "-0 is completed.") !=
                std::string::npos;
    if (!completed) {
      EXPECT_NE(
          verified.out.find("Reassignment of partition " + topic + "-0 is still in progress."),
          std::string::npos)
          << verified.out;
      std::this_thread::sleep_for(500ms);
    }
  }
  ASSERT_TRUE(completed) << cluster_->diagnostics();
  deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    d = describe_topic(*cluster_, topic);
    if (d && d->size() == 1 && (*d)[0].replicas == target &&
        sorted((*d)[0].isr) == sorted(target)) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(d && d->size() == 1u);
  EXPECT_EQ((*d)[0].replicas, target);
  EXPECT_EQ(sorted((*d)[0].isr), sorted(target));
  EXPECT_EQ((*d)[0].leader, kept);
  // Nothing left in progress.
  auto listed = reassign_partitions(via, "--list");
  ASSERT_EQ(listed.code, 0) << listed.out << listed.err;
  EXPECT_NE(listed.out.find("No partition reassignments found."), std::string::npos) << listed.out;

  // --cancel: 3 MB in the partition, a move back onto the old leader (whose copy was deleted)
  // throttled to 1 KB/s (--throttle sets leader./follower.replication.throttled.rate and the
  // topic's throttled replicas): one 100 KB batch a fetch, one fetch every 55 s once past the
  // rate (slow_throttle), so it cannot complete within the test. Cancelled, the assignment is
  // [kept, third] again, all in sync, nothing listed, the throttles removed.
  // The records are stamped 2023-11-14 (value_batch), far past the default retention.ms (7 days):
  // the brokers' first retention check, about 30 s after they start (Kafka's
  // log.initial.task.delay.ms), deleted them all when a loaded machine got the test there later
  // than that, and the leader's log then started at 30: the new replica started over there with
  // nothing to copy and the move completed at once, throttled or not (Kafka: "Current offset 0
  // for partition reassigned-0 is out of range ... Reset fetch offset to 30"; tarn: "the log of
  // leader 2 starts at 30, past this replica's end 0: started over there", 31 s after start).
  // The topic keeps its records (retention.ms=-1 from its creation).
  raw_client producer(cluster_->port(kept - 1));
  const std::string value(100000, 'v');
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(producer.send_bytes(produce_frame(i, topic, 0, value_batch(value))));
    ASSERT_EQ(decode_produce(producer.read_frame(30s)).error_code, 0) << i;
  }
  // The tool sets its throttles before it starts the move, but each broker applies a config
  // change when it reaches it, apart from the partition change: Kafka's brokers publish a
  // topics delta before a config delta when both reach them in one metadata delta, and tarn's
  // follow configs and partition states through two etcd watches; a new replica could copy past
  // its first fetch before its throttle is applied. So a throttle is in force first, one every
  // node describes as applied: every replica of the topic throttled, 500 B/s on every broker.
  // The tool's --throttle 1000 then replaces it with its own, which every node describes in turn
  // (Kafka's ReassignPartitionsIntegrationTest checks the throttles it sets the same way).
  using client::config_resource_type;
  const std::vector<std::string> rate_keys{"leader.replication.throttled.rate",
                                           "follower.replication.throttled.rate"};
  const std::vector<std::string> replica_keys{"leader.replication.throttled.replicas",
                                              "follower.replication.throttled.replicas"};
  for (int n = 0; n < cluster_->node_count(); ++n) {
    ASSERT_EQ(alter(n, config_resource_type::broker, std::to_string(n + 1),
                    {{rate_keys[0], client::config_op::set, "500"},
                     {rate_keys[1], client::config_op::set, "500"}}),
              "");
  }
  ASSERT_EQ(alter(via, config_resource_type::topic, topic,
                  {{replica_keys[0], client::config_op::set, "*"},
                   {replica_keys[1], client::config_op::set, "*"}}),
            "");
  for (const auto& key : rate_keys) {
    ASSERT_EQ("", every_node_describes(config_resource_type::broker, "", key,
                                       [](const auto& v) { return v.starts_with("500/"); }))
        << key;
  }
  for (const auto& key : replica_keys) {
    ASSERT_EQ("", every_node_describes(config_resource_type::topic, topic, key,
                                       [](const auto& v) { return v.starts_with("*/"); }))
        << key;
  }
  std::ofstream(dir_.path() / "back.json")
      << R"({"version":1,"partitions":[{"topic":")" << topic << R"(","partition":0,"replicas":[)"
      << kept << "," << old_leader << R"(],"log_dirs":["any","any"]}]})";
  const std::string back = " --reassignment-json-file " + (dir_.path() / "back.json").string();
  auto throttled = reassign_partitions(via, "--execute --throttle 1000" + back);
  ASSERT_EQ(throttled.code, 0) << throttled.out << throttled.err;
  EXPECT_NE(throttled.out.find("The inter-broker throttle limit was set to 1000 B/s"),
            std::string::npos)
      << throttled.out;
  // What the tool set: both rates on every broker of the move (all three), the topic's leader
  // throttle on the replicas it moves from, its follower throttle on the one it moves to.
  for (const auto& key : rate_keys) {
    EXPECT_EQ("", every_node_describes(config_resource_type::broker, "", key,
                                       [](const auto& v) { return v.starts_with("1000/"); }))
        << key;
  }
  const std::string from_kept = "0:" + std::to_string(kept);
  EXPECT_EQ("", every_node_describes(
                    config_resource_type::topic, topic, replica_keys[0], [&](const auto& v) {
                      return !v.starts_with("*/") && v.find(from_kept) != std::string::npos;
                    }));
  const std::string to_old = "0:" + std::to_string(old_leader) + "/";
  EXPECT_EQ("", every_node_describes(config_resource_type::topic, topic, replica_keys[1],
                                     [&](const auto& v) { return v.starts_with(to_old); }));
  auto pending = reassign_partitions(via, "--verify --preserve-throttles" + back);
  ASSERT_EQ(pending.code, 0) << pending.out << pending.err;
  EXPECT_NE(pending.out.find("Reassignment of partition " + topic + "-0 is still in progress."),
            std::string::npos)
      << pending.out << cluster_->diagnostics();
  auto cancelled = reassign_partitions(via, "--cancel" + back);
  ASSERT_EQ(cancelled.code, 0) << cancelled.out << cancelled.err;
  EXPECT_NE(
      cancelled.out.find("Successfully cancelled partition reassignment for: " + topic + "-0"),
      std::string::npos)
      << cancelled.out;
  EXPECT_NE(cancelled.out.find("Clearing topic-level throttles on topic " + topic),
            std::string::npos)
      << cancelled.out;
  // Gone from every node: what each describes is the default again (not a dynamic config).
  const auto not_dynamic = [](const auto& v) {
    return v != "?" && !v.ends_with("/1") && !v.ends_with("/2");
  };
  for (const auto& key : rate_keys) {
    EXPECT_EQ("", every_node_describes(config_resource_type::broker, "", key, not_dynamic)) << key;
  }
  for (const auto& key : replica_keys) {
    EXPECT_EQ("", every_node_describes(config_resource_type::topic, topic, key, not_dynamic))
        << key;
  }
  deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    d = describe_topic(*cluster_, topic);
    if (d && d->size() == 1 && (*d)[0].replicas == target &&
        sorted((*d)[0].isr) == sorted(target)) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(d && d->size() == 1u);
  EXPECT_EQ((*d)[0].replicas, target) << cluster_->diagnostics();
  EXPECT_EQ(sorted((*d)[0].isr), sorted(target));
  listed = reassign_partitions(via, "--list");
  ASSERT_EQ(listed.code, 0) << listed.out << listed.err;
  EXPECT_NE(listed.out.find("No partition reassignments found."), std::string::npos) << listed.out;
}

TEST_P(cluster_tools, kafka_topics_reports_isr_and_under_replication_against_kafka) {
  const std::string topic = "described";
  ASSERT_EQ(create_topic(*cluster_, topic, 1, 3, {{"min.insync.replicas", "2"}}), "");
  ASSERT_TRUE(wait_fully_replicated(*cluster_, topic, 30s)) << cluster_->diagnostics();

  // --describe: the topic line, then the partition with its leader, replicas and ISR.
  auto described = topics(0, "--describe --topic " + topic);
  ASSERT_EQ(described.code, 0) << described.err;
  EXPECT_NE(described.out.find("Topic: " + topic + "\tTopicId: "), std::string::npos)
      << described.out;
  EXPECT_NE(described.out.find("\tPartitionCount: 1\tReplicationFactor: 3\tConfigs: "),
            std::string::npos)
      << described.out;
  EXPECT_NE(described.out.find("min.insync.replicas=2"), std::string::npos) << described.out;
  auto parts = partition_lines(described.out);
  ASSERT_EQ(parts.size(), 1u) << described.out;
  const described_partition whole = parts[0];
  EXPECT_EQ(whole.partition, 0);
  EXPECT_EQ(sorted(whole.replicas), (std::vector<int32_t>{1, 2, 3})) << described.out;
  EXPECT_EQ(sorted(whole.isr), (std::vector<int32_t>{1, 2, 3})) << described.out;
  EXPECT_NE(std::find(whole.replicas.begin(), whole.replicas.end(), whole.leader),
            whole.replicas.end())
      << described.out;
  EXPECT_TRUE(whole.elr_empty) << described.out;
  // Nothing is under-replicated yet.
  auto none = topics(0, "--describe --under-replicated-partitions");
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_TRUE(partition_lines(none.out).empty()) << none.out;

  // A follower paused until the leader drops it from the ISR: a record it cannot fetch (a
  // follower that has the leader's log end stays caught up however long it is silent, in Kafka
  // as in tarn).
  // On Kafka the follower must not be the KRaft quorum's leader (every node is a controller
  // too): paused, it would hold kafka-topics.sh's ListPartitionReassignments until it times out.
  const int32_t quorum_leader = cluster_->name() == "kafka" ? kafka_quorum_leader(0) : -1;
  if (cluster_->name() == "kafka") {
    ASSERT_NE(quorum_leader, -1);
  }
  int32_t follower = -1;
  for (int32_t r : whole.replicas) {
    if (r != whole.leader && r != quorum_leader) follower = r;
  }
  ASSERT_NE(follower, -1) << described.out;
  const int leader_node = whole.leader - 1;
  ASSERT_TRUE(cluster_->pause(follower - 1));
  {
    raw_client leader(cluster_->port(leader_node));
    ASSERT_TRUE(leader.send_bytes(produce_frame(1, topic, 0, value_batch("unfetched"), 1)));
    ASSERT_EQ(decode_produce(leader.read_frame(30s)).error_code, 0);
  }
  std::vector<int32_t> isr;
  const auto deadline = std::chrono::steady_clock::now() + 40s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto d = describe_topic(*cluster_, topic);
    if (d && d->size() == 1 && (*d)[0].isr.size() == 2) {
      isr = (*d)[0].isr;
      break;
    }
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(isr.size(), 2u) << cluster_->diagnostics();
  EXPECT_EQ(std::find(isr.begin(), isr.end(), follower), isr.end());

  // --under-replicated-partitions lists it, with the two in sync; --at-min-isr-partitions too
  // (two in sync, min.insync.replicas=2); it is neither unavailable nor under its min ISR.
  auto under = topics(leader_node, "--describe --under-replicated-partitions");
  ASSERT_EQ(under.code, 0) << under.err;
  auto listed = partition_lines(under.out);
  ASSERT_EQ(listed.size(), 1u) << under.out << under.err;
  EXPECT_NE(under.out.find("Topic: " + topic + "\tPartition: 0"), std::string::npos) << under.out;
  EXPECT_EQ(listed[0].leader, whole.leader);
  EXPECT_EQ(sorted(listed[0].isr), sorted(isr)) << under.out;
  EXPECT_EQ(listed[0].replicas, whole.replicas) << under.out;
  auto unavailable = topics(leader_node, "--describe --unavailable-partitions");
  ASSERT_EQ(unavailable.code, 0) << unavailable.err;
  EXPECT_TRUE(partition_lines(unavailable.out).empty()) << unavailable.out;
  auto at_min = topics(leader_node, "--describe --at-min-isr-partitions");
  ASSERT_EQ(at_min.code, 0) << at_min.err;
  EXPECT_EQ(partition_lines(at_min.out).size(), 1u) << at_min.out << at_min.err;
  auto under_min = topics(leader_node, "--describe --under-min-isr-partitions");
  ASSERT_EQ(under_min.code, 0) << under_min.err;
  EXPECT_TRUE(partition_lines(under_min.out).empty()) << under_min.out;

  // Resumed: it catches up and the partition is whole again.
  ASSERT_TRUE(cluster_->resume(follower - 1));
  ASSERT_TRUE(wait_fully_replicated(*cluster_, topic, 40s)) << cluster_->diagnostics();
  auto whole_again = topics(leader_node, "--describe --under-replicated-partitions");
  ASSERT_EQ(whole_again.code, 0) << whole_again.err;
  EXPECT_TRUE(partition_lines(whole_again.out).empty()) << whole_again.out;
}

INSTANTIATE_TEST_SUITE_P(both, cluster_tools,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

}  // namespace
}  // namespace tarn::test
