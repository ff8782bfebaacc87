// topic_rates: the ring of counter samples and the differences over it.
#include "observe/topic_rates.h"

#include <functional>

namespace tarn::observe {

namespace {

rate rate_between(const topic_rates::counters& a, const topic_rates::counters& b, double seconds) {
  auto per_sec = [&](uint64_t x, uint64_t y) {
    return y >= x && seconds > 0 ? static_cast<double>(y - x) / seconds : 0.0;
  };
  return {per_sec(a.messages_in, b.messages_in), per_sec(a.bytes_in, b.bytes_in),
          per_sec(a.bytes_out, b.bytes_out)};
}

double seconds_between(const topic_rates::sample& a, const topic_rates::sample& b) {
  return std::chrono::duration<double>(b.at - a.at).count();
}

// The oldest sample no older than `window` before the newest (the one before the newest at
// least).
const topic_rates::sample& window_start(const std::deque<topic_rates::sample>& samples,
                                        std::chrono::seconds window) {
  const auto& last = samples.back();
  size_t i = samples.size() - 2;
  while (i > 0 && last.at - samples[i - 1].at <= window) --i;
  return samples[i];
}

}  // namespace

void topic_rates::add(const broker::broker_snapshot& snapshot) {
  sample s;
  s.at = std::chrono::steady_clock::now();
  s.wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  for (const auto& [name, cells] : snapshot.topics) {
    if (!cells) continue;
    s.topics.emplace(name, counters{cells->messages_in.value(), cells->bytes_in.value(),
                                    cells->bytes_out.value()});
  }
  if (const broker::broker_metrics* m = snapshot.metrics) {
    const auto& all = m->all_topics;
    s.broker = {all.messages_in.value(), all.bytes_in.value(), all.bytes_out.value()};
    for (const auto& api : snapshot.apis) {
      const broker::request_metrics* cells = m->api(api.key);
      if (cells == nullptr) continue;
      uint64_t n = 0;
      for (const auto& c : cells->requests_by_version) n += c.value();
      s.requests[api.name] = n;
    }
  }
  add(std::move(s));
}

void topic_rates::add(sample s) {
  std::lock_guard lock(mu_);
  samples_.push_back(std::move(s));
  while (samples_.size() > max_samples) samples_.pop_front();
}

std::map<std::string, rate, std::less<>> topic_rates::topic_rates_over(
    std::chrono::seconds window) const {
  std::lock_guard lock(mu_);
  std::map<std::string, rate, std::less<>> out;
  if (samples_.size() < 2) return out;
  const sample& first = window_start(samples_, window);
  const sample& last = samples_.back();
  const double seconds = seconds_between(first, last);
  for (const auto& [name, now] : last.topics) {
    auto it = first.topics.find(name);
    out[name] = rate_between(it == first.topics.end() ? counters{} : it->second, now, seconds);
  }
  return out;
}

rate topic_rates::broker_rate_over(std::chrono::seconds window) const {
  std::lock_guard lock(mu_);
  if (samples_.size() < 2) return {};
  const sample& first = window_start(samples_, window);
  return rate_between(first.broker, samples_.back().broker,
                      seconds_between(first, samples_.back()));
}

std::map<std::string, double, std::less<>> topic_rates::request_rates_over(
    std::chrono::seconds window) const {
  std::lock_guard lock(mu_);
  std::map<std::string, double, std::less<>> out;
  if (samples_.size() < 2) return out;
  const sample& first = window_start(samples_, window);
  const sample& last = samples_.back();
  const double seconds = seconds_between(first, last);
  for (const auto& [name, now] : last.requests) {
    auto it = first.requests.find(name);
    const uint64_t before = it == first.requests.end() ? 0 : it->second;
    out[name] = now >= before && seconds > 0 ? static_cast<double>(now - before) / seconds : 0.0;
  }
  return out;
}

std::vector<rate_point> topic_rates::broker_series() const {
  std::lock_guard lock(mu_);
  std::vector<rate_point> out;
  for (size_t i = 1; i < samples_.size(); ++i) {
    // A topic deleted between two samples takes its counts with it: clamp at zero (rate_between).
    const double seconds = seconds_between(samples_[i - 1], samples_[i]);
    uint64_t before = 0, now = 0;
    for (const auto& [name, n] : samples_[i - 1].requests) before += n;
    for (const auto& [name, n] : samples_[i].requests) now += n;
    rate_point p{samples_[i].wall_ms,
                 rate_between(samples_[i - 1].broker, samples_[i].broker, seconds),
                 now >= before && seconds > 0 ? static_cast<double>(now - before) / seconds : 0,
                 {}};
    for (const auto& [name, n] : samples_[i].requests) {
      auto it = samples_[i - 1].requests.find(name);
      const uint64_t was = it == samples_[i - 1].requests.end() ? 0 : it->second;
      if (n > was && seconds > 0) {
        p.requests_per_sec_by_api[name] = static_cast<double>(n - was) / seconds;
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

rate_sampler::rate_sampler(topic_rates& rates, std::function<broker::broker_snapshot()> snapshot,
                           std::chrono::milliseconds interval) {
  thread_ = std::thread([this, &rates, snapshot = std::move(snapshot), interval] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      rates.add(snapshot());
      lock.lock();
      cv_.wait_for(lock, interval, [this] { return stopping_; });
    }
  });
}

rate_sampler::~rate_sampler() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace tarn::observe
