// Validating, recording and applying dynamic broker configs (dynamic_config.h).
#include "broker/dynamic_config.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "broker/dynamic_config_keys.h"
#include "broker/features.h"

namespace tarn::broker {

using protocol::error_code;

std::optional<config_alter_error> check_broker_resource_name(std::string_view name,
                                                             int32_t node_id) {
  if (name.empty() || name == std::to_string(node_id)) return std::nullopt;
  // Kafka 4.4's words (ConfigAdminManager.validateResourceNameIsCurrentNodeId).
  int32_t id = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  if (ec != std::errc() || end != name.data() + name.size()) {
    return config_alter_error{error_code::invalid_request,
                              fmt::format("Node id must be an integer, but it is: {}", name)};
  }
  return config_alter_error{
      error_code::invalid_request,
      fmt::format("Unexpected broker id, expected {}, but received {}", node_id, name)};
}

std::optional<config_alter_error> alter_dynamic_broker_configs(
    topic_manager& topics, const broker_config& static_config, std::string_view resource_name,
    const storage::config_map& proposed, const std::vector<std::string>& changed,
    const std::vector<std::string>& deleted, bool validate_only) {
  const auto known = known_broker_config_keys();
  auto is_known = [&](const std::string& k) {
    return std::binary_search(known.begin(), known.end(), k);
  };
  std::vector<std::string> refused;
  for (const auto& k : changed) {
    if (is_known(k) && !is_dynamic_broker_config(k)) refused.push_back(k);
  }
  if (!refused.empty()) {
    std::string list;
    for (const auto& k : refused) list += (list.empty() ? "" : ", ") + k;
    return config_alter_error{error_code::invalid_request,
                              fmt::format("Cannot update these configs dynamically: [{}]", list)};
  }
  // The values as the broker would take them: static, then the cluster default, then this
  // node's, with `proposed` in place of its own layer.
  cluster::metadata_store& store = topics.metadata();
  const std::string node = std::to_string(static_config.node_id);
  storage::config_map cluster_default = resource_name.empty() ? proposed : store.broker_configs("");
  storage::config_map node_layer = resource_name.empty() ? store.broker_configs(node) : proposed;
  std::map<std::string, std::string> merged = static_config.explicitly_set;
  for (const auto* layer : {&cluster_default, &node_layer}) {
    for (const auto& [k, v] : *layer) {
      if (is_known(k)) merged[k] = v;
    }
  }
  auto checked = make_broker_config(properties{}, properties(merged.begin(), merged.end()));
  if (!checked) return config_alter_error{error_code::invalid_request, checked.error()};
  // KIP-966: while ELR is on, Kafka's controller (ConfigurationControlManager) keeps
  // min.insync.replicas one setting for the cluster: the ELR of every partition was kept against
  // it, so no broker may have its own, and the cluster default may change (which clears every
  // ELR) but not go. Checked by the controller, so after the broker's own checks above, and for
  // validate_only too.
  if (elr_enabled(store)) {
    constexpr std::string_view min_isr = "min.insync.replicas";
    const auto names = [&](const std::vector<std::string>& keys) {
      return std::find(keys.begin(), keys.end(), min_isr) != keys.end();
    };
    if (!resource_name.empty() && (names(changed) || names(deleted))) {
      return config_alter_error{
          error_code::invalid_config,
          "Broker-level min.insync.replicas cannot be altered while ELR is enabled."};
    }
    if (resource_name.empty() && names(deleted)) {
      return config_alter_error{
          error_code::invalid_config,
          "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."};
    }
  }
  if (validate_only) return std::nullopt;
  if (auto s = store.set_broker_configs(resource_name, proposed); !s) {
    return config_alter_error{error_code::kafka_storage_error, s.error().message};
  }
  if (auto a = topics.apply_dynamic_configs(static_config); !a) {
    spdlog::error("dynamic broker configs recorded but not applied: {}", a.error());
    return config_alter_error{error_code::unknown_server_error, a.error()};
  }
  spdlog::info("dynamic broker configs of {} changed: {}",
               resource_name.empty() ? std::string("the cluster default") : "broker " + node,
               fmt::join(changed, ", "));
  return std::nullopt;
}

result<std::string, std::string> record_elr_min_isr_default(cluster::metadata_store& store,
                                                            const broker_config& static_config) {
  if (!elr_enabled(store)) return std::string();
  const std::string key = "min.insync.replicas";
  std::vector<std::string> done;
  storage::config_map cluster_default = store.broker_configs("");
  if (!cluster_default.contains(key)) {
    cluster_default[key] = std::to_string(static_config.min_insync_replicas);
    if (auto s = store.set_broker_configs("", cluster_default); !s) return fail(s.error().message);
    done.push_back("the cluster default " + key + "=" + cluster_default[key] + " recorded");
  }
  const std::string node = std::to_string(static_config.node_id);
  storage::config_map own = store.broker_configs(node);
  if (own.erase(key) > 0) {
    if (auto s = store.set_broker_configs(node, own); !s) return fail(s.error().message);
    done.push_back("broker " + node + "'s own " + key + " removed");
  }
  return fmt::format("{}", fmt::join(done, ", "));
}

config_follower::config_follower(topic_manager& topics, const broker_config& static_config,
                                 listeners l)
    : topics_(topics),
      static_config_(static_config),
      node_(std::to_string(static_config.node_id)),
      listeners_(std::move(l)) {
  // Called under the store's lock: only take note.
  topics_.metadata().observe_config_changes(
      [this](const std::vector<cluster::config_resource>& touched) {
        std::lock_guard g(mu_);
        pending_.insert(touched.begin(), touched.end());
        cv_.notify_one();
      });
  thread_ = std::thread([this] { run(); });
}

config_follower::~config_follower() {
  topics_.metadata().observe_config_changes({});  // returns once no call is running
  {
    std::lock_guard g(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  thread_.join();
}

void config_follower::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || everything_ || !pending_.empty(); });
    if (stopping_) return;
    const bool everything = std::exchange(everything_, false);
    const std::set<cluster::config_resource> touched = std::move(pending_);
    pending_.clear();
    lock.unlock();
    apply(touched, everything);
    lock.lock();
  }
}

