// The transaction marker sender (txn_marker_sender.h).
#include "broker/txn_marker_sender.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/write_txn_markers_request.h"
#include "protocol/messages/write_txn_markers_response.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

// WriteTxnMarkers v1: the first flexible version, what Kafka's brokers send before
// transactions v2 (v2 adds TransactionVersion, which tarn's handler reads and does not use).
constexpr int16_t marker_request_version = 1;
// Kafka's TransactionMarkerChannelManager retries a failed marker after a metadata refresh; the
// states tarn reads are already the watch's newest, so a short pause stands for the refresh.
constexpr auto retry_backoff = std::chrono::milliseconds(100);
// While entries only wait for their PrepareX to be committed: how often the high watermark is
// looked at again (it moves with the followers' fetches).
constexpr auto commit_poll = std::chrono::milliseconds(5);

}  // namespace

txn_marker_sender::txn_marker_sender(const broker_config& config, replica_manager& replicas,
                                     cluster::cluster_membership& membership, topic_manager& topics,
                                     txn::txn_markers& local)
    : config_(config),
      replicas_(replicas),
      membership_(membership),
      topics_(topics),
      local_(local) {}

txn_marker_sender::~txn_marker_sender() { stop(); }

void txn_marker_sender::start(txn::txn_coordinator& coordinator) {
  coordinator_ = &coordinator;
  thread_ = std::thread([this] { run(); });
}

