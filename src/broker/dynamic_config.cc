// Validating, recording and applying dynamic broker configs (dynamic_config.h).
#include "broker/dynamic_config.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "broker/dynamic_config_keys.h"

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
    bool validate_only) {
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

}  // namespace tarn::broker
