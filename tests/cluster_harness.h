// The clusters the fault-injection checker (cluster_checker.h) runs against, behind one small
// interface: a three-node Apache Kafka 4.4.0 KRaft cluster (scripts/kafka-ref cluster-start), the
// reference, and tarn's (one etcd and `tarn serve` per node with etcd.connect, as
// cluster_test.cc starts them). Nodes are numbered from 0; node i is Kafka's or tarn's node.id i+1.
// Every operation blocks until it took effect, so a caller never has two nodes down by mistake.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tarn::test {

enum class node_state : uint8_t { up, down, paused };

class cluster_harness {
 public:
  virtual ~cluster_harness() = default;

  // "kafka" or "tarn", for messages.
  virtual std::string name() const = 0;
  // Starts every node; "" once each answers, else why not.
  virtual std::string start() = 0;
  virtual int node_count() const = 0;
  virtual uint16_t port(int node) const = 0;

  // SIGKILL; returns once the process is gone.
  virtual bool kill(int node) = 0;
  // SIGTERM (a controlled shutdown where the broker does one); returns once it exited.
  virtual bool stop(int node) = 0;
  // Starts a killed or stopped node again on its ports and data; returns once it answers.
  virtual bool restart(int node) = 0;
  // SIGSTOP and SIGCONT.
  virtual bool pause(int node) = 0;
  virtual bool resume(int node) = 0;
  // The tails of the nodes' logs, for a failed test's message.
  virtual std::string diagnostics() const = 0;
  // Every node's whole log, each start of it included, as files node-<n>.log in `dir` (a failed
  // soak run's evidence: TARN_TEST_LOG_DIR). Kafka's nodes keep theirs in their directories.
  virtual void save_logs(const std::filesystem::path& /*dir*/) const {}

  // Network partitions between nodes; clients still reach every node, and tarn's nodes etcd.
  // Only where can_partition() (each node, Kafka's or tarn's, in a cgroup of its own, nftables
  // rules: scripts/kafka-ref partition); else each returns false. isolate cuts a node off from
  // all others, cut the link between two; heal_partitions removes every rule.
  virtual bool can_partition() const { return false; }
  virtual bool isolate(int /*node*/) { return false; }
  virtual bool cut(int /*a*/, int /*b*/) { return false; }
  virtual bool heal_partitions() { return false; }
  // Cuts node from the members of the metadata quorum where they are processes apart from the
  // nodes (tarn's etcd), both ways; the other nodes and the clients still reach it.
  // heal_partitions removes it too.
  virtual bool cut_from_metadata(int /*node*/) { return false; }

  // The members of the metadata quorum where they are processes apart from the nodes (tarn's
  // etcd); 0 for Kafka, whose controllers are its nodes. kill -9 and restart of member i.
  virtual int metadata_member_count() const { return 0; }
  virtual bool kill_metadata_member(int /*member*/) { return false; }
  virtual bool restart_metadata_member(int /*member*/) { return false; }

  // "127.0.0.1:p1,127.0.0.1:p2,...": every node, as a client's bootstrap.servers.
  std::string bootstrap_servers() const;
  node_state state(int node) const;
  // The nodes that run and are not paused (a paused one would hold a request until it times out).
  std::vector<int> live_nodes() const;

 protected:
  void set_state(int node, node_state s);

 private:
  mutable std::mutex mutex_;
  std::vector<node_state> states_;
};

// `properties` are added to every node's server.properties (k=v).
std::unique_ptr<cluster_harness> make_kafka_cluster(int nodes,
                                                    std::vector<std::string> properties = {});
// `overrides` are added to every node's `tarn serve` as --override k=v; cluster metadata on an
// etcd of `etcd_members` members.
std::unique_ptr<cluster_harness> make_tarn_cluster(int nodes,
                                                   std::vector<std::string> overrides = {},
                                                   int etcd_members = 1);

// What Metadata says of one partition.
struct partition_view {
  int32_t partition = 0;
  int32_t leader = -1;
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
};

// CreateTopics through a live node; replication_factor -1 takes the broker's default. "" when
// created, else the error.
std::string create_topic(const cluster_harness& cluster, const std::string& topic,
                         int32_t partitions, int16_t replication_factor,
                         const std::vector<std::pair<std::string, std::string>>& configs = {});
// The topic's partitions as a live node sees them; nullopt when none answers or the topic is
// unknown to it.
std::optional<std::vector<partition_view>> describe_topic(const cluster_harness& cluster,
                                                          const std::string& topic);
// Waits until every live node describes every partition of the topic with a leader and all its
// replicas in the ISR (no partition under-replicated); false after `timeout`.
bool wait_fully_replicated(const cluster_harness& cluster, const std::string& topic,
                           std::chrono::milliseconds timeout);

}  // namespace tarn::test