void txn_marker_sender::stop() {
  {
    std::lock_guard g(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void txn_marker_sender::enqueue(txn::pending_markers entry) {
  {
    std::lock_guard g(mu_);
    queued_.push_back(std::move(entry));
  }
  cv_.notify_all();
}

void txn_marker_sender::run() {
  std::vector<txn::marker_progress> active;
  bool failed = false;  // the last round had markers to send again
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (active.empty()) {
        cv_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
      } else {
        cv_.wait_for(lock, failed ? std::chrono::milliseconds(retry_backoff) : commit_poll,
                     [this] { return stopping_ || !queued_.empty(); });
      }
      if (stopping_) return;
      for (auto& e : queued_) active.emplace_back(std::move(e));
      queued_.clear();
    }
    failed = send_round(active);
    std::vector<txn::marker_progress> finished;
    std::erase_if(active, [&finished](txn::marker_progress& p) {
      if (!p.finished()) return false;
      finished.push_back(std::move(p));
      return true;
    });
    for (const auto& p : finished) {
      if (p.fenced()) {
        spdlog::warn("transaction markers of {} (producer {} epoch {}) fenced; sent again later",
                     p.entry().transactional_id, p.entry().marker.producer_id,
                     p.entry().marker.producer_epoch);
      }
      coordinator_->markers_written(p.entry(), p.written(), wall_clock_ms());
    }
  }
}

bool txn_marker_sender::send_round(std::vector<txn::marker_progress>& active) {
  std::map<int32_t, std::vector<std::pair<size_t, std::pair<std::string, int32_t>>>> by_leader;
  const std::string txn_topic(txn::transaction_state_topic_name);
  std::set<const txn::marker_progress*> sent;  // entries whose markers were tried this round
  for (size_t i = 0; i < active.size(); ++i) {
    txn::marker_progress& p = active[i];
    const txn::pending_markers& e = p.entry();
    // Sent only by the coordinator that decided, at its epoch: a lost leadership abandons it.
    auto owner = replicas_.role(txn_topic, e.txn_partition);
    if (!owner || !owner->serving || owner->leader_epoch != e.marker.coordinator_epoch) {
      p.abandon();
      continue;
    }
    if (e.prepare_offset >= 0) {
      // No marker before the decision is committed: until then a new leader of the partition
      // may not have it, and would decide otherwise.
      auto guard = topics_.read_lock();
      const storage::log* log = topics_.logs().get_log(txn_topic, e.txn_partition);
      if (log == nullptr) {
        p.abandon();
        continue;
      }
      if (log->high_watermark() <= e.prepare_offset) continue;
    }
    sent.insert(&p);
    const auto remaining = p.remaining();  // a copy: record() changes it
    for (const auto& [topic, partition] : remaining) {
      auto role = replicas_.role(topic, partition);
      if (!role) {
        // No state: a topic of this broker's own (single-replica, from before states), or one
        // gone from the cluster.
        bool exists = topics_.find_remote_topic(topic).has_value();
        if (!exists) {
          auto guard = topics_.read_lock();
          exists = topics_.logs().find_topic(topic) != nullptr;
        }
        if (!exists) {
          p.record(topic, partition, txn::marker_outcome::dropped);
          continue;
        }
        if (role = replicas_.role(topic, partition); !role) {
          const error_code e = local_.write_marker(topic, partition, p.entry().marker);
          p.record(topic, partition,
                   e == error_code::unknown_topic_or_partition ? txn::marker_outcome::dropped
                                                               : txn::classify_marker_error(e));
          continue;
        }
      }
      if (role->leader_id < 0) continue;  // leaderless: retried once it has one
      if (role->leader_id == config_.node_id) {
        if (!role->serving) continue;  // taking the role over: retried
        p.record(
            topic, partition,
            txn::classify_marker_error(local_.write_marker(topic, partition, p.entry().marker)));
        continue;
      }
      by_leader[role->leader_id].emplace_back(i, std::make_pair(topic, partition));
    }
  }
  for (const auto& [leader, targets] : by_leader) send_to(leader, targets, active);
  // Sent this round and still not written: a retry, after the backoff.
  return std::any_of(active.begin(), active.end(), [&sent](const txn::marker_progress& p) {
    return !p.finished() && sent.contains(&p);
  });
}

void txn_marker_sender::send_to(
    int32_t leader, const std::vector<std::pair<size_t, std::pair<std::string, int32_t>>>& targets,
    std::vector<txn::marker_progress>& active) {
  auto& conn = connections_[leader];
  if (!conn) conn = std::make_unique<broker_connection>("tarn-txn-marker-sender");
  if (!connect_to_broker(*conn, config_, membership_, leader)) return;  // retried next round
  // One marker per entry, its partitions grouped by topic.
  protocol::write_txn_markers_request req;
  std::map<size_t, size_t> marker_of;  // entry index -> index in req.markers
  for (const auto& [i, tp] : targets) {
    auto [it, added] = marker_of.emplace(i, req.markers.size());
    if (added) {
      const txn::pending_markers& e = active[i].entry();
      auto& m = req.markers.emplace_back();
      m.producer_id = e.marker.producer_id;
      m.producer_epoch = e.marker.producer_epoch;
      m.transaction_result = e.marker.commit;
      m.coordinator_epoch = e.marker.coordinator_epoch;
    }
    auto& m = req.markers[it->second];
    if (m.topics.empty() || m.topics.back().name != tp.first) {
      m.topics.emplace_back().name = tp.first;
    }
    m.topics.back().partition_indexes.push_back(tp.second);
  }
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, marker_request_version);
  auto answer =
      conn->round_trip(protocol::write_txn_markers_request::api_key, marker_request_version, body,
                       buffer_, config_.replica_socket_timeout_ms, [this] {
                         std::lock_guard g(mu_);
                         return stopping_;
                       });
  if (!answer) {
    spdlog::debug("transaction marker sender: broker {}: {}", leader, answer.error());
    return;  // every target retried next round
  }
  protocol::reader r(*answer);
  auto resp = protocol::write_txn_markers_response::decode(r, marker_request_version);
  if (!resp) {
    conn->close_connection();
    return;
  }
  // The answer is by producer id; entries of one producer id in one request are one
  // transaction (a producer has one at a time).
  for (const auto& pr : resp->markers) {
    for (const auto& [i, index] : marker_of) {
      if (active[i].entry().marker.producer_id != pr.producer_id) continue;
      for (const auto& tr : pr.topics) {
        for (const auto& part : tr.partitions) {
          active[i].record(std::string(tr.name), part.partition_index,
                           txn::classify_marker_error(static_cast<error_code>(part.error_code)));
        }
      }
    }
  }
}

}  // namespace tarn::broker
