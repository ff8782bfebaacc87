// The two measurements Kafka's quotas are decided on, with Kafka's arithmetic so that a client
// is throttled by tarn exactly as much as by Kafka: a rate over sampled windows (Kafka's Rate on
// a WindowedSum: producer/consumer bytes, request time) and a token bucket (controller
// mutations). Not thread-safe: the quota manager holds its lock around them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tarn::quota {

// MetricConfig's part that matters here: `samples` windows of `window_ms` each
// (quota.window.num, quota.window.size.seconds).
struct rate_config {
  int32_t samples = 11;
  int64_t window_ms = 1000;
};

// Kafka's Rate(SECONDS, WindowedSum): samples+1 windows in a ring (one extra for the window
// that overlaps the start of the measured span), a window complete after window_ms, samples with
// no event for samples*window_ms forgotten, and a rate over the elapsed span, which is at least
// samples-1 full windows (so a first burst is measured over ~10 s, not over its own few ms).
class sampled_rate {
 public:
  void record(const rate_config& config, double value, int64_t now_ms);
  // Per second.
  double measure(const rate_config& config, int64_t now_ms);
  // The span, in ms, measure() divides by (Rate.windowSize); purges old samples first.
  int64_t window_size_ms(const rate_config& config, int64_t now_ms);
  // The last event, for expiring sensors nobody uses.
  int64_t last_event_ms() const;

 private:
  struct sample {
    double value = 0;
    int64_t event_count = 0;
    int64_t start_ms = 0;
    int64_t last_event_ms = 0;
    void reset(int64_t now_ms) { *this = sample{0, 0, now_ms, now_ms}; }
  };
  sample& current(int64_t now_ms);
  void purge_obsolete(const rate_config& config, int64_t now_ms);

  std::vector<sample> samples_;
  size_t current_ = 0;
};

// Kafka's TokenBucket(SECONDS): `quota` tokens a second, at most samples*window*quota held;
// recording takes tokens (the count may go negative: the debt is the throttle).
class token_bucket {
 public:
  void record(const rate_config& config, double quota, double value, int64_t now_ms);
  double measure(const rate_config& config, double quota, int64_t now_ms);

 private:
  void refill(double quota, double burst, int64_t now_ms);
  double tokens_ = 0;
  int64_t last_update_ms_ = 0;
};

}  // namespace tarn::quota
