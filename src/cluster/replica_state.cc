// Replica placement, the leader's view of its followers, the high watermark and the ISR
// decisions (replica_state.h).
#include "cluster/replica_state.h"

#include <algorithm>
#include <tuple>

namespace tarn::cluster {

std::vector<std::vector<int32_t>> assign_replicas(int32_t leader, std::vector<int32_t> live_brokers,
                                                  int32_t partitions, int32_t replication_factor) {
  std::sort(live_brokers.begin(), live_brokers.end());
  live_brokers.erase(std::unique(live_brokers.begin(), live_brokers.end()), live_brokers.end());
  const bool leader_live =
      std::find(live_brokers.begin(), live_brokers.end(), leader) != live_brokers.end();
  if (replication_factor < 1 || !leader_live ||
      replication_factor > static_cast<int32_t>(live_brokers.size()) || partitions < 0) {
    return {};
  }
  std::vector<int32_t> others;
  for (int32_t b : live_brokers) {
    if (b != leader) others.push_back(b);
  }
  std::vector<std::vector<int32_t>> out;
  out.reserve(static_cast<size_t>(partitions));
  for (int32_t p = 0; p < partitions; ++p) {
    std::vector<int32_t> replicas{leader};
    for (int32_t j = 0; j + 1 < replication_factor; ++j) {
      replicas.push_back(others[static_cast<size_t>(p + j) % others.size()]);
    }
    out.push_back(std::move(replicas));
  }
  return out;
}

leader_replication::leader_replication(int32_t local_id, partition_state state,
                                       int64_t high_watermark, int64_t now_ms,
                                       int64_t epoch_start_offset)
    : local_id_(local_id),
      state_(std::move(state)),
      high_watermark_(high_watermark),
      epoch_start_offset_(epoch_start_offset) {
  for (int32_t r : state_.replicas) {
    if (r != local_id_) followers_[r] = follower_progress{-1, now_ms, 0, 0};
  }
}

void leader_replication::update_state(partition_state state, int64_t now_ms) {
  for (auto& [r, f] : followers_) {
    const bool was_in = std::find(state_.isr.begin(), state_.isr.end(), r) != state_.isr.end();
    const bool is_in = std::find(state.isr.begin(), state.isr.end(), r) != state.isr.end();
    if (was_in && !is_in) f.fetched_since_leaving_isr = false;
  }
  state_ = std::move(state);
  std::erase_if(pending_, [&](const pending_isr& p) {
    return p.base_partition_epoch < state_.partition_epoch;
  });
  for (int32_t r : state_.replicas) {
    if (r != local_id_ && !followers_.contains(r)) {
      followers_[r] = follower_progress{-1, now_ms, 0, 0};
    }
  }
  std::erase_if(followers_, [&](const auto& f) {
    return std::find(state_.replicas.begin(), state_.replicas.end(), f.first) ==
           state_.replicas.end();
  });
}

void leader_replication::add_pending_isr(int32_t base_partition_epoch, std::vector<int32_t> isr) {
  for (const auto& p : pending_) {
    if (p.base_partition_epoch == base_partition_epoch && p.isr == isr) return;
  }
  pending_.push_back({base_partition_epoch, std::move(isr), false});
}

void leader_replication::refuse_pending_isr(int32_t base_partition_epoch,
                                            const std::vector<int32_t>& isr) {
  std::erase_if(pending_, [&](const pending_isr& p) {
    return !p.in_doubt && p.base_partition_epoch == base_partition_epoch && p.isr == isr;
  });
}

void leader_replication::doubt_pending_isr(int32_t base_partition_epoch,
                                           const std::vector<int32_t>& isr) {
  for (auto& p : pending_) {
    if (p.base_partition_epoch == base_partition_epoch && p.isr == isr) p.in_doubt = true;
  }
}

bool leader_replication::on_follower_fetch(int32_t replica, int64_t fetch_offset,
                                           int64_t leader_end_offset, int64_t now_ms,
                                           int64_t log_start_offset) {
  auto it = followers_.find(replica);
  if (it == followers_.end()) return false;
  follower_progress& f = it->second;
  f.log_start_offset = log_start_offset;
  if (fetch_offset >= leader_end_offset) {
    f.last_caught_up_ms = std::max(f.last_caught_up_ms, now_ms);
  } else if (fetch_offset >= f.leader_end_offset_at_last_fetch) {
    f.last_caught_up_ms = std::max(f.last_caught_up_ms, f.last_fetch_ms);
  }
  f.log_end_offset = fetch_offset;
  f.fetched_since_leaving_isr = true;
  f.leader_end_offset_at_last_fetch = leader_end_offset;
  f.last_fetch_ms = now_ms;
  return true;
}

int64_t leader_replication::update_high_watermark(int64_t leader_end_offset,
                                                  int32_t min_insync_replicas) {
  const size_t min_isr = std::min<size_t>(static_cast<size_t>(std::max(min_insync_replicas, 1)),
                                          state_.replicas.size());
  if (state_.isr.size() < min_isr) return high_watermark_;  // isUnderMinIsr
  int64_t hw = leader_end_offset;
  auto bound = [&](int32_t r) {
    if (r == local_id_) return;
    auto it = followers_.find(r);
    // A member whose offset is not known yet holds the high watermark where it is.
    const int64_t leo = it == followers_.end() ? -1 : it->second.log_end_offset;
    hw = std::min(hw, leo < 0 ? high_watermark_ : leo);
  };
  for (int32_t r : state_.isr) bound(r);
  for (const auto& p : pending_) {
    for (int32_t r : p.isr) bound(r);  // a member twice bounds it twice: the same
  }
  high_watermark_ = std::max(high_watermark_, std::min(hw, leader_end_offset));
  return high_watermark_;
}

std::vector<int32_t> leader_replication::out_of_sync_replicas(int64_t now_ms,
                                                              int64_t lag_time_max_ms,
                                                              int64_t leader_end_offset) const {
  std::vector<int32_t> out;
  for (int32_t r : state_.isr) {
    if (r == local_id_) continue;
    auto it = followers_.find(r);
    if (it == followers_.end()) continue;
    const follower_progress& f = it->second;
    // Kafka: lastCaughtUpTimeMs older than the lag bound and not at the log end right now.
    if (f.log_end_offset != leader_end_offset && now_ms - f.last_caught_up_ms > lag_time_max_ms) {
      out.push_back(r);
    }
  }
  return out;
}

std::vector<int32_t> leader_replication::caught_up_followers() const {
  std::vector<int32_t> out;
  for (const auto& [r, f] : followers_) {
    if (std::find(state_.isr.begin(), state_.isr.end(), r) != state_.isr.end()) continue;
    if (f.fetched_since_leaving_isr && f.log_end_offset >= 0 &&
        f.log_end_offset >= high_watermark_ && f.log_end_offset >= epoch_start_offset_) {
      out.push_back(r);
    }
  }
  return out;
}

std::optional<int32_t> preferred_read_replica(const leader_replication& leader,
                                              const std::string& client_rack,
                                              const std::vector<read_replica_candidate>& brokers,
                                              int64_t fetch_offset, int64_t now_ms) {
  // RackAwareReplicaSelector: no rack, the leader.
  if (client_rack.empty()) return std::nullopt;
  auto rack_of = [&](int32_t id) -> const std::optional<std::string>* {
    for (const auto& b : brokers) {
      if (b.id == id && b.reachable) return &b.rack;
    }
    return nullptr;  // Kafka's Node.noNode(): no rack, never chosen
  };
  const auto* leader_rack = rack_of(leader.local_id());
  if (leader_rack != nullptr && *leader_rack == client_rack) return std::nullopt;
  struct view {
    int32_t id;
    int64_t log_end_offset;
    int64_t since_caught_up_ms;
  };
  std::optional<view> best;
  const auto& isr = leader.state().isr;
  for (const auto& [id, f] : leader.followers()) {
    // findPreferredReadReplica: only in-sync followers that have the offset (one out of the ISR
    // may lag for good, and the consumer would fall behind with it).
    if (std::find(isr.begin(), isr.end(), id) == isr.end()) continue;
    if (f.log_end_offset < fetch_offset || f.log_start_offset > fetch_offset) continue;
    const auto* rack = rack_of(id);
    if (rack == nullptr || *rack != client_rack) continue;
    const view v{id, f.log_end_offset, now_ms - f.last_caught_up_ms};
    // ReplicaView.comparator: log end offset, then the most recently caught up, then the id.
    if (!best || std::tie(v.log_end_offset, best->since_caught_up_ms, v.id) >
                     std::tie(best->log_end_offset, v.since_caught_up_ms, best->id)) {
      best = v;
    }
  }
  if (!best) return std::nullopt;
  return best->id;
}

int64_t follower_high_watermark(int64_t leader_high_watermark, int64_t local_end_offset,
                                int64_t current_high_watermark) {
  return std::max(current_high_watermark, std::min(leader_high_watermark, local_end_offset));
}

truncation follower_truncation(const std::vector<storage::epoch_entry>& follower_epochs,
                               int64_t follower_end_offset,
                               const storage::epoch_and_end_offset& leader) {
  const auto own =
      storage::end_offset_for_epoch(follower_epochs, leader.epoch, follower_end_offset);
  if (own.end_offset == storage::undefined_epoch_offset) {
    return {std::min(leader.end_offset, follower_end_offset), true};
  }
  if (own.epoch != leader.epoch) return {std::min(own.end_offset, follower_end_offset), false};
  return {std::min({own.end_offset, leader.end_offset, follower_end_offset}), true};
}

std::vector<int32_t> isr_without(const std::vector<int32_t>& isr,
                                 const std::vector<int32_t>& drop) {
  std::vector<int32_t> out;
  for (int32_t r : isr) {
    if (std::find(drop.begin(), drop.end(), r) == drop.end()) out.push_back(r);
  }
  return out;
}

std::vector<int32_t> isr_with(const std::vector<int32_t>& isr, const std::vector<int32_t>& add) {
  std::vector<int32_t> out = isr;
  for (int32_t r : add) {
    if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  }
  return out;
}

}  // namespace tarn::cluster
