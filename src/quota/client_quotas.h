// The broker's client quotas: the store of what is set (AlterClientQuotas, DescribeClientQuotas)
// and the four quota managers it feeds (Kafka's QuotaManagers: produce, fetch, request,
// controller mutation). Handlers ask it for throttle times; the metadata log persists its
// records. Thread-safe.
#pragma once

#include <functional>
#include <mutex>
#include <string_view>
#include <vector>

#include "quota/client_quota_manager.h"
#include "quota/client_quota_store.h"

namespace tarn::quota {

// quota.window.num / quota.window.size.seconds and the controller.* pair.
struct quota_windows {
  rate_config client;
  rate_config controller;
};

// The principal a quota's user level matches until the security layer authenticates one: Kafka's
// KafkaPrincipal.ANONYMOUS.
inline constexpr std::string_view anonymous_user = "ANONYMOUS";

class client_quotas {
 public:
  explicit client_quotas(quota_windows windows);

  client_quota_manager& produce() { return produce_; }
  client_quota_manager& fetch() { return fetch_; }
  client_quota_manager& request() { return request_; }
  client_quota_manager& controller_mutation() { return controller_mutation_; }

  // Persists a batch of changes before they take effect (the metadata log's append); an error
  // fails the whole AlterClientQuotas with its message. Unset: changes live in memory only.
  using persist_fn = std::function<std::optional<std::string>(const std::vector<quota_record>&)>;
  void set_persist(persist_fn persist) { persist_ = std::move(persist); }

  // AlterClientQuotas: validate, persist (unless validate_only), apply. One result per entity.
  // When persisting fails every entity is answered with `persist_error` (its message).
  std::vector<std::pair<quota_entity, quota_error>> alter(
      const std::vector<quota_alteration>& alterations, bool validate_only);
  // DescribeClientQuotas.
  std::optional<quota_error> describe(const std::vector<quota_filter_component>& filter,
                                      bool strict, std::vector<quota_described>& out) const;
  // Replays a persisted change (on start, from the metadata log).
  void apply(const quota_record& record);

 private:
  void apply_locked(const quota_record& record);

  mutable std::mutex mu_;
  client_quota_store store_;
  persist_fn persist_;
  client_quota_manager produce_;
  client_quota_manager fetch_;
  client_quota_manager request_;
  client_quota_manager controller_mutation_;
};

}  // namespace tarn::quota