void config_follower::apply(const std::set<cluster::config_resource>& touched, bool everything) {
  bool broker = everything, topic = everything;
  std::vector<std::string> topic_names, groups;
  for (const auto& [type, name] : touched) {
    if (type == cluster::config_resource_broker) {
      broker = broker || name.empty() || name == node_;
    } else if (type == cluster::config_resource_topic) {
      topic = true;
      topic_names.push_back(name);
    } else if (type == cluster::config_resource_group) {
      groups.push_back(name);
    }
  }
  if (broker) {
    auto applied = topics_.apply_dynamic_configs(static_config_);
    if (!applied) {
      // Recorded by a broker that checked them against its own configuration; this one keeps
      // what it had (Kafka's DynamicBrokerConfig logs a reconfiguration it cannot apply).
      spdlog::error("dynamic broker configs not applied: {}", applied.error());
    } else if (*applied) {
      spdlog::info("dynamic broker configs applied (the cluster default and broker {}'s)", node_);
    }
    if (listeners_.broker_configs) listeners_.broker_configs();
  }
  if (everything) {
    topic_names.clear();
    auto maps = topics_.read_lock();
    for (const auto* t : topics_.logs().topics()) topic_names.push_back(t->name);
  }
  for (const auto& name : topic_names) {
    auto adopted = topics_.adopt_topic_configs(name);
    if (!adopted) {
      spdlog::error("topic {}: configs recorded in the cluster not applied: {}", name,
                    adopted.error());
    } else if (*adopted) {
      spdlog::info("topic {}: configs changed in the cluster applied", name);
    }
  }
  if (topic && listeners_.topic_configs) listeners_.topic_configs();
  // A group's configs as the store holds them now: also after this broker's own change, which
  // its handler applied already (apply_group_configs is idempotent; dynamic_config.h).
  if (!listeners_.group_configs || (groups.empty() && !everything)) return;
  const auto all = topics_.metadata().group_configs();
  if (everything) {
    for (const auto& [group, configs] : all) listeners_.group_configs(group, configs);
    return;
  }
  for (const auto& group : groups) {
    auto it = all.find(group);
    listeners_.group_configs(group, it != all.end() ? it->second : storage::config_map{});
  }
}

}  // namespace tarn::broker
