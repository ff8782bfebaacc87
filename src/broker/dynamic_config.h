// Dynamic broker configs (Kafka's DynamicBrokerConfig): validating and recording a new set of
// runtime configs for this broker (resource name = node.id) or for every broker (the empty name),
// shared by IncrementalAlterConfigs and AlterConfigs. The sets live in the metadata log
// (cluster::metadata_store, ConfigRecords of resource type BROKER), so they survive restarts;
// topic_manager::apply_dynamic_configs makes them take effect. In a cluster the metadata log is
// the cluster's, in etcd, and config_follower makes every broker apply what any broker recorded
// (docs/cluster.md, "Dynamic configs").
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "broker/config.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "storage/log_config.h"

namespace tarn::broker {

struct config_alter_error {
  protocol::error_code code;
  std::string message;
};

// The resource name of a BROKER resource must be this node's id or "" (cluster default); else
// INVALID_REQUEST in Kafka's words (a name that is no integer, another node's id).
std::optional<config_alter_error> check_broker_resource_name(std::string_view name,
                                                             int32_t node_id);

// KIP-966: with eligible leader replicas on, Kafka's controller records min.insync.replicas as
// the cluster default, from its own static value, when the default has none, and removes the
// brokers' own (ConfigurationControlManager.maybeGenerateElrSafetyRecords, at a new cluster's
// bootstrap and when UpdateFeatures turns ELR on): a new Kafka 4.4 describes it as
// DYNAMIC_DEFAULT_BROKER_CONFIG. tarn does it at each start (this node's own only) and after
// UpdateFeatures; nothing while ELR is off or the default is there. Answers what it recorded, for
// the log ("" when nothing), or why it could not.
result<std::string, std::string> record_elr_min_isr_default(cluster::metadata_store& store,
                                                            const broker_config& static_config);

// Replaces the dynamic configs of `resource_name` with `proposed`. `changed` are the keys the
// request sets, `deleted` those it deletes (an IncrementalAlterConfigs DELETE, or a key an
// AlterConfigs leaves out). Refusals, as Kafka's: a key Kafka cannot change at runtime
// INVALID_REQUEST "Cannot update these configs dynamically: [k, ...]"; a bad value
// INVALID_REQUEST "Invalid value v for configuration k: ..."; with eligible leader replicas on
// (eligible.leader.replicas.version >= 1, KIP-966), min.insync.replicas set or deleted for one
// broker, or deleted from the cluster default, INVALID_CONFIG (Kafka's controller keeps it a
// cluster-wide setting then). Keys tarn does not know are kept (Kafka accepts them too) but have
// no effect. With validate_only nothing is recorded.
// Takes topics.control_lock() (through apply_dynamic_configs) itself: call without holding it.
std::optional<config_alter_error> alter_dynamic_broker_configs(
    topic_manager& topics, const broker_config& static_config, std::string_view resource_name,
    const storage::config_map& proposed, const std::vector<std::string>& changed,
    const std::vector<std::string>& deleted, bool validate_only);

// In a cluster, configs take effect on every broker whichever broker recorded them, as KRaft
// brokers apply the ConfigRecords of the metadata log (Kafka's DynamicConfigPublisher): the
// metadata store tells which resources each change touched (this broker's changes and, through
// the metadata log's watch, the others'), and this class's thread applies them in turn:
// - the cluster default or this broker's dynamic broker configs: topic_manager::
//   apply_dynamic_configs, then `broker_configs` (the replica manager's replication throttles);
// - a topic's configs: the copy this broker holds of the topic takes them
//   (topic_manager::adopt_topic_configs), then `topic_configs` (the throttled replicas);
// - a group's configs: `group_configs` (apply_group_configs: the share and group coordinators).
// Everything is applied once at start, so that a change recorded before the observer was in
// place is not missed. This broker's own changes come here too (the store tells its observer of
// every config change it appends, not only of those the watch brings), after the handler that
// recorded them applied them: they are applied again, not skipped, and that is idempotent
// (apply_dynamic_configs and apply_group_configs change nothing for what they hold already).
// Not skipped because this is where the replication throttles take a change on this broker
// too, and because what is applied is the store's latest, which another broker may have changed
// since. Listeners are called on this class's thread, never under a lock of the store.
class config_follower {
 public:
  struct listeners {
    std::function<void()> broker_configs;
    std::function<void()> topic_configs;
    std::function<void(const std::string& group, const storage::config_map& configs)> group_configs;
  };
  config_follower(topic_manager& topics, const broker_config& static_config, listeners l);
  ~config_follower();  // stops observing the store, then the thread
  config_follower(const config_follower&) = delete;
  config_follower& operator=(const config_follower&) = delete;

 private:
  void run();
  void apply(const std::set<cluster::config_resource>& touched, bool everything);

  topic_manager& topics_;
  const broker_config& static_config_;
  const std::string node_;  // this broker's resource name
  listeners listeners_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                       // under mu_
  bool everything_ = true;                      // under mu_: apply every resource
  std::set<cluster::config_resource> pending_;  // under mu_
  std::thread thread_;
};

}  // namespace tarn::broker
