// Kafka's SampledStat/WindowedSum/Rate and TokenBucket, step for step (clients'
// org.apache.kafka.common.metrics.stats), so that throttle times match Kafka's.
#include "quota/sampled_rate.h"

#include <algorithm>

namespace tarn::quota {

sampled_rate::sample& sampled_rate::current(int64_t now_ms) {
  if (samples_.empty()) samples_.push_back(sample{0, 0, now_ms, now_ms});
  return samples_[current_];
}

void sampled_rate::record(const rate_config& config, double value, int64_t now_ms) {
  sample* s = &current(now_ms);
  if (now_ms - s->start_ms >= config.window_ms) {
    // Advance: one extra placeholder beyond `samples` for the overlapping window.
    const size_t max_samples = static_cast<size_t>(config.samples) + 1;
    current_ = (current_ + 1) % max_samples;
    if (current_ >= samples_.size()) {
      samples_.push_back(sample{0, 0, now_ms, now_ms});
    } else {
      samples_[current_].reset(now_ms);
    }
    s = &samples_[current_];
  }
  s->value += value;
  s->event_count += 1;
  s->last_event_ms = now_ms;
}

void sampled_rate::purge_obsolete(const rate_config& config, int64_t now_ms) {
  const int64_t expire_age = int64_t{config.samples} * config.window_ms;
  for (auto& s : samples_) {
    if (now_ms - s.last_event_ms >= expire_age) s.reset(now_ms);
  }
}

int64_t sampled_rate::window_size_ms(const rate_config& config, int64_t now_ms) {
  purge_obsolete(config, now_ms);
  if (samples_.empty()) samples_.push_back(sample{0, 0, now_ms, now_ms});
  int64_t oldest = samples_[0].start_ms;
  for (const auto& s : samples_) oldest = std::min(oldest, s.start_ms);
  int64_t elapsed = now_ms - oldest;
  const int64_t full_windows = elapsed / config.window_ms;
  const int64_t min_full_windows = config.samples - 1;
  if (full_windows < min_full_windows)
    elapsed += (min_full_windows - full_windows) * config.window_ms;
  return std::max<int64_t>(elapsed, 1);
}

double sampled_rate::measure(const rate_config& config, int64_t now_ms) {
  purge_obsolete(config, now_ms);
  double total = 0;
  for (const auto& s : samples_) total += s.value;
  return total / (static_cast<double>(window_size_ms(config, now_ms)) / 1000.0);
}

int64_t sampled_rate::last_event_ms() const {
  int64_t last = 0;
  for (const auto& s : samples_) last = std::max(last, s.last_event_ms);
  return last;
}

void token_bucket::refill(double quota, double burst, int64_t now_ms) {
  tokens_ =
      std::min(burst, tokens_ + quota * static_cast<double>(now_ms - last_update_ms_) / 1000.0);
  last_update_ms_ = now_ms;
}

void token_bucket::record(const rate_config& config, double quota, double value, int64_t now_ms) {
  const double burst = config.samples * (static_cast<double>(config.window_ms) / 1000.0) * quota;
  refill(quota, burst, now_ms);
  tokens_ = std::min(burst, tokens_ - value);
}

double token_bucket::measure(const rate_config& config, double quota, int64_t now_ms) {
  const double burst = config.samples * (static_cast<double>(config.window_ms) / 1000.0) * quota;
  refill(quota, burst, now_ms);
  return tokens_;
}

}  // namespace tarn::quota
