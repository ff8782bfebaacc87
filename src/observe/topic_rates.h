// Per-topic, broker-wide and per-API rates for the console: a sampler thread copies the metric
// cells (messages in, bytes in, bytes out; requests answered per API) once a second into a ring of
// the last two minutes; rates are differences over a window of that ring. Reads take the ring's own
// lock only, never the broker's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "broker/broker_snapshot.h"

namespace tarn::observe {

struct rate {
  double messages_in_per_sec = 0;
  double bytes_in_per_sec = 0;
  double bytes_out_per_sec = 0;
};

struct rate_point {
  int64_t at_ms = 0;  // milliseconds since the Unix epoch, at the end of the interval
  rate broker;
  double requests_per_sec = 0;  // every API's requests answered
  // Requests answered a second by API name; only the APIs that answered any in the interval,
  // so two minutes of points stay small however many APIs the broker serves.
  std::map<std::string, double, std::less<>> requests_per_sec_by_api;
};

class topic_rates {
 public:
  static constexpr size_t max_samples = 121;  // two minutes at one a second

  struct counters {
    uint64_t messages_in = 0;
    uint64_t bytes_in = 0;
    uint64_t bytes_out = 0;
  };
  struct sample {
    std::chrono::steady_clock::time_point at;
    int64_t wall_ms = 0;
    counters broker;
    std::map<std::string, counters, std::less<>> topics;
    std::map<std::string, uint64_t, std::less<>> requests;  // answered, by API name
  };

  // Takes a sample of `snapshot` (its metrics and topic cells).
  void add(const broker::broker_snapshot& snapshot);
  void add(sample s);

  // Rates over the last `window` (or the samples there are, at least two): per topic and the
  // broker's. Empty maps and zeros before two samples.
  std::map<std::string, rate, std::less<>> topic_rates_over(std::chrono::seconds window) const;
  rate broker_rate_over(std::chrono::seconds window) const;
  // Requests answered a second by API name (every API the broker serves) over the window.
  std::map<std::string, double, std::less<>> request_rates_over(std::chrono::seconds window) const;
  // The broker's rate between consecutive samples, oldest first.
  std::vector<rate_point> broker_series() const;

 private:
  mutable std::mutex mu_;
  std::deque<sample> samples_;
};

// Calls `rates.add(sample())` every `interval` on a thread of its own until destroyed.
class rate_sampler {
 public:
  rate_sampler(topic_rates& rates, std::function<broker::broker_snapshot()> snapshot,
               std::chrono::milliseconds interval);
  ~rate_sampler();
  rate_sampler(const rate_sampler&) = delete;
  rate_sampler& operator=(const rate_sampler&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tarn::observe
