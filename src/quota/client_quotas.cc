// AlterClientQuotas end to end (validate, persist, apply) and the routing of each quota key to
// its manager, as Kafka's ClientQuotaMetadataManager routes them.
#include "quota/client_quotas.h"

namespace tarn::quota {

namespace {

constexpr int16_t unknown_server_error = -1;

entity_level level_of(const quota_entity& e, const char* type) {
  auto it = e.parts.find(type);
  if (it == e.parts.end()) return std::nullopt;
  return it->second;
}

}  // namespace

client_quotas::client_quotas(quota_windows windows)
    : produce_(quota_type::produce, windows.client),
      fetch_(quota_type::fetch, windows.client),
      request_(quota_type::request, windows.client),
      controller_mutation_(quota_type::controller_mutation, windows.controller) {}

std::vector<std::pair<quota_entity, quota_error>> client_quotas::alter(
    const std::vector<quota_alteration>& alterations, bool validate_only) {
  std::lock_guard lock(mu_);
  std::vector<quota_record> records;
  auto results = store_.alter(alterations, records);
  if (validate_only || records.empty()) return results;
  if (persist_) {
    if (auto failed = persist_(records)) {
      for (auto& [entity, error] : results) {
        if (error.code == 0) error = {unknown_server_error, *failed};
      }
      return results;
    }
  }
  for (const auto& r : records) apply_locked(r);
  return results;
}

std::optional<quota_error> client_quotas::describe(
    const std::vector<quota_filter_component>& filter, bool strict,
    std::vector<quota_described>& out) const {
  std::lock_guard lock(mu_);
  return store_.describe(filter, strict, out);
}

void client_quotas::apply(const quota_record& record) {
  std::lock_guard lock(mu_);
  apply_locked(record);
}

void client_quotas::apply_locked(const quota_record& record) {
  store_.apply(record);
  if (record.entity.parts.count(ip_entity_type) != 0) return;  // connection rate: not enforced
  const entity_level user = level_of(record.entity, user_entity_type);
  const entity_level client_id = level_of(record.entity, client_id_entity_type);
  client_quota_manager* m = nullptr;
  if (record.key == producer_byte_rate) {
    m = &produce_;
  } else if (record.key == consumer_byte_rate) {
    m = &fetch_;
  } else if (record.key == request_percentage) {
    m = &request_;
  } else if (record.key == controller_mutation_rate) {
    m = &controller_mutation_;
  }
  if (m != nullptr) m->update_quota(user, client_id, record.value);
}

}  // namespace tarn::quota
