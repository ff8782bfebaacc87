// The client quotas that are set: which entity (user, client-id, their defaults, or an ip) has
// which of Kafka's quota keys, with Kafka's validation of AlterClientQuotas and its filter
// semantics for DescribeClientQuotas (ClientQuotaControlManager, ClientQuotasImage).
// Persistence is the caller's: alter() returns the changes as records (Kafka's
// ClientQuotaRecord: entity, key, value or remove) for the metadata log, and apply() replays one.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tarn::quota {

inline constexpr const char* user_entity_type = "user";
inline constexpr const char* client_id_entity_type = "client-id";
inline constexpr const char* ip_entity_type = "ip";

inline constexpr const char* producer_byte_rate = "producer_byte_rate";
inline constexpr const char* consumer_byte_rate = "consumer_byte_rate";
inline constexpr const char* request_percentage = "request_percentage";
inline constexpr const char* controller_mutation_rate = "controller_mutation_rate";
inline constexpr const char* connection_creation_rate = "connection_creation_rate";

// An entity as Kafka's ClientQuotaEntity: entity type -> name, a null name (nullopt) being the
// type's default ("<default>" in kafka-configs.sh).
struct quota_entity {
  std::map<std::string, std::optional<std::string>> parts;
  auto operator<=>(const quota_entity&) const = default;
};

// Kafka's error for a failed entity or filter: INVALID_REQUEST (42) or UNSUPPORTED_VERSION (35)
// with its message.
struct quota_error {
  int16_t code = 0;
  std::string message;
};

struct quota_record {
  quota_entity entity;
  std::string key;
  std::optional<double> value;  // nullopt = remove
};

struct quota_op {
  std::string key;
  std::optional<double> value;  // nullopt = remove (the request's Remove flag)
};

struct quota_alteration {
  quota_entity entity;
  std::vector<quota_op> ops;
};

// DescribeClientQuotas' filter component: match type 0 EXACT (name, or nullopt = the default),
// 1 DEFAULT, 2 SPECIFIED (any non-default name).
struct quota_filter_component {
  std::string entity_type;
  int8_t match_type = 0;
  std::optional<std::string> match;
};

struct quota_described {
  quota_entity entity;
  std::map<std::string, double> values;
};

class client_quota_store {
 public:
  // Validates every alteration as Kafka's controller does; returns one result per entity
  // (code 0 = its changes are in `records`), in first-seen order, and fills `records` with the
  // changes to persist and apply. Nothing changes here: the caller persists the records, then
  // apply()s them.
  std::vector<std::pair<quota_entity, quota_error>> alter(
      const std::vector<quota_alteration>& alterations, std::vector<quota_record>& records) const;
  void apply(const quota_record& record);

  // The entities matching the filter; an invalid filter is an error.
  std::optional<quota_error> describe(const std::vector<quota_filter_component>& filter,
                                      bool strict, std::vector<quota_described>& out) const;

  // The value of `key` set exactly on `entity`, if any.
  std::optional<double> get(const quota_entity& entity, const std::string& key) const;
  const std::map<quota_entity, std::map<std::string, double>>& all() const { return quotas_; }

 private:
  quota_error alter_entity(const quota_entity& entity,
                           const std::map<std::string, std::optional<double>>& ops,
                           std::vector<quota_record>& records) const;

  std::map<quota_entity, std::map<std::string, double>> quotas_;
};

}  // namespace tarn::quota
