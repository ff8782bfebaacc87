// The topic-level configuration names (cleanup.policy, retention.ms, ...) and the broker keys
// that supply their defaults, as Kafka 4.4's ServerTopicConfigSynonyms lists them. CreateTopics
// and DescribeConfigs use this to fill in what a topic does not override; the typed per-topic
// values and their validation belong to storage's log_config.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/config.h"

namespace tarn::broker {

// A broker key that supplies a topic config's default, with the factor that turns its unit into
// the topic config's (log.retention.hours -> retention.ms is 3,600,000).
struct broker_synonym {
  const char* broker_key;
  int64_t to_topic_unit = 1;
};

struct topic_config_name {
  const char* name;
  std::vector<broker_synonym> synonyms;  // highest precedence first
};

// Every topic config tarn knows, in Kafka's order.
const std::vector<topic_config_name>& topic_config_names();

// The synonym list of one topic config, or nullptr for an unknown name.
const topic_config_name* find_topic_config(std::string_view name);

// The broker-wide default of a topic config as text (Kafka's rule: the first synonym with a
// non-null value, converted to the topic unit). nullopt for an unknown name.
std::optional<std::string> topic_config_default(const broker_config& config, std::string_view name);

// All topic configs with their broker-derived defaults, name -> value.
std::vector<std::pair<std::string, std::string>> topic_config_defaults(const broker_config& config);

}  // namespace tarn::broker
