// The dynamic broker configs the group coordinators read (Kafka's GroupCoordinatorConfig
// RECONFIGURABLE_CONFIGS that tarn serves): group.consumer.assignment.interval.ms and
// group.share.assignment.interval.ms, handed to the coordinators after each change of the
// dynamic broker configs and at start.
#pragma once

#include <cstdint>

#include "broker/config.h"
#include "broker/topic_manager.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/share_coordinator.h"

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

}  // namespace tarn::broker
