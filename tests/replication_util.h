// What the cluster tests share (cluster_replication, cluster_failover, cluster_coordinator,
// cluster_leadership): the start of etcd and brokers, brokers with short sessions and lag bounds,
// a partition as Metadata describes it, waiting for a partition state to show, pausing a broker
// for sure, and a file's bytes.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "etcd_process.h"
#include "kafka_conn.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "test_util.h"

namespace tarn::test {

// `tarn serve` arguments of broker `node_id` on `etcd`: heartbeats every 500 ms, the session and
// lag bounds given (the rest of the replication settings short, so that a test runs in seconds),
// then `extra` ("key=value").
inline std::vector<std::string> replication_args(const etcd_cluster& etcd, int32_t node_id,
                                                 int32_t session_timeout_ms,
                                                 int32_t lag_time_max_ms,
                                                 const std::vector<std::string>& extra = {}) {
  std::string connect;
  for (const auto& e : etcd.endpoints()) {
    if (!connect.empty()) connect += ",";
    connect += e.substr(e.find("://") + 3);
  }
  std::vector<std::string> args = {
      "--override", "node.id=" + std::to_string(node_id),
      "--override", "etcd.connect=" + connect,
      "--override", "broker.session.timeout.ms=" + std::to_string(session_timeout_ms),
      "--override", "broker.heartbeat.interval.ms=500",
      "--override", "replica.lag.time.max.ms=" + std::to_string(lag_time_max_ms),
      "--override", "replica.fetch.wait.max.ms=100",
      "--override", "replica.fetch.backoff.ms=100"};
  for (const auto& e : extra) {
    args.push_back("--override");
    args.push_back(e);
  }
  return args;
}

struct partition_view {
  int16_t error = -1;
  int32_t leader = -2;
  int32_t leader_epoch = -2;
  std::vector<int32_t> replicas, isr;
};

// Metadata v12 for `topic`, partition `partition`; nullopt when there is no answer or no such
// partition.
inline std::optional<partition_view> partition_of(uint16_t port, const std::string& topic,
                                                  int32_t partition = 0) {
  kafka_conn c(port, nullptr);
  if (!c.connected()) return std::nullopt;
  protocol::metadata_request req;
  req.allow_auto_topic_creation = false;
  auto& t = req.topics.emplace().emplace_back();
  t.name = topic;
  auto r = c.call<protocol::metadata_response>(req, 12);
  if (!r || r->topics.size() != 1) return std::nullopt;
  for (const auto& p : r->topics[0].partitions) {
    if (p.partition_index == partition) {
      return partition_view{p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes,
                            p.isr_nodes};
    }
  }
  return std::nullopt;
}

// The partition as the broker on `port` describes it once `done` holds for it; nullopt when it
// did not within `timeout` (a caller's ASSERT_TRUE on the answer checks the wait itself).
template <class Pred>
std::optional<partition_view> wait_for_partition(
    uint16_t port, const std::string& topic, Pred done,
    std::chrono::milliseconds timeout = std::chrono::seconds(10), int32_t partition = 0) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto v = partition_of(port, topic, partition);
  while (!(v && done(*v)) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    v = partition_of(port, topic, partition);
  }
  if (v && !done(*v)) return std::nullopt;
  return v;
}

// Waits until the broker on `port` lists `count` live brokers in Metadata.
inline bool wait_for_brokers(uint16_t port, size_t count,
                             std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  kafka_conn c(port, nullptr);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = c.call<protocol::metadata_response>(protocol::metadata_request{}, 12);
    if (r && r->brokers.size() == count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

inline std::vector<int32_t> sorted(std::vector<int32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// SIGSTOP, then wait until every thread of the process is stopped: kill() returns before a
// loaded machine has stopped them, and a follower still running would fetch what comes next.
inline bool stop_process(const child_process& p) {
  p.send_signal(SIGSTOP);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  const std::filesystem::path tasks = "/proc/" + std::to_string(p.pid()) + "/task";
  while (std::chrono::steady_clock::now() < deadline) {
    bool all_stopped = true;
    std::error_code ec;
    for (const auto& t : std::filesystem::directory_iterator(tasks, ec)) {
      std::ifstream in(t.path() / "stat");
      std::string stat((std::istreambuf_iterator<char>(in)), {});
      const auto paren = stat.rfind(')');
      if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'T') {
        all_stopped = false;
      }
    }
    if (!ec && all_stopped) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// The cluster tests' start: one etcd member, then brokers 1..count started with `args(id)`.
// Fails the calling test fatally when one does not come up; the caller checks HasFatalFailure().
template <typename Args>
void start_etcd_and_brokers(std::unique_ptr<etcd_cluster>& etcd,
                            std::vector<std::unique_ptr<broker_process>>& brokers, int32_t count,
                            Args args) {
  etcd = std::make_unique<etcd_cluster>(1);
  ASSERT_TRUE(etcd->wait_ready(0)) << etcd->output(0);
  for (int32_t id = 1; id <= count; ++id) {
    brokers.push_back(std::make_unique<broker_process>(args(id)));
    ASSERT_NE(brokers.back()->port(), 0) << brokers.back()->output();
  }
}

inline std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace tarn::test
