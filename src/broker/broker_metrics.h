// The broker's metric cells: what Kafka keeps in BrokerTopicMetrics (per broker and per topic),
// RequestMetrics (per API) and LogFlushStats, as base/metric_cells.h counters and histograms the
// handlers and connections bump with relaxed atomics. The broker only records; src/observe reads
// them at scrape time and names them as the Prometheus JMX exporter names Kafka's MBeans
// (docs/http-api.md).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/metric_cells.h"

namespace tarn::broker {

// kafka.server:type=BrokerTopicMetrics, for one topic or (broker_metrics::all_topics) the broker.
struct topic_metrics {
  metric_counter messages_in;
  metric_counter bytes_in;
  metric_counter bytes_out;
  metric_counter bytes_rejected;
  metric_counter failed_produce_requests;
  metric_counter failed_fetch_requests;
  metric_counter total_produce_requests;
  metric_counter total_fetch_requests;
};

// kafka.network:type=RequestMetrics for one API: requests by version and the four times Kafka
// splits a request into (queue: read until the handler starts; local: the handler; send: the
// handler's answer until it is written; total: read until written).
struct request_metrics {
  static constexpr int max_versions = 32;
  std::array<metric_counter, max_versions> requests_by_version;
  latency_histogram request_queue_time;
  latency_histogram local_time;
  latency_histogram response_send_time;
  latency_histogram total_time;
};

class broker_metrics {
 public:
  static constexpr int max_api_key = 127;

  broker_metrics();
  broker_metrics(const broker_metrics&) = delete;
  broker_metrics& operator=(const broker_metrics&) = delete;

  topic_metrics all_topics;

  // The cells of an API key (nullptr outside [0, max_api_key]).
  request_metrics* api(int16_t api_key) {
    return api_key >= 0 && api_key <= max_api_key ? apis_[static_cast<size_t>(api_key)].get()
                                                  : nullptr;
  }
  const request_metrics* api(int16_t api_key) const {
    return const_cast<broker_metrics*>(this)->api(api_key);
  }

  // One request answered: its times from the steady clock.
  using time_point = std::chrono::steady_clock::time_point;
  void record_request(int16_t api_key, int16_t api_version, time_point read, time_point started,
                      time_point done, time_point written);

  // A topic's cells, created on first use; thread-safe (a reader-writer lock of its own, since
  // handlers on every loop look topics up under the map lock shared). The cells themselves are
  // then updated without it. Kept alive by the returned pointer after the topic goes.
  std::shared_ptr<topic_metrics> topic(std::string_view name);
  // Every topic's cells, for a scrape; drops those of topics not in `existing` (deleted ones).
  std::vector<std::pair<std::string, std::shared_ptr<topic_metrics>>> topics_snapshot(
      const std::vector<std::string>& existing);

  // kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs: the scheduled flushes of dirty logs.
  latency_histogram log_flush_time;

 private:
  struct string_hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::array<std::unique_ptr<request_metrics>, max_api_key + 1> apis_;
  mutable std::shared_mutex topics_mu_;  // guards topics_
  std::unordered_map<std::string, std::shared_ptr<topic_metrics>, string_hash, std::equal_to<>>
      topics_;
};

}  // namespace tarn::broker
