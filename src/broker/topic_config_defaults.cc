// Topic config name -> broker default key table (see topic_config_defaults.h). Read from Kafka
// 4.4.0's ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS; tiered-storage configs are left
// out because tarn has no tiered storage.
#include "broker/topic_config_defaults.h"

namespace tarn::broker {

namespace {
constexpr int64_t ms_per_minute = 60'000;
constexpr int64_t ms_per_hour = 3'600'000;
}  // namespace

const std::vector<topic_config_name>& topic_config_names() {
  static const std::vector<topic_config_name> names = {
      {"segment.bytes", {{"log.segment.bytes"}}},
      {"segment.ms", {{"log.roll.ms"}, {"log.roll.hours", ms_per_hour}}},
      {"segment.jitter.ms", {{"log.roll.jitter.ms"}, {"log.roll.jitter.hours", ms_per_hour}}},
      {"segment.index.bytes", {{"log.index.size.max.bytes"}}},
      {"flush.messages", {{"log.flush.interval.messages"}}},
      {"flush.ms", {{"log.flush.interval.ms"}, {"log.flush.scheduler.interval.ms"}}},
      {"retention.bytes", {{"log.retention.bytes"}}},
      {"retention.ms",
       {{"log.retention.ms"},
        {"log.retention.minutes", ms_per_minute},
        {"log.retention.hours", ms_per_hour}}},
      {"max.message.bytes", {{"message.max.bytes"}}},
      {"max.decompressed.message.bytes", {{"max.decompressed.message.bytes"}}},
      {"index.interval.bytes", {{"log.index.interval.bytes"}}},
      {"delete.retention.ms", {{"log.cleaner.delete.retention.ms"}}},
      {"min.compaction.lag.ms", {{"log.cleaner.min.compaction.lag.ms"}}},
      {"max.compaction.lag.ms", {{"log.cleaner.max.compaction.lag.ms"}}},
      {"file.delete.delay.ms", {{"log.segment.delete.delay.ms"}}},
      {"min.cleanable.dirty.ratio", {{"log.cleaner.min.cleanable.ratio"}}},
      {"cleanup.policy", {{"log.cleanup.policy"}}},
      {"unclean.leader.election.enable", {{"unclean.leader.election.enable"}}},
      {"min.insync.replicas", {{"min.insync.replicas"}}},
      {"compression.type", {{"compression.type"}}},
      {"compression.gzip.level", {{"compression.gzip.level"}}},
      {"compression.lz4.level", {{"compression.lz4.level"}}},
      {"compression.zstd.level", {{"compression.zstd.level"}}},
      {"preallocate", {{"log.preallocate"}}},
      {"message.timestamp.type", {{"log.message.timestamp.type"}}},
      {"message.timestamp.before.max.ms", {{"log.message.timestamp.before.max.ms"}}},
      {"message.timestamp.after.max.ms", {{"log.message.timestamp.after.max.ms"}}},
  };
  return names;
}

const topic_config_name* find_topic_config(std::string_view name) {
  for (const auto& t : topic_config_names()) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

std::optional<std::string> topic_config_default(const broker_config& config,
                                                std::string_view name) {
  const topic_config_name* t = find_topic_config(name);
  if (t == nullptr) return std::nullopt;
  for (const auto& s : t->synonyms) {
    auto it = config.values.find(s.broker_key);
    if (it == config.values.end() || std::holds_alternative<std::monostate>(it->second)) continue;
    if (s.to_topic_unit != 1) {
      int64_t v = std::get<int64_t>(it->second);
      // Kafka turns any negative retention ("unlimited") into -1.
      return std::to_string(v < 0 ? -1 : v * s.to_topic_unit);
    }
    return config_value_to_string(it->second);
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> topic_config_defaults(
    const broker_config& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& t : topic_config_names()) {
    if (auto v = topic_config_default(config, t.name)) out.emplace_back(t.name, *v);
  }
  return out;
}

}  // namespace tarn::broker
