// The configs the group coordinators take at runtime, each handed over in one place: the dynamic
// broker configs they read (Kafka's GroupCoordinatorConfig RECONFIGURABLE_CONFIGS that tarn
// serves: group.consumer.assignment.interval.ms and group.share.assignment.interval.ms), and the
// groups' own configs (the GROUP resource's share.* and consumer.* keys, Kafka's GroupConfig).
#pragma once

#include <cstdint>
#include <string_view>

#include "broker/config.h"
#include "broker/topic_manager.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/share_coordinator.h"
#include "storage/log_config.h"

namespace tarn::broker {

// Reads topic_manager::effective() (the static configuration with the dynamic configs over it)
// under read_lock(), then hands the values over without it (the coordinators take their own
// locks, and may take read_lock() under them). Either coordinator may be null. Call without
// holding control_lock() or read_lock().
inline void apply_group_dynamic_configs(const topic_manager& topics,
                                        coordinator::group_coordinator* groups,
                                        coordinator::share_coordinator* shares) {
  int32_t consumer_interval_ms = 0;
  int32_t share_interval_ms = 0;
  {
    auto maps = topics.read_lock();
    consumer_interval_ms = topics.effective().group.group_consumer_assignment_interval_ms;
    share_interval_ms = topics.effective().share.group_share_assignment_interval_ms;
  }
  if (groups != nullptr) groups->set_assignment_interval_ms(consumer_interval_ms);
  if (shares != nullptr) shares->set_assignment_interval_ms(share_interval_ms);
}

// A group's own configs, as the metadata log holds them, into the share and group coordinators
// (each keeps the keys it reads); either may be null. Called by IncrementalAlterConfigs on the
// broker that recorded them, at start for every group, and by config_follower after a change
// recorded on any broker of a cluster, including this broker's own (the store tells its observer
// of every change it appends). Idempotent, so that last call may come: the configs replace what
// the coordinators held for the group, and the same configs again change nothing
// (share_coordinator::set_group_configs returns at once for them).
inline void apply_group_configs(std::string_view group_id, const storage::config_map& configs,
                                coordinator::group_coordinator* groups,
                                coordinator::share_coordinator* shares) {
  if (shares != nullptr) shares->set_group_configs(group_id, configs);
  if (groups != nullptr) groups->set_group_configs(group_id, configs);
}

}  // namespace tarn::broker
