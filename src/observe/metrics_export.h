// /metrics: a broker_snapshot as Prometheus metric families named as the Prometheus JMX
// exporter's kafka-2_0_0.yml rules name Kafka's MBeans (lowercaseOutputName), plus
// kafka_exporter's consumer group and partition offset series, then serialized in the Prometheus
// text format (prometheus-cpp's TextSerializer) or OpenMetrics 1.0. docs/http-api.md lists every
// family and what it means in tarn.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/broker_snapshot.h"

namespace tarn::observe {

// What the HTTP listener's gate (http_gate.h) did since it started.
struct http_connection_counts {
  uint64_t accepted = 0;
  uint64_t refused = 0;    // answered 503: too many connections open
  uint64_t timed_out = 0;  // answered 408: the request did not arrive in time
};

struct export_options {
  // http.metrics.max.partitions: per-partition series for the first N partitions in (topic,
  // partition) order; the rest are counted in tarn_metrics_partitions_omitted.
  int32_t max_partitions = 1000;
  // The tarn_http_* counters; none without.
  std::optional<http_connection_counts> http = std::nullopt;
};

std::vector<prometheus::MetricFamily> collect_metrics(const broker::broker_snapshot& snapshot,
                                                      const export_options& options);

// The Prometheus text exposition format 0.0.4.
std::string to_prometheus_text(const std::vector<prometheus::MetricFamily>& families);
// OpenMetrics 1.0 text: counter families named without _total, `# EOF` at the end.
std::string to_openmetrics(const std::vector<prometheus::MetricFamily>& families);

// Whether an Accept header asks for OpenMetrics (application/openmetrics-text), as Prometheus
// sends it when it prefers OpenMetrics.
bool accepts_openmetrics(std::string_view accept);

inline constexpr const char* prometheus_text_content_type =
    "text/plain; version=0.0.4; charset=utf-8";
inline constexpr const char* openmetrics_content_type =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

}  // namespace tarn::observe
