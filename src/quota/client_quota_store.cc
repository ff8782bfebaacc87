// AlterClientQuotas' validation and DescribeClientQuotas' matching, in Kafka 4.4's order and
// with its messages (ClientQuotaControlManager.alterClientQuotas, ClientQuotasImage.describe).
#include "quota/client_quota_store.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <set>

namespace tarn::quota {

namespace {

constexpr int16_t invalid_request = 42;
constexpr int16_t unsupported_version = 35;

enum class key_type { int64, float64, int32 };

std::string describe_entity(const quota_entity& e) {
  // Kafka's ClientQuotaEntity.toString: ClientQuotaEntity(entries={type=name, ...}).
  std::string s = "ClientQuotaEntity(entries={";
  bool first = true;
  for (const auto& [type, name] : e.parts) {
    if (!first) s += ", ";
    first = false;
    s += type + "=" + (name ? *name : std::string("null"));
  }
  return s + "})";
}

// The keys an entity of these types may have (QuotaConfig.userAndClientQuotaConfigs/ipConfigs).
std::optional<quota_error> keys_for(const quota_entity& e, std::map<std::string, key_type>& keys) {
  const bool has_user = e.parts.count(user_entity_type) != 0;
  const bool has_client = e.parts.count(client_id_entity_type) != 0;
  auto ip = e.parts.find(ip_entity_type);
  if (ip != e.parts.end()) {
    if (has_user || has_client) {
      return quota_error{invalid_request,
                         "Invalid quota entity combination, IP entity shouldnot be combined with "
                         "User or ClientId"};
    }
    if (ip->second) {
      // Kafka accepts any name InetAddress.getByName resolves; tarn (no DNS on the request
      // path) accepts IPv4 and IPv6 literals.
      in6_addr a6{};
      in_addr a4{};
      if (inet_pton(AF_INET, ip->second->c_str(), &a4) != 1 &&
          inet_pton(AF_INET6, ip->second->c_str(), &a6) != 1) {
        return quota_error{invalid_request, *ip->second + " is not a valid IP or resolvable host."};
      }
    }
    keys = {{connection_creation_rate, key_type::int32}};
    return std::nullopt;
  }
  if (!has_user && !has_client) {
    return quota_error{invalid_request, "Invalid empty client quota entity"};
  }
  keys = {{producer_byte_rate, key_type::int64},
          {consumer_byte_rate, key_type::int64},
          {request_percentage, key_type::float64},
          {controller_mutation_rate, key_type::float64}};
  return std::nullopt;
}

std::optional<quota_error> validate_value(const std::map<std::string, key_type>& keys,
                                          const std::string& key, double value) {
  auto k = keys.find(key);
  if (k == keys.end()) return quota_error{invalid_request, "Invalid configuration key " + key};
  if (value <= 0.0) {
    return quota_error{invalid_request, fmt::format("Quota {} must be greater than 0", key)};
  }
  auto integral = [&]() -> std::optional<quota_error> {
    if (std::abs(std::fmod(value, 1.0)) > 1e-6) {
      return quota_error{invalid_request, key + " cannot be a fractional value."};
    }
    return std::nullopt;
  };
  switch (k->second) {
    case key_type::float64:
      return std::nullopt;
    case key_type::int32:
      if (value > std::numeric_limits<int32_t>::max()) {
        return quota_error{invalid_request,
                           fmt::format("Proposed value for {} is too large for an INT.", key)};
      }
      return integral();
    case key_type::int64:
      if (value > static_cast<double>(std::numeric_limits<int64_t>::max())) {
        return quota_error{invalid_request,
                           fmt::format("Proposed value for {} is too large for a LONG.", key)};
      }
      return integral();
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::pair<quota_entity, quota_error>> client_quota_store::alter(
    const std::vector<quota_alteration>& alterations, std::vector<quota_record>& records) const {
  // One result per entity (Kafka keeps them in a map keyed by entity), first-seen order.
  std::vector<std::pair<quota_entity, quota_error>> results;
  auto result_of = [&](const quota_entity& e) -> quota_error* {
    for (auto& [entity, error] : results) {
      if (entity == e) return &error;
    }
    return nullptr;
  };
  auto set_result = [&](const quota_entity& e, quota_error error) {
    if (quota_error* r = result_of(e)) {
      *r = std::move(error);
    } else {
      results.emplace_back(e, std::move(error));
    }
  };
  for (const auto& a : alterations) {
    std::map<std::string, std::optional<double>> ops;
    for (const auto& op : a.ops) {
      if (ops.count(op.key) != 0) {
        set_result(a.entity, {invalid_request, fmt::format("Duplicate quota key {} not updating "
                                                           "quota for this entity {}",
                                                           op.key, describe_entity(a.entity))});
      } else {
        ops.emplace(op.key, op.value);
      }
    }
    if (result_of(a.entity) != nullptr) {
      // As Kafka: a second alteration of an entity (or one with a duplicated key) is answered
      // "Ignoring duplicate entity"; what the first one changed stays changed.
      set_result(a.entity,
                 {invalid_request, "Ignoring duplicate entity " + describe_entity(a.entity)});
      continue;
    }
    set_result(a.entity, alter_entity(a.entity, ops, records));
  }
  return results;
}

quota_error client_quota_store::alter_entity(
    const quota_entity& entity, const std::map<std::string, std::optional<double>>& ops,
    std::vector<quota_record>& records) const {
  if (entity.parts.empty()) return {invalid_request, "Invalid empty client quota entity"};
  for (const auto& [type, name] : entity.parts) {
    if (type != user_entity_type && type != client_id_entity_type && type != ip_entity_type) {
      return {invalid_request, "Unhandled client quota entity type: " + type};
    }
    if (name && name->empty()) return {invalid_request, "Empty " + type + " not supported"};
  }
  std::map<std::string, key_type> keys;
  if (auto bad = keys_for(entity, keys)) return *bad;
  auto current = quotas_.find(entity);
  std::vector<quota_record> changes;
  for (const auto& [key, value] : ops) {
    const double* now = nullptr;
    if (current != quotas_.end()) {
      auto v = current->second.find(key);
      if (v != current->second.end()) now = &v->second;
    }
    if (!value) {
      if (now != nullptr) changes.push_back({entity, key, std::nullopt});
      continue;
    }
    if (auto e = validate_value(keys, key, *value)) return *e;
    if (now == nullptr || *now != *value) changes.push_back({entity, key, *value});
  }
  records.insert(records.end(), changes.begin(), changes.end());
  return {};
}

void client_quota_store::apply(const quota_record& record) {
  if (record.value) {
    quotas_[record.entity][record.key] = *record.value;
    return;
  }
  auto it = quotas_.find(record.entity);
  if (it == quotas_.end()) return;
  it->second.erase(record.key);
  if (it->second.empty()) quotas_.erase(it);
}

std::optional<quota_error> client_quota_store::describe(
    const std::vector<quota_filter_component>& filter, bool strict,
    std::vector<quota_described>& out) const {
  std::map<std::string, std::optional<std::string>> exact;
  std::set<std::string> typed;
  for (const auto& c : filter) {
    if (c.entity_type.empty()) return quota_error{invalid_request, "Invalid empty entity type."};
    if (exact.count(c.entity_type) != 0 || typed.count(c.entity_type) != 0) {
      return quota_error{invalid_request, "Entity type " + c.entity_type +
                                              " cannot appear more than once in the filter."};
    }
    if (c.entity_type != ip_entity_type && c.entity_type != user_entity_type &&
        c.entity_type != client_id_entity_type) {
      return quota_error{unsupported_version, "Unsupported entity type " + c.entity_type};
    }
    switch (c.match_type) {
      case 0:
        if (!c.match) {
          return quota_error{invalid_request,
                             "Request specified MATCH_TYPE_EXACT, but set match string to null."};
        }
        exact[c.entity_type] = c.match;
        break;
      case 1:
        if (c.match) {
          return quota_error{invalid_request,
                             "Request specified MATCH_TYPE_DEFAULT, but also specified a match "
                             "string."};
        }
        exact[c.entity_type] = std::nullopt;
        break;
      case 2:
        if (c.match) {
          return quota_error{invalid_request,
                             "Request specified MATCH_TYPE_SPECIFIED, but also specified a match "
                             "string."};
        }
        typed.insert(c.entity_type);
        break;
      default:
        return quota_error{invalid_request, fmt::format("Unknown match type {}", c.match_type)};
    }
  }
  auto named = [&](const char* t) { return exact.count(t) != 0 || typed.count(t) != 0; };
  if (named(ip_entity_type) && (named(user_entity_type) || named(client_id_entity_type))) {
    return quota_error{invalid_request,
                       "Invalid entity filter component combination. IP filter component should "
                       "not be used with user or clientId filter component."};
  }
  for (const auto& [entity, values] : quotas_) {
    if (strict && entity.parts.size() != exact.size() + typed.size()) continue;
    bool match = true;
    for (const auto& [type, name] : exact) {
      auto it = entity.parts.find(type);
      if (it == entity.parts.end() || it->second != name) {
        match = false;
        break;
      }
    }
    for (const auto& type : typed) {
      // Kafka's check is containsKey: a default entry of the type matches SPECIFIED too.
      if (match && entity.parts.count(type) == 0) match = false;
    }
    if (match) out.push_back({entity, values});
  }
  return std::nullopt;
}

std::optional<double> client_quota_store::get(const quota_entity& entity,
                                              const std::string& key) const {
  auto it = quotas_.find(entity);
  if (it == quotas_.end()) return std::nullopt;
  auto v = it->second.find(key);
  if (v == it->second.end()) return std::nullopt;
  return v->second;
}

}  // namespace tarn::quota
