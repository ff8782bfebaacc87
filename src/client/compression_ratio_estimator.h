// Kafka's CompressionRatioEstimator: the producer's running estimate of how well a topic's batches
// compress (compressed records bytes / uncompressed), which the batch builder's size rule scales
// the records already in a batch by. Java keeps one process-wide map per topic and codec; tarn
// keeps one per topic in each producer (a producer has one codec).
#pragma once

#include <algorithm>
#include <atomic>

namespace tarn::client {

class compression_ratio_estimator {
 public:
  // Java's constants: an estimate improves slowly (a batch that compressed better moves it by
  // at most 0.005) and deteriorates fast (at least 0.05, and at once to what was observed).
  static constexpr float improving_step = 0.005f;
  static constexpr float deteriorate_step = 0.05f;

  float estimation() const { return ratio_.load(std::memory_order_relaxed); }

  // CompressionRatioEstimator.updateEstimation, with a batch's observed ratio. Thread: any.
  float update(float observed) {
    float current = estimation();
    float next = current;
    do {
      if (observed > current) {
        next = std::max(current + deteriorate_step, observed);
      } else if (observed < current) {
        next = std::max(current - improving_step, observed);
      } else {
        return current;
      }
    } while (!ratio_.compare_exchange_weak(current, next, std::memory_order_relaxed));
    return next;
  }

  // CompressionRatioEstimator.setEstimation (after a split, Java resets it to at least 1.0).
  void set(float ratio) { ratio_.store(ratio, std::memory_order_relaxed); }

 private:
  std::atomic<float> ratio_{1.0f};  // Java's initial estimate
};

}  // namespace tarn::client
