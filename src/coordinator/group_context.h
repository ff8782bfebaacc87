// What a group's state machine sees while it handles one request or one timer: the time, the
// configuration, the broker's topics, a way to persist records to the group's partition of
// __consumer_offsets, and the callbacks to run once the shard's lock is released.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/group_config.h"
#include "coordinator/metadata_view.h"
#include "coordinator/share_group_config.h"
#include "protocol/error_codes.h"

namespace tarn::coordinator {

// The consumer groups' own configs (consumer.*, share_group_config.h) by group id, and the
// broker's group.consumer.assignment.interval.ms once changed at runtime: what Kafka's
// GroupConfigManager holds. Groups read it at each heartbeat, so a change applies at once.
// Thread-safe: IncrementalAlterConfigs sets while the shards read.
class consumer_group_configs {
 public:
  // The group's settings over `broker` (the static configuration).
  consumer_group_settings settings(const group_config& broker, std::string_view group_id) const {
    std::lock_guard lock(mu_);
    group_config effective = broker;
    if (assignment_interval_ms_) {
      effective.group_consumer_assignment_interval_ms = *assignment_interval_ms_;
    }
    auto it = overrides_.find(group_id);
    return effective_consumer_group_settings(
        effective, it == overrides_.end() ? group_config_overrides{} : it->second);
  }
  // Replaces the group's configs (the keys other than consumer.* are ignored here).
  void set(std::string_view group_id, const group_config_overrides& overrides) {
    group_config_overrides mine;
    for (const auto& [k, v] : overrides) {
      if (k.starts_with("consumer.")) mine.emplace(k, v);
    }
    std::lock_guard lock(mu_);
    if (mine.empty()) {
      overrides_.erase(std::string(group_id));
    } else {
      overrides_.insert_or_assign(std::string(group_id), std::move(mine));
    }
  }
  // group.consumer.assignment.interval.ms changed dynamically (nullopt: the static value again).
  void set_assignment_interval_ms(std::optional<int32_t> ms) {
    std::lock_guard lock(mu_);
    assignment_interval_ms_ = ms;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, group_config_overrides, std::less<>> overrides_;
  std::optional<int32_t> assignment_interval_ms_;
};

// One record of __consumer_offsets: key and value bytes as Kafka frames them (an int16 version
// before each struct, records.h); no value is a tombstone.
struct coordinator_record {
  std::vector<uint8_t> key;
  std::optional<std::vector<uint8_t>> value;
};

struct group_context {
  int64_t now_ms = 0;
  const group_config& config;
  const metadata_view& metadata;
  // Appends the records as one batch to the group's partition, synchronously: NONE once they
  // are in the log, else the produce path's error (the state change must not be acknowledged).
  std::function<protocol::error_code(std::vector<coordinator_record>)> write;
  // Completion callbacks (JoinGroup/SyncGroup answers) run after the shard's lock is released.
  std::vector<std::function<void()>>& deferred;
  // TxnOffsetCommit: write() appends a transactional batch of this producer (-1: a plain one).
  int64_t txn_producer_id = -1;
  int16_t txn_producer_epoch = -1;
  // ... and the markers of that producer its partition had when the transaction was checked
  // (offsets_log::append refuses the batch if the transaction ended since).
  std::optional<uint32_t> txn_markers_before = std::nullopt;
  // The groups' own configs; null (unit tests): the broker's config alone.
  const consumer_group_configs* group_configs = nullptr;
};

// What the consumer group `group_id` runs with (its consumer.* configs over ctx.config).
inline consumer_group_settings consumer_settings(const group_context& ctx,
                                                 std::string_view group_id) {
  if (ctx.group_configs != nullptr) return ctx.group_configs->settings(ctx.config, group_id);
  return effective_consumer_group_settings(ctx.config, {});
}

}  // namespace tarn::coordinator
