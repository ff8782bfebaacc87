// The transaction marker sender (txn_marker_sender.h).
#include "broker/txn_marker_sender.h"

#include <spdlog/spdlog.h>

#include <algorithm>

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
// While entries wait for their PrepareX, or a local marker, to be committed: how often the high
// watermark is looked at again (it moves with the followers' fetches).
constexpr auto commit_poll = std::chrono::milliseconds(5);

}  // namespace

txn_marker_sender::txn_marker_sender(const broker_config& config, replica_manager& replicas,
                                     cluster::cluster_membership& membership, topic_manager& topics,
                                     partition_markers& local)
    : config_(config),
      replicas_(replicas),
      membership_(membership),
      topics_(topics),
      local_(local),
      destinations_("tarn-txn-marker-sender",
                    [this](broker_link& link, std::vector<outgoing>& batch,
                           std::vector<per_broker_sender<outgoing>::deferred>&) {
                      send_round(link, batch);
                    }) {}

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
  destinations_.stop();
}

void txn_marker_sender::enqueue(txn::pending_markers entry) {
  {
    std::lock_guard g(mu_);
    queued_.push_back(std::move(entry));
  }
  cv_.notify_all();
}

void txn_marker_sender::run() {
  std::vector<active_entry> active;
  clock::time_point wake = clock::time_point::max();
  for (;;) {
    std::vector<outcome> outcomes;
    {
      std::unique_lock lock(mu_);
      auto news = [this] { return stopping_ || !queued_.empty() || !outcomes_.empty(); };
      if (wake == clock::time_point::max()) {
        cv_.wait(lock, news);
      } else {
        cv_.wait_until(lock, wake, news);
      }
      if (stopping_) return;
      for (auto& e : queued_) {
        active.push_back(
            active_entry{next_entry_id_++, txn::marker_progress(std::move(e)), {}, {}, {}});
      }
      queued_.clear();
      outcomes.swap(outcomes_);
    }
    const auto now = clock::now();
    for (const auto& o : outcomes) {
      auto a = std::find_if(active.begin(), active.end(),
                            [&o](const active_entry& e) { return e.id == o.entry_id; });
      if (a == active.end()) continue;  // finished (fenced, abandoned) meanwhile
      a->in_flight.erase(o.partition);
      if (o.result == txn::marker_outcome::retry) a->retry_at[o.partition] = now + retry_backoff;
      a->progress.record(o.partition.first, o.partition.second, o.result);
    }
    wake = send_round(active);
    std::vector<txn::marker_progress> finished;
    std::erase_if(active, [&finished](active_entry& a) {
      if (!a.progress.finished()) return false;
      finished.push_back(std::move(a.progress));
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

txn_marker_sender::clock::time_point txn_marker_sender::send_round(
    std::vector<active_entry>& active) {
  std::map<int32_t, std::vector<outgoing>> by_leader;
  const std::string txn_topic(txn::transaction_state_topic_name);
  const auto now = clock::now();
  auto wake = clock::time_point::max();
  for (active_entry& a : active) {
    const txn::pending_markers& e = a.progress.entry();
    // Sent only by the coordinator that decided, at its epoch: a lost leadership abandons it.
    auto owner = replicas_.role(txn_topic, e.txn_partition);
    if (!owner || !owner->serving || owner->leader_epoch != e.marker.coordinator_epoch) {
      a.progress.abandon();
      continue;
    }
    if (e.prepare_offset >= 0) {
      // No marker before the decision is committed: until then a new leader of the partition
      // may not have it, and would decide otherwise.
      auto guard = topics_.read_lock();
      const storage::log* log = topics_.logs().get_log(txn_topic, e.txn_partition);
      if (log == nullptr) {
        a.progress.abandon();
        continue;
      }
      if (log->high_watermark() <= e.prepare_offset) {
        wake = std::min(wake, now + commit_poll);
        continue;
      }
    }
    check_local(a, now);
    const auto remaining = a.progress.remaining();  // a copy: record() changes it
    for (const auto& tp : remaining) {
      if (a.progress.finished()) break;
      if (a.in_flight.contains(tp) || a.awaiting_commit.contains(tp)) continue;
      if (auto r = a.retry_at.find(tp); r != a.retry_at.end()) {
        if (r->second > now) {
          wake = std::min(wake, r->second);
          continue;
        }
        a.retry_at.erase(r);
      }
      send_one(a, tp, by_leader);
      if (a.progress.remaining().contains(tp) && !a.in_flight.contains(tp) &&
          !a.awaiting_commit.contains(tp)) {
        // Leaderless, being taken over, or refused retriably here: later.
        a.retry_at[tp] = now + retry_backoff;
        wake = std::min(wake, now + retry_backoff);
      }
    }
    if (!a.awaiting_commit.empty()) wake = std::min(wake, now + commit_poll);
  }
  // Refused only once stopping: the deciding thread is about to end too.
  for (auto& [leader, items] : by_leader) (void)destinations_.submit(leader, std::move(items));
  return wake;
}

void txn_marker_sender::send_one(active_entry& a, const topic_partition& tp,
                                 std::map<int32_t, std::vector<outgoing>>& by_leader) {
  const auto& [topic, partition] = tp;
  const txn::marker_request& marker = a.progress.entry().marker;
  auto role = replicas_.role(topic, partition);
  if (!role) {
    // No state: a topic of this broker's own (single-replica, from before states), or one gone
    // from the cluster.
    bool exists = topics_.find_remote_topic(topic).has_value();
    if (!exists) {
      auto guard = topics_.read_lock();
      exists = topics_.logs().find_topic(topic) != nullptr;
    }
    if (!exists) {
      a.progress.record(topic, partition, txn::marker_outcome::dropped);
      return;
    }
    if (role = replicas_.role(topic, partition); !role) {
      auto w = local_.write_marker_at(topic, partition, marker);
      a.progress.record(topic, partition,
                        w ? txn::marker_outcome::written
                        : w.error() == error_code::unknown_topic_or_partition
                            ? txn::marker_outcome::dropped
                            : txn::classify_marker_error(w.error()));
      return;
    }
  }
  if (role->leader_id < 0) return;  // leaderless: retried once it has one
  if (role->leader_id == config_.node_id) {
    if (!role->serving) return;  // taking the role over: retried
    auto w = local_.write_marker_at(topic, partition, marker);
    if (!w) {
      a.progress.record(topic, partition, txn::classify_marker_error(w.error()));
      return;
    }
    // Written once committed, as a marker at another leader is answered (Kafka appends markers
    // with acks=-1): CompleteX must not be written for a marker a new leader may not have.
    if (!w->replicated) {
      a.progress.record(topic, partition, txn::marker_outcome::written);
      return;
    }
    a.awaiting_commit[tp] = local_write{w->offset, w->leader_epoch};
    return;
  }
  by_leader[role->leader_id].push_back(outgoing{a.id, marker, tp});
  a.in_flight.insert(tp);
}

void txn_marker_sender::check_local(active_entry& a, clock::time_point now) {
  for (auto it = a.awaiting_commit.begin(); it != a.awaiting_commit.end();) {
    const auto& [tp, w] = *it;
    bool committed = false;
    bool moved = false;
    {
      auto guard = topics_.read_lock();
      const storage::log* log = topics_.logs().get_log(tp.first, partition_id{tp.second});
      const leadership lead = leadership_of(&replicas_, tp.first, tp.second, config_.node_id);
      moved = log == nullptr || !lead.serving || lead.leader_epoch != w.leader_epoch;
      committed = !moved && log->high_watermark() > w.offset;
    }
    if (committed) {
      a.progress.record(tp.first, tp.second, txn::marker_outcome::written);
    } else if (moved) {
      // The leadership moved before the marker was committed: the new leader may not have it,
      // so it is written again there (a second marker of a closed transaction is harmless, as
      // Kafka's retried WriteTxnMarkers are).
      spdlog::info(
          "transaction marker of {} to {}-{} not committed before a leader change; sent "
          "again",
          a.progress.entry().transactional_id, tp.first, tp.second);
      a.retry_at[tp] = now;
    } else {
      ++it;
      continue;
    }
    it = a.awaiting_commit.erase(it);
  }
}

void txn_marker_sender::send_round(broker_link& link, std::vector<outgoing>& batch) {
  std::vector<outcome> results = send_to(link, batch);
  {
    std::lock_guard g(mu_);
    for (auto& r : results) outcomes_.push_back(std::move(r));
  }
  cv_.notify_all();
}

std::vector<txn_marker_sender::outcome> txn_marker_sender::send_to(
    broker_link& link, const std::vector<outgoing>& batch) {
  // Every item retried unless the answer says otherwise.
  std::vector<outcome> results;
  results.reserve(batch.size());
  for (const auto& item : batch) {
    results.push_back(outcome{item.entry_id, item.partition, txn::marker_outcome::retry});
  }
  if (!connect_to_broker(link.conn, config_, membership_, link.node)) return results;
  // One marker per entry, its partitions grouped by topic.
  protocol::write_txn_markers_request req;
  std::map<uint64_t, size_t> marker_of;  // entry id -> index in req.markers
  for (const auto& item : batch) {
    auto [it, added] = marker_of.emplace(item.entry_id, req.markers.size());
    if (added) {
      auto& m = req.markers.emplace_back();
      m.producer_id = item.marker.producer_id;
      m.producer_epoch = item.marker.producer_epoch;
      m.transaction_result = item.marker.commit;
      m.coordinator_epoch = item.marker.coordinator_epoch;
    }
    auto& m = req.markers[it->second];
    if (m.topics.empty() || m.topics.back().name != item.partition.first) {
      m.topics.emplace_back().name = item.partition.first;
    }
    m.topics.back().partition_indexes.push_back(item.partition.second);
  }
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, marker_request_version);
  // Given up (and sent again to the new leader) once no partition of it is led by the
  // destination any more: a stopped leader that lost its partitions answers nothing, and waiting
  // for replica.socket.timeout.ms would hold the transactions up that long.
  auto moved_away = [this, &link, &batch] {
    if (stopping()) return true;
    return std::none_of(batch.begin(), batch.end(), [this, &link](const outgoing& item) {
      auto role = replicas_.role(item.partition.first, item.partition.second);
      return role && role->leader_id == link.node;
    });
  };
  auto answer =
      link.conn.round_trip(protocol::write_txn_markers_request::api_key, marker_request_version,
                           body, link.buffer, config_.replica_socket_timeout_ms, moved_away);
  if (!answer) {
    spdlog::debug("transaction marker sender: broker {}: {}", link.node, answer.error());
    return results;
  }
  protocol::reader r(*answer);
  auto resp = protocol::write_txn_markers_response::decode(r, marker_request_version);
  if (!resp) {
    link.conn.close_connection();
    return results;
  }
  // The answer is by producer id; entries of one producer id in one request are one
  // transaction (a producer has one at a time).
  for (const auto& pr : resp->markers) {
    for (const auto& tr : pr.topics) {
      for (const auto& part : tr.partitions) {
        for (size_t i = 0; i < batch.size(); ++i) {
          if (batch[i].marker.producer_id != pr.producer_id ||
              batch[i].partition.first != tr.name ||
              batch[i].partition.second != part.partition_index) {
            continue;
          }
          results[i].result = txn::classify_marker_error(static_cast<error_code>(part.error_code));
        }
      }
    }
  }
  return results;
}

}  // namespace tarn::broker
