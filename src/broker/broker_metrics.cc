// broker_metrics: the per-API cells (allocated up front for every key, so the request path never
// allocates) and the per-topic map.
#include "broker/broker_metrics.h"

#include <algorithm>
#include <mutex>
#include <unordered_set>

namespace tarn::broker {

namespace {

uint64_t micros_between(broker_metrics::time_point from, broker_metrics::time_point to) {
  if (to <= from) return 0;
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(to - from).count());
}

}  // namespace

broker_metrics::broker_metrics() {
  for (auto& a : apis_) a = std::make_unique<request_metrics>();
}

void broker_metrics::record_request(int16_t api_key, int16_t api_version, time_point read,
                                    time_point started, time_point done, time_point written) {
  request_metrics* m = api(api_key);
  if (m == nullptr) return;
  if (api_version >= 0 && api_version < request_metrics::max_versions) {
    m->requests_by_version[static_cast<size_t>(api_version)].add();
  }
  m->request_queue_time.record_us(micros_between(read, started));
  m->local_time.record_us(micros_between(started, done));
  m->response_send_time.record_us(micros_between(done, written));
  m->total_time.record_us(micros_between(read, written));
}

std::shared_ptr<topic_metrics> broker_metrics::topic(std::string_view name) {
  {
    std::shared_lock lock(topics_mu_);
    auto it = topics_.find(name);
    if (it != topics_.end()) return it->second;
  }
  std::unique_lock lock(topics_mu_);
  auto [it, inserted] = topics_.try_emplace(std::string(name));
  if (inserted) it->second = std::make_shared<topic_metrics>();
  return it->second;
}

std::vector<std::pair<std::string, std::shared_ptr<topic_metrics>>> broker_metrics::topics_snapshot(
    const std::vector<std::string>& existing) {
  std::unordered_set<std::string_view> live(existing.begin(), existing.end());
  std::vector<std::pair<std::string, std::shared_ptr<topic_metrics>>> out;
  std::unique_lock lock(topics_mu_);
  for (auto it = topics_.begin(); it != topics_.end();) {
    if (live.count(it->first) == 0) {
      it = topics_.erase(it);
      continue;
    }
    out.emplace_back(it->first, it->second);
    ++it;
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

}  // namespace tarn::broker
